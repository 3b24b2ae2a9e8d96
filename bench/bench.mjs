// `make bench`: the product measured where users meet it — the shipped bundle's activate() and the
// provider VS Code receives, called as Copilot calls it, against a gateway that flushes one event per
// HTTP chunk — beside in-process baselines measured in the same run. Prints one table
// (rfcs/0005-performance.md explains each row).
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { activate, median, rssMb, startGateway, storageDir } from './host.mjs';
import { firstStartRows } from './firststart.mjs';
import { hugeCountRows, startRows, streamRows } from './streams.mjs';
import { harnessRows } from './harness.mjs';
import { requestRows } from './requests.mjs';
import { cacheRows } from './cache.mjs';
import { soakRows } from './soak.mjs';
import { accuracyRows, tokenRows } from './tokens.mjs';

const RUNS = Number(process.env.BENCH_RUNS ?? 15);
// tokens | streams | start | huge | accuracy | requests | cache | harness | soak | soak-host | firststart: one section while working on it (`node bench/bench.mjs soak`)
const only = process.argv[2] ?? process.env.BENCH_ONLY;
const rows = [];
const gateway = await startGateway();

/** A row named for the stdio mode it was measured in. */
function tagged(row, mode) {
  return { ...row, metric: `${row.metric} [${mode}]` };
}

/** One section's rows; a section that fails says so in the table instead of losing the others. */
async function section(name, run) {
  if (only && only !== name) return;
  try {
    rows.push(...(await run()));
  } catch (error) {
    rows.push({ metric: `${name}: failed`, value: String(error?.message ?? error).slice(0, 80), target: '', ok: false });
  }
}

await section('tokens', () => tokenRows(gateway));
if (!only || !['tokens', 'requests', 'cache', 'harness', 'soak', 'soak-host', 'firststart'].includes(only)) {
  // Five activations on fresh storage (one is at the mercy of whatever the machine did just before);
  // the last stays up for the sections below.
  const starts = [];
  let ext;
  for (let i = 0; i < 5; i++) {
    if (ext) await ext.deactivate();
    const started = performance.now();
    ext = await activate(storageDir(), gateway);
    starts.push(performance.now() - started);
  }
  const startMs = median(starts);
  rows.push({
    metric: 'activate() → sidecar started → model list answered (median of 5)',
    value: `${(startMs / 1000).toFixed(2)} s`,
    target: '≤ 1.0 s',
    ok: startMs <= 1000,
  });
  // The stream rows in each stdio mode of the sidecar (rfcs/0001-architecture.md, "Windows"): `loop`,
  // this platform's, here; `threads`, what Windows runs, on a window of its own once this one is gone.
  const loopRows = [];
  await section('streams', async () => {
    loopRows.push(...(await streamRows(gateway, ext)).map((row) => tagged(row, 'loop')));
    return loopRows;
  });
  await section('start', () => startRows(gateway, ext));
  await section('huge', () => hugeCountRows(gateway, ext));
  await section('accuracy', () => accuracyRows(gateway, ext));
  rows.push({ metric: 'sidecar resident memory after the runs', value: `${rssMb(ext.pid).toFixed(0)} MB`, target: '≤ 140 MB', ok: rssMb(ext.pid) <= 140 });
  await ext.deactivate();
  await section('streams', async () => {
    process.env.GATEWAY_LM_STDIO = 'threads';
    const threaded = await activate(storageDir(), gateway).finally(() => delete process.env.GATEWAY_LM_STDIO);
    try {
      const threads = (await streamRows(gateway, threaded)).map((row) => tagged(row, 'threads'));
      loopRows.forEach((row, i) => rows.splice(rows.indexOf(row) + 1, 0, threads[i])); // side by side
      return [];
    } finally {
      await threaded.deactivate();
    }
  });
}
// A long agent session's requests beside an in-process provider's, on an activation of its own (bench/requests.mjs).
await section('requests', () => requestRows(gateway));
// What an agent session costs: its prompt-cache reads and writes, on activations of its own (bench/cache.mjs).
await section('cache', () => cacheRows(gateway));
// The Copilot harness's path beside the editor path's, on an activation of its own (bench/harness.mjs).
await section('harness', () => harnessRows(gateway));
// The VSIXs as users get them, each on fresh storage (bench/firststart.mjs).
await section('firststart', () => firstStartRows(gateway));
// Last, on its own activation and settings (a short idleTimeout, one retry): a long session with faults.
// In a process of its own when other sections ran: they load what an extension host never holds (the
// baseline's tokenizer ranks; parsing them raises glibc's trim threshold for the process's whole life,
// bench/RESULTS.md, "What heaptrack showed"), and the soak measures the host's memory.
await section('soak', () => (only === 'soak' ? soakRows(gateway) : soakApart()));
// The same session in VS Code's own extension host (code-server), where users have it. Imported
// here only: it loads playwright, whose tens of MB of heap no other section's process may hold.
await section('soak-host', async () => (await import('./soak-host.mjs')).soakHostRows());

async function soakApart() {
  const file = path.join(storageDir(), 'soak-rows.json');
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), 'soak'], {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, BENCH_ROWS_JSON: file },
  });
  const code = await new Promise((resolve) => child.once('exit', resolve));
  if (!fs.existsSync(file)) throw new Error(`the soak's process ended (${code}) without its rows`);
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

if (process.env.BENCH_ROWS_JSON) {
  fs.writeFileSync(process.env.BENCH_ROWS_JSON, JSON.stringify(rows)); // for the process that started this one
  process.exit(0);
}
const load = os.loadavg()[0].toFixed(2);
const widths = ['metric', 'value', 'target'].map((k) => Math.max(k.length, ...rows.map((r) => String(r[k]).length)));
const line = (r) => `| ${String(r.metric).padEnd(widths[0])} | ${String(r.value).padEnd(widths[1])} | ${String(r.target).padEnd(widths[2])} | ${r.ok} |`;
console.log(
  `\nBenchmark (medians of ${RUNS} runs unless stated; ${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} cores, load ${load}, Node ${process.version})`,
);
console.log(line({ metric: 'metric', value: 'value', target: 'target', ok: 'met' }));
console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|---|`);
rows.forEach((r) => console.log(line({ ...r, ok: r.ok === undefined ? '' : r.ok ? 'yes' : 'NO' })));
process.exit(rows.every((r) => r.ok !== false) ? 0 : 1);
