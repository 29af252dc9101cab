"""Vendors that add more than a catalog entry: a live model list, a key of their own, a sign-in.

Each is a ``Vendor`` (``vendor.py``) in ``<vendor>.py``, named in ``vendor.BUILTIN``; keys, the
model registry and the front ends find it with ``vendor``/``vendor_for``. The wire API a vendor
speaks lives in ``ai.apis``.
"""

from pi_coding_agent.ai.providers.vendor import Host, Vendor, start_refresh, vendor, vendor_for

__all__ = ["Host", "Vendor", "start_refresh", "vendor", "vendor_for"]
