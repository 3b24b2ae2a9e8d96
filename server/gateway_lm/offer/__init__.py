"""TODO rule for offer."""
