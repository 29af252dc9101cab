"""Vendors whose model lists are live rather than built in: Radius gateways and llama.cpp routers.

The wire API a vendor speaks lives in ``ai.apis``; its keys in ``ai.auth``.
"""
