"""TODO rule for request."""
