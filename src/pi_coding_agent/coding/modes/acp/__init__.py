"""Agent Client Protocol (ACP v1) support behind ``pi --mode acp``: JSON-RPC peer, translation, client tools."""
