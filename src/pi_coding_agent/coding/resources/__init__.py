"""coding/resources package."""
