"""Vercel AI Gateway for Copilot Chat: the Python sidecar (`gateway-lm serve`) and its CLI."""

__version__ = "0.1.0"
