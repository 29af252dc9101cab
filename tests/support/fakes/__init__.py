"""Test doubles: the scripted fake LLM server and its per-provider wire renderers."""
