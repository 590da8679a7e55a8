"""hermes pi: a drop-in for pi's RPC mode (``pi --mode rpc``), JSONL on stdio (docs/protocols/pi.md)."""
