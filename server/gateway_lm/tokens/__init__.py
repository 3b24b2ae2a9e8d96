"""Tokens (rfcs/0004-token-accounting.md): counting with tiktoken's encodings (tokenizer, the counts
the extension asks for), and what the sidecar learns per model from the gateway's answers, its
calibration factor and real input limit, kept in `accounting.json` (accounting, statefile). It counts
and learns; it never builds, sends or prices a request.
It imports, besides the core's leaves: `offer.catalogue`."""
