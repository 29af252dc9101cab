"""coding/compaction package."""
