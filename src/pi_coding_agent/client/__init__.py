"""A Python client for ``pi --mode rpc`` (ours or the reference); imports nothing else from the package."""

from pi_coding_agent.client.rpc_client import RpcClient, RpcError

__all__ = ["RpcClient", "RpcError"]
