"""TODO rule for gateway."""
