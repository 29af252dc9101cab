"""coding/export package."""
