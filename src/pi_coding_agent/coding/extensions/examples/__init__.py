"""Example extensions shipped with pi; load one with ``pi -e <path of the file>`` (docs/extensions.md)."""
