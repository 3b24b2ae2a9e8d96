"""OpenResponses SSE events → parts, with the exactly-once guarantees the editor relies on.

See rfcs/0002-stream-state-machine.md. In short:
- items are correlated by `output_index` first (some servers rotate `item_id` on every event);
- text and thinking are emitted as their deltas arrive; `.done` events and `output_item.done` only
  add what the deltas missed, so nothing is shown twice;
- a function call is emitted once per `call_id`, when its item is done (or, failing that, at the
  terminal event from whatever arguments arrived), with arguments parsed;
- a stream that ends without `response.completed|incomplete|failed` is an error;
- the encrypted reasoning leaves for the next tool turn as a `reasoningItem` part per item, when the
  item is done, and as one `reasoningState` part at the response's end (reasoning.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..gateway.errors import GatewayError, error_from_stream, with_advice
from ..messages import MAX_MODEL_ID, FinishReason, PartOut, UsagePart
from ..reasoning import ReasoningLog
from ..toolnames import ToolNameMap
from .items import Event, Key, OutputItems
from .shown import Shown
from .usage import generation_id_from, served_tier, usage_from

_REASONING_DELTAS = (
    "response.reasoning.delta",
    "response.reasoning_text.delta",
    "response.reasoning_summary_text.delta",
)
_REASONING_DONES = (
    "response.reasoning.done",
    "response.reasoning_text.done",
    "response.reasoning_summary_text.done",
)


class StreamAdapter:
    def __init__(
        self, names: ToolNameMap | None = None, model: str = "", rewritten: Callable[[str], bool] | None = None
    ) -> None:
        self._items = OutputItems(names or ToolNameMap([]))
        self._model = model  # the model that reasons, named in the reasoning state
        # Whether the model a response names is one a routing rule put in place of `model` (pipeline.py)
        self._rewritten = rewritten or (lambda reported: False)
        self._reported: str | None = None  # the `model` the response object names, as last seen
        self._reasoning = ReasoningLog()
        self._shown = Shown()
        self._error: GatewayError | None = None
        self._refused = False
        self._sequence_numbers: set[int] = set()
        self.response_id: str | None = None
        self.usage: UsagePart | None = None
        self.generation_id: str | None = None
        self.finish_reason: FinishReason | None = None
        self.done = False
        self._handlers: dict[str, Callable[[Event], list[PartOut]]] = {
            "response.output_text.delta": self._on_text_delta,
            "response.output_text.done": self._on_text_done,
            "response.refusal.delta": self._on_refusal_delta,
            "response.refusal.done": self._on_refusal_done,
            "response.function_call_arguments.delta": self._on_arguments_delta,
            "response.function_call_arguments.done": self._on_arguments_done,
            "response.output_item.added": self._on_item_added,
            "response.output_item.done": self._on_item_done,
            "response.created": self._on_response_started,
            "response.in_progress": self._on_response_started,
            "response.queued": self._on_response_started,
            "response.completed": self._on_terminal,
            "response.incomplete": self._on_terminal,
            "response.failed": self._on_failed,
            "error": self._on_error,
        }
        for name in _REASONING_DELTAS:
            self._handlers[name] = self._on_reasoning_delta
        for name in _REASONING_DONES:
            self._handlers[name] = self._on_reasoning_done

    # ---- public ----

    def feed(self, event: Any) -> list[PartOut]:
        """Parts for one parsed event. Raises GatewayError when the stream reports a failure."""
        if self.done or not isinstance(event, dict):
            return []
        sequence = event.get("sequence_number")
        if isinstance(sequence, int):
            if sequence in self._sequence_numbers:
                return []  # a resent event: showing its delta again would double the text
            self._sequence_numbers.add(sequence)
        handler = self._handlers.get(event.get("type"))  # type: ignore[arg-type]
        if handler is None:
            return []
        return handler(event)

    def feed_until_done(self, events: Iterable[Any], out: list[PartOut]) -> None:
        """Feeds events in order until the response is done (later ones would change nothing),
        adding their parts to `out` as they come: what came before a GatewayError stays there."""
        for event in events:
            out.extend(self.feed(event))
            if self.done:
                return

    def end(self) -> list[PartOut]:
        """The stream closed. Without a terminal event that is an error, after what was shown."""
        if self.done:
            return []
        if self._error is not None:
            raise self._error
        raise GatewayError(
            "protocol",
            with_advice("protocol", "The stream ended before the model finished (no terminal event)"),
        )

    # ---- text ----

    def _on_text_delta(self, event: Event) -> list[PartOut]:
        delta = event.get("delta")
        if not isinstance(delta, str):
            return []
        return self._shown.text((self._items.key(event), "t", event.get("content_index", 0)), delta)

    def _on_text_done(self, event: Event) -> list[PartOut]:
        slot = (self._items.key(event), "t", event.get("content_index", 0))
        return self._shown.text(slot, self._shown.missing(slot, event.get("text")))

    def _on_refusal_delta(self, event: Event) -> list[PartOut]:
        self._refused = True
        delta = event.get("delta")
        if not isinstance(delta, str):
            return []
        return self._shown.text((self._items.key(event), "t", event.get("content_index", 0)), delta)

    def _on_refusal_done(self, event: Event) -> list[PartOut]:
        self._refused = True
        slot = (self._items.key(event), "t", event.get("content_index", 0))
        return self._shown.text(slot, self._shown.missing(slot, event.get("refusal")))

    def _message_leftovers(self, key: Key, raw: dict[str, Any]) -> list[PartOut]:
        parts: list[PartOut] = []
        content = raw.get("content")
        for index, piece in enumerate(content if isinstance(content, list) else []):
            if not isinstance(piece, dict):
                continue
            full = piece.get("text") if piece.get("type") != "refusal" else piece.get("refusal")
            if piece.get("type") == "refusal":
                self._refused = True
            slot = (key, "t", index)
            parts.extend(self._shown.text(slot, self._shown.missing(slot, full)))
        return parts

    # ---- thinking ----

    def _reasoning_slot(self, event: Event) -> tuple[Any, ...]:
        key = self._items.key(event)
        if "summary_index" in event:
            return (key, "s", event.get("summary_index"))
        return (key, "r", event.get("content_index", 0))

    def _on_reasoning_delta(self, event: Event) -> list[PartOut]:
        delta = event.get("delta")
        if not isinstance(delta, str):
            return []
        slot = self._reasoning_slot(event)
        if slot[1] == "s" and not self._shown.has(slot) and self._shown.has_thinking(slot[0]):
            delta = "\n\n" + delta  # a new summary paragraph
        return self._shown.thinking(slot, delta, self._items.item_id(event))

    def _on_reasoning_done(self, event: Event) -> list[PartOut]:
        slot = self._reasoning_slot(event)
        return self._shown.thinking(slot, self._shown.missing(slot, event.get("text")), self._items.item_id(event))

    def _reasoning_leftovers(self, key: Key, raw: dict[str, Any]) -> list[PartOut]:
        if self._shown.has_thinking(key):
            return []
        texts: list[str] = []
        for field in ("summary", "content"):
            pieces = raw.get(field)
            for piece in pieces if isinstance(pieces, list) else []:
                if isinstance(piece, dict) and isinstance(piece.get("text"), str) and piece["text"]:
                    texts.append(piece["text"])
        item_id = raw.get("id") if isinstance(raw.get("id"), str) else None
        return self._shown.thinking((key, "r", "done"), "\n\n".join(texts), item_id)

    # ---- function calls ----

    def _on_arguments_delta(self, event: Event) -> list[PartOut]:
        self._items.arguments_delta(event)
        return []

    def _on_arguments_done(self, event: Event) -> list[PartOut]:
        self._items.arguments_done(event)
        return []

    # ---- items ----

    def _on_item_added(self, event: Event) -> list[PartOut]:
        self._items.track(event)
        self._reasoning.see(self._items.key(event), event.get("item"))
        return []

    def _on_item_done(self, event: Event) -> list[PartOut]:
        item = self._items.track(event)
        raw = event.get("item")
        if item is None or not isinstance(raw, dict):
            return []
        key = self._items.key(event)
        self._reasoning.see(key, raw)
        if item.type == "function_call":
            return self._items.emit_call(item)
        if item.type == "message":
            return self._message_leftovers(key, raw)
        if item.type == "reasoning":
            parts = self._reasoning_leftovers(key, raw)
            handed = self._reasoning.item_part(key, self._model)
            return [*parts, handed] if handed is not None else parts
        return []

    # ---- lifecycle ----

    def _on_response_started(self, event: Event) -> list[PartOut]:
        self._remember_response(event.get("response"))
        return []

    def _remember_response(self, response: Any) -> None:
        if isinstance(response, dict) and isinstance(response.get("id"), str):
            self.response_id = response["id"]
        reported = response.get("model") if isinstance(response, dict) else None
        if isinstance(reported, str) and 0 < len(reported) <= MAX_MODEL_ID:
            self._reported = reported

    def _on_error(self, event: Event) -> list[PartOut]:
        self._error = error_from_stream(event, "the gateway reported an error")
        return []

    def _on_failed(self, event: Event) -> list[PartOut]:
        self.done = True
        response = event.get("response")
        self._remember_response(response)
        if self._error is None:
            error = response.get("error") if isinstance(response, dict) else None
            self._error = error_from_stream(error if isinstance(error, dict) else None, "the response failed")
        raise self._error

    def _on_terminal(self, event: Event) -> list[PartOut]:
        response = event.get("response")
        response = response if isinstance(response, dict) else {}
        self._remember_response(response)
        parts = self._items.flush_calls(response)
        self._reasoning.see_output(response.get("output"))
        parts.extend(self._reasoning.late_parts(self._model))
        state = self._reasoning.part(self._model)
        if state is not None:
            parts.append(state)
        self.done = True
        self.finish_reason = self._finish_reason(response)
        self.usage = usage_from(response.get("usage"), served_tier(response))
        if self.usage is not None and self._reported is not None and self._rewritten(self._reported):
            self.usage["servedModel"] = self._reported
        self.generation_id = generation_id_from(response)
        if self.usage is not None:
            parts.append(self.usage)
        parts.append({"type": "finish", "reason": self.finish_reason, "responseId": self.response_id})
        return parts

    def _finish_reason(self, response: dict[str, Any]) -> FinishReason:
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        if reason == "max_output_tokens":
            return "length"
        if reason == "content_filter":
            return "contentFilter"
        if self._items.emitted_calls:
            return "toolCalls"
        if self._refused:
            return "refusal"
        return "stop"


def adapt_stream(
    events: Iterable[Any], out: list[PartOut], names: ToolNameMap | None = None, model: str = ""
) -> StreamAdapter:
    """A whole recorded stream: its events until the response is done, then its end (a GatewayError
    when it never finished); the parts go to `out`, which keeps those shown before a failure."""
    adapter = StreamAdapter(names, model)
    adapter.feed_until_done(events, out)
    out.extend(adapter.end())
    return adapter
