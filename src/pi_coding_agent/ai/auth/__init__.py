"""Credentials: API keys (``auth.json``, models.json, environment), OAuth sign-in and refresh, cloud
credentials (AWS, Google), Anthropic workload identity federation, and a credential's ``env`` map."""
