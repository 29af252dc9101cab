"""``pi --mode rpc``: the JSONL transport, the command table, the mode loop and extension UI over RPC."""
