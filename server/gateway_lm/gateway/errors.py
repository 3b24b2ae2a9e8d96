"""The one error taxonomy. Every failure the user can see is a GatewayError with a kind.

Classification happens here, once; the extension renders by ``kind`` and never string-matches.
"""

from __future__ import annotations

import json
import os
import re
import ssl
from typing import Any, Literal

from typing_extensions import NotRequired, TypeAliasType, TypedDict

# The one closed list, shared by the sidecar, the CLI and (generated into extension/contract.ts) the
# extension. A named alias so the generated TypeScript names it too.
ErrorKind = TypeAliasType(
    "ErrorKind",
    Literal[
        "auth",
        "forbidden",
        "not_found",
        "rate_limited",
        "context_overflow",
        "bad_request",
        "upstream",
        "network",
        "timeout",
        "protocol",
        "internal",
        "spend_limit",
        "gateway_budget",
        "routing_rule",
    ],
)
# Which check refused: the request limit, the day limit, or either when the model has no price.
SpendScope = TypeAliasType("SpendScope", Literal["request", "day", "unpriced"])
# Which of the gateway's own spend budgets refused (rfcs/0006-spend.md, "The gateway's budgets"): the
# scopes of its budgets API (`scopeType`: team, project, api-key, user), `key` for api-key.
BudgetScope = TypeAliasType("BudgetScope", Literal["key", "team", "project", "user"])


class ErrorData(TypedDict):
    """The `data` of every JSON-RPC error the sidecar answers (rfcs/0003-rpc-contract.md)."""

    kind: ErrorKind
    status: int | None
    retryAfter: float | None
    settings: NotRequired[list[str]]  # gateway/configure: the names of the invalid settings
    # spend_limit (rfcs/0006-spend.md): the estimate and the limit it passes, in USD
    estimate: NotRequired[float | None]
    limit: NotRequired[float]
    scope: NotRequired[SpendScope]
    spentToday: NotRequired[float | None]
    # gateway_budget: the budget that refused, or None when the gateway's answer did not say
    budget: NotRequired[BudgetScope | None]


class SpendData(TypedDict):
    """What a `spend_limit` error adds to its data. `estimate` is None when the model has no price,
    `spentToday` when today's spend cannot be read: the limits then ask rather than pass."""

    estimate: float | None
    limit: float
    scope: SpendScope
    spentToday: float | None


# What to do next, appended to the gateway's own words so every message names a fix.
_ADVICE: dict[ErrorKind, str] = {
    "auth": (
        "Set a valid AI Gateway API key (command: 'Vercel AI Gateway: Manage API Keys', then"
        " Update API Key on the model's group)."
    ),
    "forbidden": "Your account cannot use this model; pick another model or upgrade the plan.",
    "not_found": "The model or endpoint does not exist; refresh the model list and pick another.",
    "rate_limited": "Wait a moment and try again.",
    "context_overflow": "The conversation is too long for this model; start a new chat or summarise it.",
    "bad_request": "The gateway rejected the request; see the logs for details.",
    "upstream": "The gateway or the model provider had a problem; try again or pick another model.",
    "network": "Check the network, proxy and the base URL setting.",
    "timeout": "Try again; if the model is just slow, raise the timeout setting.",
    "protocol": "The gateway sent a stream we could not understand; try again.",
    "internal": "This is a bug in the sidecar; see the logs.",
}

# A 403 the gateway names by its type, about the account rather than the model, where the kind's
# advice would send the user the wrong way. Seen from the real gateway (public reports, 2026):
# `customer_verification_required`, "AI Gateway requires a valid credit card on file to service
# requests", on a team without a card, free credits included; `free_tier_model_not_available`.
_ADVICE_BY_TYPE: dict[str, str] = {
    "customer_verification_required": (
        "The Vercel team of this API key has no payment card on file, which the gateway requires before"
        " it serves any request, free credits included: add one on the AI Gateway page of the Vercel"
        " dashboard, then try again."
    ),
    "free_tier_model_not_available": (
        "This model is not available on free credits: pick another model, or buy AI Gateway credits on"
        " the AI Gateway page of the Vercel dashboard."
    ),
}

# Characters of the gateway's own words an error shows, and its log line holds: a message, a page's
# title or text, a budget refusal's words (`shown`). Classifying reads them whole.
MAX_DETAIL = 300
CUT = "…"  # ends words that were cut; logs.Redactor redacts a secret cut there too
_GENERATION_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,200}$")
_OVERFLOW_HINTS = (
    "context length",
    "context window",
    "too long",
    "maximum context",
    "too many tokens",
    "prompt is too long",
    "input is too long",
    "context_length_exceeded",
)


class GatewayError(Exception):
    """A failure with a kind, a human message, and the HTTP status when there was one."""

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        status: int | None = None,
        retry_after: float | None = None,
        spend: SpendData | None = None,
        budget: BudgetScope | None = None,
    ) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.message = message
        self.status = status
        self.retry_after = retry_after
        self.spend = spend
        self.budget: BudgetScope | None = budget  # gateway_budget only
        # The gateway's id of the failed generation, for the log line a user quotes to support.
        self.generation_id: str | None = None

    def for_log(self) -> str:
        """The kind, the message, and the gateway's generation id when it named one."""
        text = f"{self.kind}: {self.message}"
        return f"{text} (generation id {self.generation_id})" if self.generation_id else text

    def __str__(self) -> str:
        return self.message

    def as_data(self) -> ErrorData:
        data: ErrorData = {"kind": self.kind, "status": self.status, "retryAfter": self.retry_after}
        spend = self.spend
        if spend is not None:
            data["estimate"], data["limit"] = spend["estimate"], spend["limit"]
            data["scope"], data["spentToday"] = spend["scope"], spend["spentToday"]
        if self.kind == "gateway_budget":
            data["budget"] = self.budget
        return data


def group_without_key() -> GatewayError:
    """A request on a model of a provider group whose key the extension no longer has: the group was
    deleted (or its key could not be read). Sending it with another key would bill someone else."""
    return GatewayError(
        "auth",
        "This model belongs to a Vercel AI Gateway provider group that is gone (deleted, or its API key"
        " could not be read), so it was not sent. Choose a model of another group, or add the key again:"
        " Chat: Manage Language Models → Add Models → Vercel AI Gateway.",
    )


# The environment variables a key comes from when a request names none (the CLI; the sidecar, which
# inherits the editor's environment); the extension reads the same two (extension/keys.ts).
KEY_VARIABLES = ("AI_GATEWAY_API_KEY", "VERCEL_OIDC_TOKEN")


def key_variable(key: str) -> str | None:
    """The environment variable that holds `key`, if one does: where the user must fix it."""
    return next((name for name in KEY_VARIABLES if os.environ.get(name) == key), None)


def invalid_key(key: str, grouped: bool) -> GatewayError | None:
    """A key that cannot go out in an `Authorization` header (a line break, a NUL, a character past
    ASCII: pasted with the text around it): refused before anything is sent, naming the character by
    its code point (one character of the key, never the key), and where to fix it: the environment
    variable that holds it, else the provider group. None for a key that can go out."""
    for char in key:
        if " " <= char <= "~":
            continue
        code = ord(char)
        if char in "\r\n":
            what = "a line break"
        elif char == "\0":
            what = "a NUL character"
        elif code < 0x20 or code == 0x7F:
            what = "a control character"
        elif char.isprintable() and not 0xD800 <= code <= 0xDFFF:
            what = f"the character '{char}', which is not ASCII"
        else:
            what = "a character that is not ASCII"
        held = f"it holds {what} (U+{code:04X}), which no API key holds, so nothing was sent."
        variable = key_variable(key)
        if variable:
            return GatewayError(
                "auth",
                f"The API key in the environment variable {variable} is not valid: {held} Set the variable"
                " again without it, then restart VS Code (or run the command again).",
            )
        whose = "This model's provider group has an API key" if grouped else "The API key is one"
        return GatewayError(
            "auth",
            f"{whose} that is not valid: {held} Set the key again without it: Update API Key on the group"
            " in the Language Models editor (Chat: Manage Language Models).",
        )
    return None


def with_advice(kind: ErrorKind, detail: str, error_type: str = "") -> str:
    """`detail` and what to do next: the advice for the gateway's `error_type` where it has its own,
    for a refused thinking budget its own, else the kind's."""
    advice = _ADVICE_BY_TYPE.get(error_type.strip().lower()) or _ADVICE.get(kind, "")
    if kind == "bad_request" and about_token_budget(f"{detail} {error_type}"):
        advice = _TOKEN_BUDGET_ADVICE
    detail = detail.strip().rstrip(".")
    if not detail:
        return advice
    return f"{detail}. {advice}".strip()


# A budget of tokens, not of money: the reasoning a request may spend. Anthropic: "`max_tokens` must
# be greater than `thinking.budget_tokens`"; Gemini: "The thinking budget (52428) is invalid",
# "thinking_budget is out of range"; a `thinking_budget_too_low` code; "The thinking budget exceeds
# max_tokens". The request's effort and output limit did not fit together: a request error, never a
# spent gateway budget (budget_refusal reads the words without these).
_TOKEN_BUDGET = re.compile(r"\b(thinking|reasoning|tokens?)[\s_.-]*budget|\bbudget[\s_.-]*tokens", re.IGNORECASE)
_TOKEN_BUDGET_ADVICE = (
    "The model's thinking budget, which the reasoning effort sets, does not fit its output limit: choose"
    " another Thinking Effort in the menu beside the model in the chat input, or raise"
    " vercelAiGateway.maxOutputTokens (or the model's maxOutputTokens in vercelAiGateway.modelOptions)."
)


def about_token_budget(text: str) -> bool:
    return _TOKEN_BUDGET.search(text) is not None


def looks_like_overflow(text: str) -> bool:
    lowered = text.lower()
    return any(hint in lowered for hint in _OVERFLOW_HINTS)


# How providers refuse a tool call whose reasoning the history lost, each in its own words (the 400s
# as issue trackers quote them): Anthropic with thinking on ("Expected `thinking` or
# `redacted_thinking`, but found `tool_use`. When `thinking` is enabled, a final `assistant` message
# must start with a thinking block …"), OpenAI ("Item 'fc_…' of type 'function_call' was provided
# without its required 'reasoning' item"), Gemini 3 ("Function call is missing a thought_signature"),
# DeepSeek ("Missing `reasoning_content` field in the assistant message", "The `reasoning_content` in
# the thinking mode must be passed back to the API", the same of "`content[].thinking`"), Moonshot
# ("reasoning_content is missing in assistant tool call message"). Only these: a match sends the
# request again with calls as text and marks the model for the sidecar's life, so a refusal that
# merely names thinking ("… when a thinking block budget is set", "Invalid `signature` in `thinking`
# block") must not match.
_LOST_REASONING = re.compile(
    r"expected\W+thinking\W+or\W+redacted_thinking\W+but\W+found"
    r"|must\W+start\W+with\W+a\W+thinking\W+block"
    r"|without\W+its\W+required\W+reasoning\W+item"
    r"|missing\W+(a\W+)?thought[_ ]signature"
    r"|missing\W+reasoning_content\W+field|reasoning_content\W+is\W+missing"
    r"|in\W+the\W+thinking\W+mode\W+must\W+be\W+passed\W+back",
    re.IGNORECASE,
)


def refuses_lost_reasoning(error: GatewayError) -> bool:
    """The provider refused the request because a tool call in its history came without the
    reasoning that preceded it (rfcs/0002, "A history that lost its reasoning")."""
    return error.kind == "bad_request" and _LOST_REASONING.search(error.message) is not None


def kind_for_status(status: int, detail: str = "", code: str = "") -> ErrorKind:
    if status == 401:
        return "auth"
    if status == 403:
        return "forbidden"
    if status == 404:
        return "not_found"
    if status == 429:
        return "rate_limited"
    if status in (400, 413, 422) and (looks_like_overflow(detail) or looks_like_overflow(code)):
        return "context_overflow"
    if status == 408:
        return "timeout"
    if 400 <= status < 500 and status != 424:
        return "bad_request"
    return "upstream"


def detail_from_body(body: bytes) -> tuple[str, str]:
    """The gateway's message and code from `{error:{message,type,code}}`, or the text of anything
    else (an HTML 502 page: its title, or its text without tags), each whole: `shown` bounds what
    the user sees of it."""
    text = body.decode("utf-8", errors="replace").strip()
    try:
        payload = json.loads(text)
    except (ValueError, RecursionError):
        return _text_of_page(text), ""
    if isinstance(payload, dict):
        err = payload.get("error", payload)
        if isinstance(err, dict):
            message = str(err.get("message") or err.get("type") or "").strip()
            code = str(err.get("code") or err.get("type") or "")
            return message, code
        if isinstance(err, str):
            return err, ""
    return text, ""


def _text_of_page(text: str) -> str:
    if "<" in text and ">" in text:
        title = re.search(r"<title>(.*?)</title>", text, re.IGNORECASE | re.DOTALL)
        return title.group(1) if title else re.sub(r"<[^>]+>", " ", text)
    return text


def shown(words: str) -> str:
    """The gateway's words as an error shows them: one line, at most MAX_DETAIL characters (a cut
    ends with "…"). A 60,000-character message must not become the chat's error and a log line."""
    line = " ".join(words.split())
    return line if len(line) <= MAX_DETAIL else line[: MAX_DETAIL - 1] + CUT


def generation_id_of(payload: Any) -> str | None:
    """The `generationId` a gateway error body names (top level, as the AI SDK reads it, or inside
    `error`): an id of at most 200 safe characters, or None (it goes into a log line)."""
    if not isinstance(payload, dict):
        return None
    inner = payload.get("error")
    for value in (payload.get("generationId"), inner.get("generationId") if isinstance(inner, dict) else None):
        if isinstance(value, str) and _GENERATION_ID.match(value):
            return value
    return None


# A refusal for one of the gateway's spend budgets (rfcs/0006-spend.md, "The gateway's budgets"). No
# public source shows the gateway's exact answer, so it is known by what any budget refusal says: a
# type or code that names a budget ("budget_exceeded", "api_key_budget_exceeded", "spend_limit"), or,
# on a status other gateways refuse a budget with (402, 403, 429), a message saying a budget was
# exceeded or reached. A provider's answer about a *token* budget (`_TOKEN_BUDGET`: "thinking.budget_tokens",
# "thinking_budget_too_low", "The thinking budget exceeds max_tokens") is read without those words,
# so it matches neither.
_BUDGET_CODE = re.compile(r"budget|spend[ _-]?(limit|cap|quota)", re.IGNORECASE)
_BUDGET_WORDS = re.compile(
    r"\bbudget\b[^.]{0,80}?\b(exceed|reached|exhausted|spent|used up|over)"
    r"|\b(exceed\w*|reached|over|exhausted)\b[^.]{0,40}?\bbudget\b",
    re.IGNORECASE,
)
_BUDGET_STATUSES = frozenset({402, 403, 429})
# The scope is the word right before "budget" ("API key budget", "team_budget_exceeded", "the
# project's spend budget"), or the `scopeType`/`scope` the error's `param` names (the values of the
# gateway's budgets API: team, project, api-key, user).
_SCOPE_BEFORE_BUDGET = re.compile(
    r"\b(api[ _-]?key|key|team|project|user|member)(?:'s)?[\s_-]+(?:spend(?:ing)?[\s_-]+)?budget",
    re.IGNORECASE,
)
_SCOPES: dict[str, BudgetScope] = {
    "api key": "key",
    "api_key": "key",
    "api-key": "key",
    "apikey": "key",
    "key": "key",
    "team": "team",
    "project": "project",
    "user": "user",
    "member": "user",
}
_URL = re.compile(r"(https?://|www\.)\S*", re.IGNORECASE)
# Where each budget is changed, as plain words: a link in a chat error would be the gateway's to
# choose, and the dashboard's paths name the team (vercel.com/docs/ai-gateway, "Budgets", "API Keys").
_BUDGET_WHAT: dict[BudgetScope | None, str] = {
    "key": "this API key's spend budget",
    "team": "your Vercel team's AI Gateway spend budget",
    "project": "the project's AI Gateway spend budget",
    "user": "your own AI Gateway spend budget (the per-member budget of your team)",
    None: "one of its spend budgets (of the API key, the team, a project or a member)",
}
_BUDGET_WHERE: dict[BudgetScope | None, str] = {
    "key": "Vercel dashboard → AI Gateway → API Keys → the key's … menu → Edit Key",
    "team": "Vercel dashboard → AI Gateway → Budgets",
    "project": "Vercel dashboard → AI Gateway → Budgets",
    "user": "Vercel dashboard → AI Gateway → Budgets",
    None: "Vercel dashboard → AI Gateway → Budgets (a key's own budget: API Keys → Edit Key)",
}


def budget_refusal(status: int | None, detail: str, code: str, param: Any = None) -> tuple[bool, BudgetScope | None]:
    """Whether an error answer is a refusal for one of the gateway's spend budgets, and which budget
    (None when the answer does not say). `status` is None for an error inside a stream."""
    detail, code = _TOKEN_BUDGET.sub(" ", detail), _TOKEN_BUDGET.sub(" ", code)
    by_code = bool(code) and _BUDGET_CODE.search(code) is not None
    by_words = (status is None or status in _BUDGET_STATUSES) and _BUDGET_WORDS.search(detail) is not None
    if not (by_code or by_words) or (status is not None and not 400 <= status < 500):
        return False, None
    return True, _budget_scope(detail, code, param)


def _budget_scope(detail: str, code: str, param: Any) -> BudgetScope | None:
    if isinstance(param, dict):
        for field in ("scopeType", "scope", "budgetScope"):
            value = param.get(field)
            if isinstance(value, str) and value.strip().lower() in _SCOPES:
                return _SCOPES[value.strip().lower()]
    for text in (code, detail):
        found = _SCOPE_BEFORE_BUDGET.search(text)
        if found:
            return _SCOPES[re.sub(r"[ _-]", " ", found.group(1).lower()).replace("apikey", "api key")]
    return None


def budget_error(scope: BudgetScope | None, detail: str, status: int | None) -> GatewayError:
    """The words of a budget refusal: which budget, that waiting or retrying will not help, where it
    is changed, and that it is not this extension's own limit. The gateway's own words follow, without
    links and bounded (they are untrusted text)."""
    said = shown(_URL.sub("(link removed)", detail))
    message = (
        f"The Vercel AI Gateway refused this request: {_BUDGET_WHAT[scope]} is used up. It stays refused"
        " until the budget resets (at the start of its period, UTC) or is raised: "
        f"{_BUDGET_WHERE[scope]}. This is the gateway's budget, not this extension's own limits"
        " (vercelAiGateway.spend.maxRequestCost and maxDailyCost)."
    )
    if said:
        message += f" The gateway said: {said.rstrip('.')}."
    return GatewayError("gateway_budget", message, status=status, budget=scope)


# A team routing rule's deny (rfcs/0003-rpc-contract.md, "A team's routing rules"). The gateway's routing-rules page
# documents a 403 with `{"error": "Request denied by a routing rule.", "type": "forbidden",
# "statusCode": 403}`; @ai-sdk/gateway reads the usual envelope, `{"error": {"type": "forbidden",
# "message": …, "param": {"ruleId": …}}}` (vercel/ai #16105, #16242), where the message may be the
# rule's own reason. A 403 is one when its `param` names a rule, or when it is `forbidden` and its
# words say "routing rule"; any other 403 (free tier, a model allowlist) stays `forbidden`.
_ROUTING_RULE_WORDS = re.compile(r"\brouting[\s_-]+rule", re.IGNORECASE)
_RULE_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,100}$")


def routing_rule_refusal(status: int, payload: Any) -> tuple[bool, str | None]:
    """Whether an error answer is a team routing rule's deny, and the rule's id when it names a
    well-formed one (it goes into the message and a log line)."""
    if status != 403 or not isinstance(payload, dict):
        return False, None
    inner = payload.get("error")
    fields: dict[str, Any] = inner if isinstance(inner, dict) else {**payload, "message": inner}
    param = fields.get("param")
    rule = param.get("ruleId") if isinstance(param, dict) else None
    rule_id = rule if isinstance(rule, str) and _RULE_ID.match(rule) else None
    words = f"{fields.get('message') or ''} {fields.get('code') or ''}"
    forbidden = str(fields.get("type") or "").strip().lower() == "forbidden"
    return rule_id is not None or (forbidden and _ROUTING_RULE_WORDS.search(words) is not None), rule_id


def routing_rule_error(rule_id: str | None, detail: str, status: int | None) -> GatewayError:
    """The words of a routing rule's deny: what refused, who can change it and where (as plain
    words: a link would be the gateway's to choose), and what the user can do now. The gateway's own
    words follow, without links and bounded (a rule's reason is its author's text)."""
    rule = f" (rule {rule_id})" if rule_id else ""
    message = (
        f"A routing rule of your Vercel team refused this model{rule}: the AI Gateway denies every"
        " request for it made with the team's credentials, so trying again will not help. Pick another"
        " model. The team's Owners and Members can change or remove the rule (Developers can only view"
        " it): Vercel dashboard → AI Gateway → Routing Rules, or `vercel ai-gateway rules list`."
    )
    said = shown(_URL.sub("(link removed)", detail))
    if said:
        message += f" The gateway said: {said.rstrip('.')}."
    return GatewayError("routing_rule", message, status=status)


def error_from_response(status: int, body: bytes, retry_after: float | None = None) -> GatewayError:
    detail, code = detail_from_body(body)
    try:
        payload: Any = json.loads(body)
    except (ValueError, RecursionError):
        payload = None  # not JSON: detail_from_body summarised it
    inner = payload.get("error") if isinstance(payload, dict) else None
    inner = inner if isinstance(inner, dict) else {}
    codes = " ".join(str(inner.get(field) or "") for field in ("type", "code")).strip()
    refused, scope = budget_refusal(status, detail, codes, inner.get("param"))
    denied, rule_id = routing_rule_refusal(status, payload)
    if denied:  # a rule's reason may speak of budgets: the rule is what refused
        error = routing_rule_error(rule_id, detail, status)
    elif refused:
        error = budget_error(scope, detail, status)
    else:
        kind = kind_for_status(status, detail, code)
        prefix = f"AI Gateway answered {status}"
        message = with_advice(kind, f"{prefix}: {shown(detail)}" if detail.strip() else prefix, code)
        error = GatewayError(kind, message, status=status, retry_after=retry_after)
    error.generation_id = generation_id_of(payload)
    return error


def error_from_stream(payload: dict[str, Any] | None, fallback: str) -> GatewayError:
    """An in-stream `error` event or a `response.failed` error object (nested or flat)."""
    err: Any = payload or {}
    generation_id = generation_id_of(err)
    if isinstance(err.get("error"), dict):
        err = err["error"]
    message = str(err.get("message") or fallback)
    code = str(err.get("code") or err.get("type") or "")
    codes = " ".join(str(err.get(field) or "") for field in ("type", "code")).strip()
    refused, scope = budget_refusal(None, message, codes, err.get("param"))
    if refused:
        error = budget_error(scope, message, None)
        error.generation_id = generation_id
        return error
    kind = _kind_for_stream_code(code, message)
    error = GatewayError(kind, with_advice(kind, f"The model stopped with an error: {shown(message)}", code))
    error.generation_id = generation_id
    return error


def _kind_for_stream_code(code: str, message: str) -> ErrorKind:
    lowered = code.lower()
    if "rate_limit" in lowered or "quota" in lowered:
        return "rate_limited"
    if looks_like_overflow(lowered) or looks_like_overflow(message):
        return "context_overflow"
    if "auth" in lowered:
        return "auth"
    if "invalid" in lowered or about_token_budget(f"{code} {message}"):
        return "bad_request"
    return "upstream"


class CertificateError(GatewayError):
    """The gateway's (or a proxy's) certificate is not trusted: a setting fixes it, waiting does not,
    so it is never retried."""


def is_certificate_error(exc: BaseException) -> bool:
    """Whether a connection failed because a certificate was not trusted, anywhere in its causes
    (httpx and aiohttp each wrap the ssl module's error)."""
    seen: BaseException | None = exc
    for _ in range(10):  # a chain is short; a cycle must not hang us
        if seen is None:
            return False
        if isinstance(seen, ssl.SSLCertVerificationError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def certificate_error(base_url: str, proxied: bool) -> CertificateError:
    """Names the settings that fix it: a CA bundle, or (only through a proxy that re-signs TLS)
    turning strict SSL off."""
    fix = "add its CA certificate (a PEM file) in the setting vercelAiGateway.caBundle"
    if proxied:
        fix += ", or, if your proxy re-signs TLS and you trust it, turn off http.proxyStrictSSL"
    return CertificateError(
        "network",
        f"The certificate of {base_url} is not trusted (signed by an unknown certificate authority, as"
        f" a company proxy or a private gateway's is). To trust it, {fix}.",
    )
