"""The HTTP transport below every wire adapter (aiohttp, imported with the first request or the warm-up)."""
