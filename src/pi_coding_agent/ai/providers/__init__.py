"""ai/providers package."""
