"""Spend (rfcs/0006-spend.md): prices, the usage history, the credits and generation lookups, and
the ledger that guards and records each chat. Nothing here imports the RPC layer (`gateway_lm.rpc`),
whose methods call into it; tests/test_layers.py holds that rule."""
