"""Models that do not chat: classifiers (System One, OpenAI Decisions, llama.cpp) and image generators."""
