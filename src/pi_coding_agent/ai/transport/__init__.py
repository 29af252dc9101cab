"""How provider requests travel: aiohttp (``aio``, imported with the first request or the warm-up), the
request helpers every wire adapter shares (``http``), server-sent events (``sse``)."""
