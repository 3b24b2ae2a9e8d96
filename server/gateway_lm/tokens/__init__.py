"""TODO rule for tokens."""
