"""The gateway's events adapted into parts, exactly once (rfcs/0002-stream-state-machine.md): the
state machine (adapt), its output items and tool-call arguments, what has been shown, and the usage
part. Events in, parts out: it knows neither the request nor the model's offer.
It imports, besides the core's leaves: `gateway.errors`."""
