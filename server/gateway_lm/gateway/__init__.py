"""Talking to the gateway (rfcs/0001-architecture.md, "Limits"; rfcs/0007-network-and-options.md):
the HTTP client and its transport, the proxy and TLS route, headers, the response decoded and bounded,
its SSE framing, the deadlines, recorded streams, and every error classified once, here. It takes a
finished body and gives back events and errors; what a model offers, how the body was built and what
the events mean are not its business.
It imports, besides the core's leaves: nothing."""
