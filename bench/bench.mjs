// `make bench`: what the sidecar costs against an in-process client, measured side by side in one
// run. Every figure is a median (or percentile) over several runs. Prints one table.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';

const ROOT = path.resolve(import.meta.dirname, '..');
const PYTHON = process.env.GATEWAY_LM_PYTHON ?? path.join(ROOT, '.venv/bin/python');
const EVENTS = 5000;
const RUNS = Number(process.env.BENCH_RUNS ?? 25);
const children = [];
process.on('exit', () => children.forEach((c) => c.kill('SIGKILL')));

const median = (xs) => percentile(xs, 50);
function percentile(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}
const now = () => performance.timeOrigin + performance.now(); // wall clock, sub-millisecond

async function startGateway() {
  const child = spawn(PYTHON, [path.join(ROOT, 'tests/fake_gateway.py')], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  const port = await new Promise((resolve) => child.stdout.once('data', (c) => resolve(/PORT (\d+)/.exec(String(c))[1])));
  return `http://127.0.0.1:${port}`;
}

async function startSidecar(baseUrl) {
  const spawned = performance.now();
  const child = spawn(PYTHON, ['-m', 'gateway_lm', 'serve'], { stdio: ['pipe', 'pipe', 'inherit'] });
  children.push(child);
  const connection = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
  const parts = new Map();
  connection.onNotification('gateway/parts', (p) => parts.get(p.requestId)?.(p.parts));
  connection.listen();
  await connection.sendRequest('initialize', { processId: process.pid, capabilities: {}, initializationOptions: { baseUrl: `${baseUrl}/v1` } });
  connection.sendNotification('initialized', {});
  await connection.sendRequest('gateway/models', {});
  return { child, connection, parts, startMs: performance.now() - spawned };
}

/** The in-process baseline: fetch + a minimal SSE parse, as a TypeScript provider would do. */
async function direct(baseUrl, scenario, onFirst) {
  const response = await fetch(`${baseUrl}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: `fake/${scenario}`, input: [] }) });
  const decoder = new TextDecoder();
  let buffer = '';
  let count = 0;
  for await (const chunk of response.body) {
    buffer += decoder.decode(chunk, { stream: true });
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = frame.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('\n');
      if (!data) continue;
      const event = JSON.parse(data);
      if (event.type === 'response.output_text.delta') {
        if (count++ === 0) onFirst?.();
      }
    }
  }
  return count;
}

let sequence = 0;
/** Our path: a Node client on vscode-jsonrpc, as the extension talks to the sidecar. */
async function viaSidecar(side, scenario, onFirst) {
  const requestId = `bench-${++sequence}`;
  let count = 0;
  side.parts.set(requestId, (parts) => {
    for (const p of parts) if (p.type === 'text' && count++ === 0) onFirst?.();
  });
  await side.connection.sendRequest('gateway/chat', { requestId, model: `fake/${scenario}`, messages: [{ role: 1, content: [{ type: 'text', value: 'go' }] }] });
  side.parts.delete(requestId);
  return count;
}

async function timed(fn) {
  const started = performance.now();
  const count = await fn();
  return { ms: performance.now() - started, count };
}

async function lastFirstDelta(baseUrl) {
  const log = await (await fetch(`${baseUrl}/_requests`)).json();
  return log.at(-1).first_delta_at * 1000;
}

function rss(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)[1]) / 1024;
}

const rows = [];
const row = (metric, value, target, ok) => rows.push({ metric, value, target, ok: ok === undefined ? '' : ok ? 'yes' : 'NO' });

const gateway = await startGateway();
const side = await startSidecar(gateway);
const deltas = EVENTS - 3;

// 1. Stream throughput, both paths alternated, warm-up first.
for (let i = 0; i < 3; i++) {
  await direct(gateway, `bench-${EVENTS}`);
  await viaSidecar(side, `bench-${EVENTS}`);
}
const directMs = [];
const sidecarMs = [];
for (let i = 0; i < RUNS; i++) {
  const a = await timed(() => direct(gateway, `bench-${EVENTS}`));
  const b = await timed(() => viaSidecar(side, `bench-${EVENTS}`));
  if (a.count !== deltas || b.count !== deltas) throw new Error(`lost parts: ${a.count} / ${b.count} of ${deltas}`);
  directMs.push(a.ms);
  sidecarMs.push(b.ms);
}
const ratio = median(sidecarMs) / median(directMs);
const eventsPerSecond = EVENTS / (median(sidecarMs) / 1000);
row(`stream ${EVENTS} events: direct Node fetch + SSE (a)`, `${median(directMs).toFixed(1)} ms`, '', undefined);
row(`stream ${EVENTS} events: Node → sidecar over vscode-jsonrpc (b)`, `${median(sidecarMs).toFixed(1)} ms`, '< 31 ms (peer, warm)', median(sidecarMs) < 31);
row('ratio b/a', `${ratio.toFixed(2)}×`, '≤ 3.0', ratio <= 3.0);
row('sidecar throughput', `${Math.round(eventsPerSecond).toLocaleString('en-US')} events/s`, '≥ 150,000', eventsPerSecond >= 150_000);

// 2. Time to first part, against the gateway's stamp of its first delta.
const directLag = [];
const sidecarLag = [];
for (let i = 0; i < RUNS * 2; i++) {
  let first = 0;
  await direct(gateway, 'ttfp', () => (first = now()));
  directLag.push(first - (await lastFirstDelta(gateway)));
  await viaSidecar(side, 'ttfp', () => (first = now()));
  sidecarLag.push(first - (await lastFirstDelta(gateway)));
}
const added50 = median(sidecarLag) - median(directLag);
const added95 = percentile(sidecarLag, 95) - percentile(directLag, 95);
row('first part after the gateway wrote it: direct p50 / p95', `${median(directLag).toFixed(2)} / ${percentile(directLag, 95).toFixed(2)} ms`, '', undefined);
row('first part after the gateway wrote it: sidecar p50 / p95', `${median(sidecarLag).toFixed(2)} / ${percentile(sidecarLag, 95).toFixed(2)} ms`, '', undefined);
row('added latency p50', `${added50.toFixed(2)} ms`, '≤ 0.5 ms', added50 <= 0.5);
row('added latency p95', `${added95.toFixed(2)} ms`, '≤ 1 ms', added95 <= 1);

// 3. Sidecar start and memory.
const starts = [];
for (let i = 0; i < 5; i++) {
  const fresh = await startSidecar(gateway);
  starts.push(fresh.startMs);
  fresh.connection.dispose();
  fresh.child.kill();
}
row('sidecar start: spawn → first gateway/models answer', `${(median(starts) / 1000).toFixed(2)} s`, '≤ 0.8 s', median(starts) <= 800);
await side.connection.sendRequest('gateway/countTokens', { model: 'openai/gpt-5', texts: ['hello world'] });
const memory = rss(side.child.pid);
row('sidecar resident memory after chats and a count', `${memory.toFixed(0)} MB`, '≤ 140 MB', memory <= 140);

// 4. Token counting, when the workload exists.
const tokenBench = path.join(ROOT, 'bench/tokens.mjs');
if (fs.existsSync(tokenBench)) {
  const { tokenRows } = await import(tokenBench);
  for (const r of await tokenRows(side, gateway)) row(r.metric, r.value, r.target, r.ok);
}

const widths = ['metric', 'value', 'target'].map((k) => Math.max(k.length, ...rows.map((r) => String(r[k]).length)));
const line = (r) => `| ${String(r.metric).padEnd(widths[0])} | ${String(r.value).padEnd(widths[1])} | ${String(r.target).padEnd(widths[2])} | ${r.ok} |`;
console.log(`\nBenchmark (medians of ${RUNS} runs; ${new Date().toISOString().slice(0, 10)}, ${process.platform}, Node ${process.version})`);
console.log(line({ metric: 'metric', value: 'value', target: 'target', ok: 'met' }));
console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|---|`);
rows.forEach((r) => console.log(line(r)));
side.connection.dispose();
process.exit(0);
