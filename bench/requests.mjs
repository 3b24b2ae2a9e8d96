// The request path of a long session (issue 43 §3): Copilot's agent sends the whole history again
// on every request of a turn. One growing session — a system prompt and 40 tools, the user's task,
// then per request the answer's tool calls and their results (the repository's own source files, as
// read_file returns them) — 50 requests, each timed from the call of provideLanguageModelChatResponse
// to the fake gateway's receipt of the whole body (`received_at`, stamped once the body is read),
// beside the floor: an in-process TypeScript provider (map the messages, JSON.stringify, fetch) sent
// the same history in the same run, the two taking turns request by request.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { activate, gatewayRequests, median, model, now, ROOT, sleep, storageDir, vscode } from './host.mjs';
import { workload } from './tokens.mjs';

export const REQUESTS = 50;
const RUNS = Number(process.env.BENCH_REQUESTS_RUNS ?? 5);
const LAST = 10; // the late requests of the session: the row's p50 is over these, in every run
const MODEL = 'fake/text'; // listed (so the request is fitted to its window, as a real one is), and it answers at once
const TARGET_MS = 10; // ours ≤ the floor + this, or ≤ TARGET_RATIO × the floor
const TARGET_RATIO = 3;
const MILESTONES = [5, 25, REQUESTS]; // how the gap grows with the history
const TOOL_MS = 30; // between requests, both sides: the tool call Copilot runs (a file read)

/** The repository's own source files, as read_file returns them: real code. Each is cut to a planned
 * length (3–15K characters, the same every run and every commit), so the history's size does not
 * move as the code does; a file shorter than its length is followed by the next one's text. */
function sourceFiles() {
  const files = [];
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (/\.(py|ts)$/.test(entry.name)) files.push({ path: path.relative(ROOT, file), text: fs.readFileSync(file, 'utf8') });
    }
  };
  walk(path.join(ROOT, 'server/gateway_lm'));
  walk(path.join(ROOT, 'extension'));
  const all = files.map((f) => f.text).join('\n');
  let at = 0;
  return files.map((file, n) => {
    const length = 3000 + ((n * 2749) % 12_000);
    if (at + length > all.length) at = 0;
    const text = file.text.length >= length ? file.text.slice(0, length) : all.slice(at, at + length);
    at += length;
    return { path: file.path, text };
  });
}

/** The session as plain data: each request's messages are made from it afresh (`messagesOf`), as VS
 * Code hands every request new objects and strings. `run` makes every text of the run its own, so a
 * run finds nothing of an earlier run's in the sidecar's memo. */
export function session(run) {
  const { tools } = workload();
  const files = sourceFiles();
  const contributing = fs.readFileSync(path.join(ROOT, 'CONTRIBUTING.md'), 'utf8');
  const system = `You are an expert AI programming assistant, working with a user in the VS Code editor (session ${run}).\n\n${contributing.slice(0, 14_000)}`;
  const task = [
    '<context>',
    `The current date is 2026-11-28. Session ${run}.`,
    "The user's workspace is this repository; the folder structure follows.",
    ...files.map((f) => f.path),
    '</context>',
    '<userRequest>',
    'Read the sidecar and the extension module by module and explain how a chat request travels from VS Code to the gateway.',
    '</userRequest>',
  ].join('\n');
  const history = [
    { role: 3, parts: [{ text: system }] },
    { role: 1, parts: [{ text: task }] },
  ];
  const requests = [];
  let next = 0;
  for (let i = 1; i <= REQUESTS; i++) {
    requests.push(history.length);
    // The answer: a sentence and one read_file call (two in parallel every fifth step), then their results.
    const calls = Array.from({ length: i % 5 === 0 ? 2 : 1 }, (_, k) => {
      const file = files[next++ % files.length];
      return { callId: `call_${run}_${i}_${k}`, name: 'read_file', input: { filePath: `/workspace/${file.path}`, startLine: 1, endLine: 2000 }, file };
    });
    history.push({
      role: 2,
      parts: [
        { text: `Step ${i}: next I read ${calls.map((c) => c.file.path).join(' and ')}.` },
        ...calls.map((c) => ({ call: { callId: c.callId, name: c.name, input: c.input } })),
      ],
    });
    history.push({
      role: 1,
      parts: calls.map((c) => ({
        result: {
          callId: c.callId,
          text: `File: \`/workspace/${c.file.path}\` (session ${run}). Lines 1 to ${c.file.text.split('\n').length}:\n\`\`\`\n${c.file.text}\n\`\`\``,
        },
      })),
    });
  }
  requests.push(history.length);
  return { tools, history, requests: requests.slice(1) }; // request i sends history.slice(0, requests[i - 1])
}

/** The first `n` messages as VS Code hands them to a provider: new objects, new strings. Copilot marks
 * the newest message for prompt caching with a data part. */
export function messagesOf(history, n) {
  const copy = JSON.parse(JSON.stringify(history.slice(0, n)));
  return copy.map((m, i) => {
    const parts = m.parts.map((p) => {
      if (p.call) return new vscode.LanguageModelToolCallPart(p.call.callId, p.call.name, p.call.input);
      if (p.result) return new vscode.LanguageModelToolResultPart(p.result.callId, [new vscode.LanguageModelTextPart(p.result.text)]);
      return new vscode.LanguageModelTextPart(p.text);
    });
    if (i === n - 1) parts.push(new vscode.LanguageModelDataPart(new TextEncoder().encode('ephemeral'), 'cache_control'));
    return new vscode.LanguageModelChatMessage(m.role, parts);
  });
}

const ignore = { report() {} };
const signed = (ms) => `${ms < 0 ? '−' : '+'}${Math.abs(ms).toFixed(1)}`;

/** The floor: what an in-process TypeScript provider does with the same call — the messages mapped to
 * OpenResponses items, the body stringified, fetch — and its answer read to the end. */
export async function floor(gateway, modelId, messages, tools) {
  const input = [];
  const instructions = [];
  for (const message of messages) {
    for (const part of message.content) {
      if (part instanceof vscode.LanguageModelTextPart) {
        if (message.role === 3) instructions.push(part.value);
        else if (message.role === 2) input.push({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: part.value }] });
        else input.push({ type: 'message', role: 'user', content: [{ type: 'input_text', text: part.value }] });
      } else if (part instanceof vscode.LanguageModelToolCallPart) {
        input.push({ type: 'function_call', call_id: part.callId, name: part.name, arguments: JSON.stringify(part.input) });
      } else if (part instanceof vscode.LanguageModelToolResultPart) {
        input.push({ type: 'function_call_output', call_id: part.callId, output: part.content.map((c) => c.value ?? '').join('') });
      }
    }
  }
  const body = {
    model: modelId,
    input,
    instructions: instructions.join('\n\n'),
    tools: tools.map((t) => ({ type: 'function', name: t.name, description: t.description, parameters: t.inputSchema, strict: false })),
    tool_choice: 'auto',
    store: false,
    stream: true,
  };
  const response = await fetch(`${gateway}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  await response.arrayBuffer(); // the answer read to its end, as ours is
}

export async function ours(provider, messages, tools) {
  await provider.provideLanguageModelChatResponse(model(MODEL), messages, { tools, toolMode: 1 }, ignore, new vscode.CancellationTokenSource().token);
}

/** One session: request by request, ours and the floor's in turns (who goes first alternates). Per
 * request: ms from the call to the gateway's receipt, each side; the body's size; its input items. */
async function runSession(gateway, provider, run, requests = REQUESTS) {
  const { tools, history, requests: sizes } = session(run);
  const started = [];
  for (let i = 0; i < requests; i++) {
    const sides = [
      ['ours', (messages) => ours(provider, messages, tools)],
      ['floor', (messages) => floor(gateway, MODEL, messages, tools)],
    ];
    if (i % 2) sides.reverse();
    const at = {};
    for (const [side, send] of sides) {
      const messages = messagesOf(history, sizes[i]); // made before the call, untimed
      await sleep(TOOL_MS); // Copilot runs the tools between requests: what the last request left running settles
      at[side] = now();
      await send(messages);
    }
    started.push(at);
  }
  const log = (await gatewayRequests(gateway)).filter((e) => e.body?.model === MODEL && e.path.endsWith('/responses')).slice(-2 * requests);
  await fetch(`${gateway}/_reset`, { method: 'POST', body: '{}' }); // the gateway keeps every body: 25 MB a session
  const ourLog = log.filter((e) => e.headers['user-agent'] === 'ai-gateway-lm');
  const floorLog = log.filter((e) => e.headers['user-agent'] !== 'ai-gateway-lm');
  if (ourLog.length !== requests || floorLog.length !== requests)
    throw new Error(`the gateway saw ${ourLog.length} and ${floorLog.length} of ${requests} requests`);
  return started.map((at, i) => {
    const a = ourLog[i];
    const b = floorLog[i];
    if (a.body.input.length !== b.body.input.length)
      throw new Error(`request ${i + 1}: ${a.body.input.length} input items arrived, the floor sent ${b.body.input.length}`);
    return {
      ours: a.received_at * 1000 - at.ours,
      floor: b.received_at * 1000 - at.floor,
      bytes: Buffer.byteLength(JSON.stringify(a.body)),
    };
  });
}

export async function requestRows(gateway) {
  const ext = await activate(storageDir(), gateway);
  try {
    await runSession(gateway, ext.provider, -1, 15); // warm: the code paths, the tokenizer, the connections
    const sessions = [];
    for (let run = 0; run < RUNS; run++) sessions.push(await runSession(gateway, ext.provider, run));
    const late = sessions.flatMap((s) => s.slice(-LAST));
    const a = median(late.map((r) => r.ours));
    const b = median(late.map((r) => r.floor));
    // Around request n (n − 2 … n + 2, within the session), every session: one request alone moves with the machine.
    const around = (n) => sessions.flatMap((s) => s.slice(Math.max(0, n - 3), Math.min(REQUESTS, n + 2)));
    const gap = (n) => median(around(n).map((r) => r.ours - r.floor));
    const kb = (n) => (median(sessions.map((s) => s[n - 1].bytes)) / 1024).toFixed(0);
    return [
      {
        metric: `long session: call → gateway has the body, p50 of requests ${REQUESTS - LAST + 1}–${REQUESTS} (${kb(REQUESTS - LAST + 1)}–${kb(REQUESTS)} KB, ${RUNS} sessions): ours vs in-process`,
        value: `${a.toFixed(1)} vs ${b.toFixed(1)} ms (${signed(a - b)} ms, ${(a / b).toFixed(2)}×)`,
        target: `≤ floor + ${TARGET_MS} ms or ≤ ${TARGET_RATIO}×`,
        ok: a <= b + TARGET_MS || a <= TARGET_RATIO * b,
      },
      {
        metric: `  ours − in-process around request ${MILESTONES.join(' / ')} (±2, ${RUNS} sessions, medians)`,
        value: MILESTONES.map((n) => `${signed(gap(n))} ms (${kb(n)} KB)`).join(' / '),
        target: '',
        ok: undefined,
      },
    ];
  } finally {
    await ext.deactivate();
  }
}
