"""coding/modes package."""
