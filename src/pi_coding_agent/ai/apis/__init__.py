"""Wire APIs: one module per API a model speaks (``model["api"]``), loaded on first use by ``ai.stream``.

Each ``<api>.py`` exports ``stream(model, context, options)``; the other modules here are the pieces
those adapters share (tool declarations, usage arithmetic, partial JSON, strict schemas, sampling).
"""
