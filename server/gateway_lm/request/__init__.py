"""Building a request (rfcs/0002-stream-state-machine.md, "A history that lost its reasoning";
rfcs/0004-token-accounting.md, "Fitting a request into the real limit"; rfcs/0007-network-and-options.md):
the conversation translated into OpenResponses items (translate), every per-model field decided in
one pass over it (body), what it carries for the provider's prompt cache (cache,
rfcs/0011-prompt-cache.md), the options a setting or a caller may give (options), and the body fitted
into the model's real limit (fit). It reads what the model offers and counts tokens, and it never
sends anything: the body it makes is the client's input.
It imports, besides the core's leaves: `offer`, `tokens.tokenizer`, `gateway.errors`, `gateway.headers`."""
