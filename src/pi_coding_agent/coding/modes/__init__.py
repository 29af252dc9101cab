"""Front ends: print (``-p``), JSON, RPC (``rpc/``) and ACP (``acp/``), with what they share at start and exit."""
