"""How provider requests travel: the pooled HTTP client, server-sent events, transport errors."""
