"""coding/session package."""
