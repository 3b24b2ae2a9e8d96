// The Copilot harness's path (RFC 0009): a 10-turn agent session on a strict reasoning model with
// tools, sent through the double of VS Code's BYOK bridge (tests/ts/bridge.ts) to the provider the
// shipped bundle registers, beside the same session through Copilot Chat's editor path (its baseline),
// in the same activation, alternating; and once more through a bridge that loses the encrypted
// reasoning, where the one retry of rfcs/0002 ("A history that lost its reasoning") is the only extra
// request allowed.
import fromTests from './from-tests.cjs';
import { activate, gatewayRequests, median, storageDir, vscode } from './host.mjs';

const { BridgeSession, EditorPathSession } = fromTests.bridge();

const MODEL = 'fake/reasoning-agent'; // tests/fake_reasoning.py: two tool calls a turn, each after its reasoning
const TURNS = 10;
const STEPS = 2;
const RUNS = Number(process.env.BENCH_HARNESS_RUNS ?? 5);
const TOOLS = [
  { type: 'function', name: 'read_file', description: 'Read a file', parametersSchema: { type: 'object', properties: { path: { type: 'string' } } } },
  {
    type: 'function',
    name: 'run_in_terminal',
    description: 'Run a command',
    parametersSchema: { type: 'object', properties: { command: { type: 'string' } } },
  },
  { type: 'custom', name: 'apply_patch', description: 'Apply a patch (freeform)' },
];
const OPTIONS = { tools: TOOLS, instructions: 'You are a coding agent. Use the tools.' };

/** A session's turns, timed; what the gateway received for it. */
async function run(gateway, make) {
  const from = (await gatewayRequests(gateway)).length;
  const session = make();
  const started = performance.now();
  for (let turn = 1; turn <= TURNS; turn++) await session.turn(`Task ${turn}: read the next file.`);
  const ms = performance.now() - started;
  const log = (await gatewayRequests(gateway)).slice(from);
  return { session, ms, log };
}

/** Calls of the current turn sent without the reasoning that preceded them, right before them. */
function unreasonedCalls(log) {
  let missing = 0;
  for (const entry of log) {
    const input = entry.body?.input ?? [];
    input.forEach((item, i) => {
      if (item.type === 'function_call' && String(item.call_id).startsWith('call_strict_') && input[i - 1]?.type !== 'reasoning') missing++;
    });
  }
  return missing;
}

const answered = (session) => session.turns.filter((t) => t.answer && t.error === undefined && !t.cancelled).length;

export async function harnessRows(gateway) {
  const base = `${gateway}/agents`; // the catalogue that lists fake/reasoning-agent
  const ext = await activate(storageDir(), base);
  try {
    const token = new vscode.CancellationTokenSource().token;
    const listed = await ext.provider.provideLanguageModelChatInformation({ silent: true }, token);
    const model = listed.find((m) => m.id === MODEL);
    if (!model) throw new Error(`${MODEL} is not listed`);
    const bridge = () => new BridgeSession(ext.provider, model, OPTIONS);
    const editor = () => new EditorPathSession(ext.provider, model, OPTIONS);
    await run(gateway, bridge); // warm: the tokenizer, the connection
    const times = { bridge: [], editor: [] };
    let last;
    for (let i = 0; i < RUNS; i++) {
      // Alternating, so neither path has the machine's quieter moments to itself.
      for (const [name, make] of i % 2
        ? [
            ['editor', editor],
            ['bridge', bridge],
          ]
        : [
            ['bridge', bridge],
            ['editor', editor],
          ]) {
        const result = await run(gateway, make);
        times[name].push(result.ms);
        if (name === 'bridge') last = result;
      }
    }
    const lost = await run(gateway, () => new BridgeSession(ext.provider, model, { ...OPTIONS, loseEncrypted: true }));
    const ratio = median(times.bridge) / median(times.editor);
    const planned = TURNS * (STEPS + 1);
    const refused = (log) => log.filter((e) => e.status === 400).length;
    return [
      {
        metric: `harness: ${TURNS}-turn agent session (strict reasoning model, tools) through the bridge: turns answered`,
        value: `${answered(last.session)} / ${TURNS}`,
        target: `${TURNS} / ${TURNS}`,
        ok: answered(last.session) === TURNS,
      },
      {
        metric: 'harness: tool calls sent without their reasoning right before them; requests refused',
        value: `${unreasonedCalls(last.log)}; ${refused(last.log)}`,
        target: '0; 0',
        ok: unreasonedCalls(last.log) === 0 && refused(last.log) === 0,
      },
      {
        metric: 'harness: requests for the session (2 tool calls and an answer a turn)',
        value: `${last.log.length} (${planned} planned)`,
        target: `${planned}`,
        ok: last.log.length === planned,
      },
      {
        metric: 'harness: a bridge that loses the reasoning: turns answered; extra requests',
        value: `${answered(lost.session)} / ${TURNS}; ${lost.log.length - planned}`,
        target: `${TURNS} / ${TURNS}; ≤ 1`,
        ok: answered(lost.session) === TURNS && lost.log.length - planned <= 1,
      },
      {
        metric: `harness: session time, bridge vs editor path (median of ${RUNS} each, alternating)`,
        value: `${ratio.toFixed(2)}× (${median(times.bridge).toFixed(0)} vs ${median(times.editor).toFixed(0)} ms)`,
        target: '≤ 1.1×',
        ok: ratio <= 1.1,
      },
    ];
  } finally {
    await ext.deactivate();
  }
}
