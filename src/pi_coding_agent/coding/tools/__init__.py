"""coding/tools package."""
