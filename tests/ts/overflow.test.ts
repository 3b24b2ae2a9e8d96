// Issue 43 §1: an agent turn on a model whose real input limit is far below the list's. Copilot's
// agent loop (tests/ts/copilot-loop.ts, a double written from its source) drives the extension's
// provider, the real sidecar and the fake gateway's fake/overflow-agent (listed at 128K, its provider
// refusing past 28,600 tokens; tests/fake_agent.py), which reads eight ~5,000-token files one per step
// and, before it answers, reads again those whose content the request no longer shows. After the
// first overflow the usage part tells Copilot how full the real limit is, in the unit of the window the
// turn holds, so Copilot compacts the turn itself; the sidecar's clearing is left for what it cannot fit.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import type { MessageConnection } from 'vscode-jsonrpc/node';
import type { ModelEntry } from '../../extension/contract';
import { GatewayChatProvider } from '../../extension/provider';
import type { Rpc } from '../../extension/sidecar/rpc';
import { CopilotAgent, ListedModels, MAX_REQUESTS, type Tool } from './copilot-loop';
import { startGateway, startSidecar } from './real';
import { until } from './until';
import type * as stub from './vscode-stub';

const MODEL = 'fake/overflow-agent';
const LIMIT = 28_600; // tests/fake_agent.py, OVERFLOW_LIMIT
const FILES = 8;
const FOLDER = '/workspace/big';
const children: ChildProcess[] = [];
let connection: MessageConnection;
let provider: GatewayChatProvider;
let models: ListedModels;
let gatewayUrl: string;

// About what Copilot 0.67 sends: a long system prompt and ~40 tools (~11,600 of its tool tokens).
const SYSTEM = Array.from(
  { length: 150 },
  (_, i) => `Rule ${i}: you are an agent in the user's workspace; keep to the task, read before you edit, and say what you did.`,
).join('\n');
const TOOLS: Tool[] = [
  {
    name: 'read_file',
    description: 'Read the contents of a file. You must specify the line range you are interested in.',
    inputSchema: {
      type: 'object',
      properties: {
        filePath: { type: 'string', description: 'The absolute path of the file to read.' },
        startLine: { type: 'number' },
        endLine: { type: 'number' },
      },
      required: ['filePath', 'startLine', 'endLine'],
    },
  },
  ...Array.from({ length: 39 }, (_, n) => ({
    name: `workspace_tool_${n}`,
    description: `Tool ${n} of the workspace: ${'it looks at the files, the terminal, the tests and the problems of the workspace and answers with what it found, '.repeat(6)}`,
    inputSchema: { type: 'object', properties: { query: { type: 'string', description: `What tool ${n} looks for, in plain words.` } }, required: ['query'] },
  })),
];
const CONTENT = (n: number) =>
  Array.from(
    { length: 125 },
    (_, i) => `def step_${n}_${i}(value: int) -> int:  # section ${n}, line ${i}: scale the value and offset it\n    return value * ${i} + ${n}\n`,
  ).join('');

before(async () => {
  process.env.FAKE_GATEWAY_OVERFLOW_AGENT = '1'; // the fake lists fake/overflow-agent
  gatewayUrl = await startGateway(children);
  const started = await startSidecar(children, gatewayUrl);
  connection = started.connection;
  const rpc: Rpc = {
    request: (method, params, token) => (token ? connection.sendRequest(method, params, token as never) : connection.sendRequest(method, params)),
    onParts: (id, handler) => started.router.subscribe(id, handler),
  };
  provider = new GatewayChatProvider(rpc, {
    apiKey: async () => 'test-key-0123456789',
    thinking: () => 'auto',
    loadCache: async () => [] as ModelEntry[],
    saveCache: async () => undefined,
    onUsage: () => undefined,
    tools: () => TOOLS,
    log: { info() {}, warn() {}, error() {} },
  });
  started.router.onCalibration = () => provider.windowMoved(); // as extension.ts wires it
  models = new ListedModels(provider);
  await models.list();
});

after(() => {
  provider?.dispose();
  connection?.dispose();
  for (const child of children) child.kill();
  delete process.env.FAKE_GATEWAY_OVERFLOW_AGENT;
});

interface Recorded {
  body?: { model?: string };
  overflow?: boolean;
  summarisation?: string | null;
  reads?: number;
  cleared?: number;
  real_input_tokens?: number;
}

async function recorded(): Promise<Recorded[]> {
  const response = await fetch(`${gatewayUrl}/_requests`, { signal: AbortSignal.timeout(10_000) });
  return ((await response.json()) as Recorded[]).filter((e) => e.body?.model === MODEL);
}

function runTool(call: stub.LanguageModelToolCallPart): string {
  const match = /part-(\d\d)\.txt/.exec(JSON.stringify(call.input));
  return match ? CONTENT(Number(match[1])) : 'No such file.';
}

test('a turn past a limit the list does not know is compacted by Copilot: each file read once, at most one refusal', { timeout: 240_000 }, async () => {
  const agent = new CopilotAgent(provider, models, MODEL, SYSTEM, TOOLS, runTool);
  const listed = models.get(MODEL).maxInputTokens;

  const first = await agent.turn(`Read the ${FILES} files part-NN.txt in [overflow-${FILES}:${FOLDER}] one by one, then say so.`);

  const log = await recorded();
  const sizes = log.map((e) => `${e.real_input_tokens}${e.overflow ? '!' : ''}${e.summarisation ? 's' : ''}${e.cleared ? `c${e.cleared}` : ''}`);
  console.log(`turn 1: ${first.requests} requests, summaries ${JSON.stringify(first.summaries)}, sent ${sizes.join(' ')}`);
  console.log(`turn 1: prompt_tokens ${first.promptTokens.join(' ')} against windows ${[...new Set(first.windows)].join(', ')}`);
  assert.match(first.answer ?? '', new RegExp(`I have read all ${FILES} files`), `answered within ${MAX_REQUESTS} requests`);
  assert.ok(log.filter((e) => e.overflow).length <= 1, 'at most one refused request');
  const reads = log.flatMap((e) => (e.reads === undefined ? [] : [e.reads]));
  assert.deepEqual(
    [...reads].sort((a, b) => a - b),
    Array.from({ length: FILES }, (_, i) => i + 1),
    `each file read once: ${reads.join(', ')}`,
  );
  assert.ok(first.summaries.length > 0, 'Copilot compacted the turn');
  assert.deepEqual(new Set(first.windows), new Set([listed]), 'VS Code kept the window the turn started with');
  // What Copilot reads: from the refused request on, each usage part says which share of the learned
  // limit (28,600 less the 8,000-token output: 20,600) the request took, in the unit of the 120,000
  // the turn holds, so Copilot's 80 % is 80 % of the real limit; the answer that ends the turn, in the
  // unit of the window the next turn holds (20,600).
  const learned = LIMIT - 8_000;
  const steps = log.filter((e) => !e.summarisation && !e.overflow); // one per request of the loop
  const retried = log.filter((e) => !e.summarisation).findIndex((e) => e.overflow);
  assert.equal(steps.length, first.requests);
  for (const [i, e] of steps.entries()) {
    const share = e.real_input_tokens! / (i < retried ? listed : learned);
    const unit = i === steps.length - 1 ? learned : listed;
    assert.ok(Math.abs(first.promptTokens[i] / unit - share) < 0.001, `request ${i + 1}: ${first.promptTokens[i]} of ${unit}, real share ${share}`);
  }
  // The sidecar clears results only where Copilot's compaction cannot help yet: the refused request,
  // and one sent while Copilot's summary of the turn is being made.
  for (const [i, e] of steps.entries()) {
    assert.ok(!e.cleared || i === retried || first.summarising[i], `request ${i + 1} was fitted by clearing ${e.cleared} results`);
  }

  // The turn is over: the list follows the learned limit, and the next turn is budgeted with it.
  await until(() => models.get(MODEL).maxInputTokens < LIMIT, 'VS Code lists the learned window', 10_000);
  const before = log.length;
  const second = await agent.turn('Which of the files have you read? Answer in one line.');
  const next = (await recorded()).slice(before);
  console.log(`turn 2: ${second.requests} requests, summaries ${JSON.stringify(second.summaries)}, sent ${next.map((e) => e.real_input_tokens).join(' ')}`);
  assert.match(second.answer ?? '', new RegExp(`I have read all ${FILES} files`));
  assert.equal(next.filter((e) => e.overflow).length, 0, 'no overflow in the next turn');
});
