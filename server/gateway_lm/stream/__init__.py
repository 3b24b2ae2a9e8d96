"""TODO rule for stream."""
