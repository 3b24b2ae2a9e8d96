"""The fake gateway's agent model: it reads workspace files one per turn until Copilot compacts.

`fake/agent-loop` stands for a model whose tokenizer yields 1.35× o200k and whose input limit is
enforced, as a real provider enforces it: a request over the limit fails with the provider's overflow
error. Copilot's summarisation requests are recognised by what Copilot puts in them (rfcs/0004) and
answered with a summary; each request's real size, form and tool offer are recorded for the e2e test.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway_lm.request.fit import CLEARED
from gateway_lm.request.translate import TRANSCRIBED
from gateway_lm.tokens.tokenizer import count_request

if TYPE_CHECKING:
    from fake_gateway import Handler

FACTOR = 1.35  # the model's tokens per o200k token
CONTEXT_WINDOW = 48_000
MAX_OUTPUT = 4_000
INPUT_LIMIT = CONTEXT_WINDOW - MAX_OUTPUT  # what the provider accepts as input
FILES = 14  # part-01.txt … part-14.txt, written by the e2e test (~1,900 o200k tokens each)

MODEL = {
    "id": "fake/agent-loop",
    "name": "Fake Agent 1.35x",
    "type": "language",
    "owned_by": "fake",
    "context_window": CONTEXT_WINDOW,
    "max_tokens": MAX_OUTPUT,
    "tags": ["tool-use"],
    "pricing": {"input": "0.000001", "output": "0.000004"},
}

SYSTEM_MARKER = "create a comprehensive, detailed summary"
BACKGROUND_MARKER = "the conversation has grown too large for the context window and must be compacted now"
FOREGROUND_MARKER = "summarize the conversation history"
_FILES_MARKER = re.compile(r"\[(files|batch):([^\]]+)\]")
# Per series: files read per response, and in all. "files" grows the prompt one file a turn, so
# Copilot's background compaction comes first; "batch" reads three at once, so one turn jumps past
# Copilot's budget before the background threshold is reached and Copilot summarises in the
# foreground (its simple form).
SERIES = {"files": (1, FILES), "batch": (3, 6)}


def summarisation_form(body: dict[str, Any]) -> str | None:
    """Which of Copilot's summarisation requests this is, by the text Copilot itself puts there."""
    users = [_text(i) for i in body.get("input") or [] if isinstance(i, dict) and i.get("role") == "user"]
    last_user = users[-1].strip().lower() if users else ""
    if last_user.startswith(BACKGROUND_MARKER):
        return "background"
    if SYSTEM_MARKER in str(body.get("instructions") or "").lower() or last_user.startswith(FOREGROUND_MARKER):
        return "full"  # or "simple": told apart by Copilot's tools, which summarisation turns no longer carry
    return None


def _admit(
    h: Handler, body: dict[str, Any], entry: dict[str, Any], real: int, limit: int, cleared: int
) -> dict[str, int] | None:
    """Records what a test reads of the request (its real size, its summarisation form, its cleared
    results); past `limit`, refuses it as the gateway does and returns None, else starts the stream
    and returns the usage to report."""
    from fake_gateway import refuse_overflow

    entry.update(real_input_tokens=real, input_limit=limit, summarisation=summarisation_form(body), cleared=cleared)
    entry["tools_callable"] = bool(body.get("tools")) and body.get("tool_choice") != "none"
    if real > limit:
        entry["overflow"] = True
        refuse_overflow(h, real, limit)
        return None
    h._start_stream()
    return {"input_tokens": real, "output_tokens": 40, "total_tokens": real + 40}


def serve_agent_loop(h: Handler, body: dict[str, Any], entry: dict[str, Any], created: dict[str, Any]) -> None:
    from fake_gateway import call_events, fill_arguments, response_obj, text_events

    def completed(usage: dict[str, int]) -> dict[str, Any]:
        return {"type": "response.completed", "response": response_obj("completed", usage=usage)}

    real = round(count_request(body, "fake/agent-loop") * FACTOR)
    cleared = sum(1 for i in body.get("input") or [] if isinstance(i, dict) and i.get("output") == CLEARED)
    usage = _admit(h, body, entry, real, INPUT_LIMIT, cleared)
    if usage is None:
        return
    if entry["summarisation"] is not None:
        summary = "<summary>The user asked to read the numbered files; some were read. Go on with the next.</summary>"
        h._send(entry, [created, *text_events([summary]), completed(usage)])
        return
    state = h.server.gateway
    series, folder = _files_folder(body)
    if folder is not None:
        state.agent_series = series, folder
    series, folder = getattr(state, "agent_series", (series, folder))  # the marker may be summarised away
    per_response, total = SERIES[series]
    done = state.bump(f"agent-{series}-reads", per_response) - per_response  # files asked for before this
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    tool = next((t for t in tools if "read" in str(t.get("name")) and "file" in str(t.get("name"))), None)
    if done >= total or tool is None or folder is None:
        h._send(entry, [created, *text_events([f"I have read all {total} files."]), completed(usage)])
        return
    calls = []
    for index, n in enumerate(range(done + 1, min(done + per_response, total) + 1)):
        path = str(Path(folder) / f"part-{n:02d}.txt")
        arguments = json.dumps({**fill_arguments(tool.get("parameters") or {}, path), "startLine": 1, "endLine": 400})
        calls += call_events(f"call_{series}_{n}", str(tool["name"]), arguments, index=index)
    h._send(entry, [created, *calls, completed(usage)])


def _files_folder(body: dict[str, Any]) -> tuple[str, str | None]:
    """Which series of reads the user asked for, and the folder, from the marker in their latest message
    that has one."""
    for item in reversed(body.get("input") or []):
        if isinstance(item, dict) and item.get("role") == "user":
            match = _FILES_MARKER.search(_text(item))
            if match:
                return match.group(1), match.group(2)
    return "files", None


def _text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "".join(str(p.get("text", "")) for p in content or [] if isinstance(p, dict))


# Issue 36 §1 and issue 43 §1: a model the catalogue lists with a large window whose provider
# enforces a far lower input limit, naming it in its 400. Its agent reads the workspace's part-01.txt …
# part-08.txt one per step, the next file it has not called read on, then answers from what it read,
# as a model does that read the files to answer a question about them: before it answers, it reads
# again each file whose content the request no longer shows (its result cleared to fit) and no summary
# lists. A summary (Copilot's compaction, answered here) lists every file whose read the request
# shows, cleared or not: it records what was done. So a turn whose results are cleared request after
# request reads the same files again and again (the 56 requests), and one that Copilot
# compacts reads each file once.
# Listed only when FAKE_GATEWAY_OVERFLOW_AGENT is set (tests/e2e/ui.mjs, tests/ts/overflow.test.ts).
OVERFLOW_LIMIT = 28_600  # the provider's real input limit, in o200k tokens
OVERFLOW_FILES = 8
OVERFLOW_MODEL = {
    "id": "fake/overflow-agent",
    "name": "Fake Overflow Agent",
    "type": "language",
    "owned_by": "fake",
    "context_window": 128_000,
    "max_tokens": 8_000,
    "tags": ["tool-use"],
    "pricing": {"input": "0.000003", "output": "0.000015"},
}
_OVERFLOW_FOLDER = re.compile(r"\[overflow(?:-(\d+))?:([^\]]+)\]")  # [overflow-N:FOLDER]: N files, else 8
# A call as our transcript has it (translate.as_transcript), and as Copilot's summary request has it
_CALLED = re.compile(r"(?:called the tool \S+ with|Used tool \S+ with arguments:) [^\n]*?part-(\d\d)\.txt")
_SUMMARY_READ = re.compile(r"FILES-READ: ([\d, ]*)")
_PART = re.compile(r"part-(\d\d)\.txt")


def overflow_reads(body: dict[str, Any]) -> tuple[set[int], set[int]]:
    """What the request shows of the reads: the files it shows a read call for (its calls, a
    transcript's, a summary's FILES-READ list), and those of them whose content it shows (a result
    that was not cleared, or a summary's list)."""
    called: set[int] = set()
    known: set[int] = set()
    files_of: dict[str, set[int]] = {}  # call id → the files the call read
    transcribed: list[set[int]] = []  # a transcript's calls whose result has not come yet
    for item in body.get("input") or []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call":
            files = {int(n) for n in _PART.findall(str(item.get("arguments")))}
            files_of[str(item.get("call_id"))] = files
            called |= files
        elif item.get("type") == "function_call_output":
            if CLEARED not in json.dumps(item.get("output")):
                known |= files_of.get(str(item.get("call_id")), set())
        elif item.get("type", "message") == "message":
            text = _text(item)
            header = TRANSCRIBED.match(text)
            if header and transcribed:
                files = transcribed.pop(0)
                if CLEARED not in text[header.end() :]:
                    known |= files
            calls = [{int(n)} for n in _CALLED.findall(text)]
            called |= set().union(*calls)
            transcribed += calls
            for listed in _SUMMARY_READ.findall(text):
                files = {int(n) for n in re.findall(r"\d+", listed)}
                called |= files
                known |= files
    return called, known


def serve_overflow_agent(h: Handler, body: dict[str, Any], entry: dict[str, Any], created: dict[str, Any]) -> None:
    from fake_gateway import call_events, fill_arguments, response_obj, text_events

    real = count_request(body, "fake/overflow-agent")
    cleared = sum(1 for i in body.get("input") or [] if isinstance(i, dict) and CLEARED in json.dumps(i))
    usage = _admit(h, body, entry, real, OVERFLOW_LIMIT, cleared)
    if usage is None:
        return
    done = {"type": "response.completed", "response": response_obj("completed", usage=usage)}
    state = h.server.gateway
    folder, files = None, OVERFLOW_FILES
    for item in body.get("input") or []:
        match = _OVERFLOW_FOLDER.search(_text(item)) if isinstance(item, dict) else None
        if match:
            folder, files = match.group(2), int(match.group(1) or OVERFLOW_FILES)
    folder, files = (folder, files) if folder else getattr(state, "overflow_folder", (None, OVERFLOW_FILES))
    state.overflow_folder = folder, files
    called, known = overflow_reads(body)
    entry["files_read"] = sorted(known)
    if entry["summarisation"] is not None:
        listed = ", ".join(f"{n:02d}" for n in sorted(called))
        asked = f"The user asked me to read the {files} files in [overflow-{files}:{folder}] one by one."
        summary = f"<summary>{asked} FILES-READ: {listed}</summary>"
        h._send(entry, [created, *text_events([summary]), done])
        return
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    tool = next((t for t in tools if "read" in str(t.get("name")) and "file" in str(t.get("name"))), None)
    unread = [n for n in range(1, files + 1) if n not in called]
    missing = [n for n in range(1, files + 1) if n not in known]  # read, but its content is gone
    if (not unread and not missing) or tool is None or folder is None:
        h._send(entry, [created, *text_events([f"I have read all {files} files."]), done])
        return
    reading = (unread or missing)[0]
    entry["reads"] = reading  # the e2e test and tests/ts/overflow.test.ts count each file's reads
    path = str(Path(folder) / f"part-{reading:02d}.txt")
    arguments = json.dumps({**fill_arguments(tool.get("parameters") or {}, path), "startLine": 1, "endLine": 2000})
    h._send(entry, [created, *call_events(f"call_overflow_{reading}", str(tool["name"]), arguments), done])
