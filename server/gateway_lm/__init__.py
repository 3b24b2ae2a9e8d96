"""Vercel AI Gateway for VS Code's language-model API: the Python sidecar and its CLI."""

__version__ = "0.1.0"
