"""The model catalog: built-in data (``data/``), ``models.json``, the models store, and resolving a
``--model`` text to catalog models."""
