"""What a model offers (rfcs/0003-rpc-contract.md, "`gateway/models`"; rfcs/0006-spend.md, "Context
tiers"; rfcs/0007-network-and-options.md): its catalogue entry read from the gateway's untrusted list,
its prices, tiers and fast tier, the effort levels it accepts, the window Copilot is told, how fast
and how reliable the gateway measured it, and the menus and picker entry made of them. It reads the
lists as data and knows nothing of a request, of sending one or of what one cost. Inside, effort and
contextsize stand alone, catalogue builds on effort, speed and metrics on catalogue, picker on them
all.
It imports, besides the core's leaves: `tokens.tokenizer`."""
