"""coding/extensions package."""
