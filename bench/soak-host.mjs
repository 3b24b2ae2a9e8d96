// The soak (bench/soak-plan.mjs) in VS Code's own extension host: code-server with the installed
// VSIX and a driver extension (bench/soak-driver/) that sends the turns through vscode.lm from
// inside the host and samples the host's memory there. The bench's other soak (bench/soak.mjs) runs
// the same turns in a fresh node process under a stub `vscode`, where it can tell what the extension
// keeps (the heap after a full collection) and check every usage record; this one measures what
// users get: the host's Node (the one the e2e hosts run), its young generation as VS Code's start
// sized it, VS Code's own vscode.lm path. Run alone: `node bench/bench.mjs soak-host` after `make
// build`. SOAK_TURNS (default 1000) shortens it; SOAK_HOST_COPILOT=1 enables and activates the
// built-in Copilot Chat first; SOAK_HOST_GC=1 forces a full collection before each sample.
import * as fs from 'node:fs';
import * as path from 'node:path';
import fromTests from './from-tests.cjs';
import { SETTINGS, SIDECAR_WARM, TURN_TARGET_MS } from './soak-plan.mjs';

const host = await fromTests.realHost();
const TURNS = Number(process.env.SOAK_TURNS ?? 1000);
// The whole run's limit: the sidecar's first start (≤ 240 s) and the turns (their times, the faults'
// waits apart: rfcs/0005-performance.md, "The soak"), with room; the driver has its own, a minute
// shorter.
const RUN_LIMIT_MS = 300_000 + TURNS * 1_500;

export async function soakHostRows() {
  const result = await runInHost('ours');
  printSeries(result);
  // The baseline in a host of its own, without our extension: the same turns through floor.js.
  const floor = await runInHost('floor');
  printSeries(floor);
  const at = (label) => result.samples.find((s) => s.label === label);
  const start = at('turn 50') ?? at('activated'); // a short run (SOAK_TURNS) ends before turn 50
  const end = at('end');
  const floorAt = (label) => floor.samples.find((s) => s.label === label);
  const floorStart = floorAt('turn 50') ?? floorAt('activated');
  const floorEnd = floorAt('end');
  const warm = result.samples.filter((s) => s.label.startsWith('sidecar warm')).at(-1) ?? start;
  const pct = (a, b) => `${b >= a ? '+' : ''}${(((b - a) / a) * 100).toFixed(1)} %`;
  const flat = (a, b) => b <= a * 1.1;
  const unclear = result.unclear.length;
  const where = `VS Code ${result.vscode}'s extension host (code-server, Node ${result.node.slice(1)})`;
  return [
    {
      metric: `soak in ${where}: ${result.turns} turns, ${result.wallS.toFixed(0)} s: succeeded / failed (planned to fail)`,
      value: `${result.succeeded} / ${result.failed} (${result.plannedFailures}); unclear ${unclear}, not as planned ${result.notAsPlanned.length}; sidecar kills ${result.kills.filter((k) => k.next && !k.ok).length} of ${result.kills.length} mid-stream`,
      target: 'all clear, as planned',
      ok: unclear === 0 && result.notAsPlanned.length === 0 && result.cut === 0,
    },
    {
      metric: '  longest turn; turns the watchdog cut',
      value: `${(result.longestMs / 1000).toFixed(2)} s; ${result.cut}`,
      target: `≤ ${TURN_TARGET_MS / 1000} s; 0`,
      ok: result.longestMs <= TURN_TARGET_MS && result.cut === 0,
    },
    {
      // Read as the host runs (no forced collection, which no user's host makes: bench/soak-driver).
      metric: '  extension host RSS / open files, turn 50 → end (young generation; heap used, not after GC)',
      value: `${start.rss.toFixed(0)} → ${end.rss.toFixed(0)} MB (${pct(start.rss, end.rss)}, ${(end.rss - start.rss).toFixed(1)} MB) / ${start.fds} → ${end.fds} (${start.young.toFixed(0)} → ${end.young.toFixed(0)} MB; ${start.heapUsed.toFixed(0)} → ${end.heapUsed.toFixed(0)} MB)`,
      target: '≤ +10 %',
      ok: flat(start.rss, end.rss) && flat(start.fds, end.fds),
    },
    {
      metric: "  the baseline's host (floor.js, no extension of ours), the same session: RSS / open files (young generation); its turns",
      value: `${floorStart.rss.toFixed(0)} → ${floorEnd.rss.toFixed(0)} MB (${pct(floorStart.rss, floorEnd.rss)}, ${(floorEnd.rss - floorStart.rss).toFixed(1)} MB) / ${floorStart.fds} → ${floorEnd.fds} (${floorStart.young.toFixed(0)} → ${floorEnd.young.toFixed(0)} MB); ${floor.succeeded} / ${floor.failed}, longest ${(floor.longestMs / 1000).toFixed(2)} s`,
      target: '—',
    },
    {
      metric: `  sidecar RSS / open files, ${SIDECAR_WARM} turns after its last restart → end`,
      value: `${warm.sidecarRss.toFixed(0)} → ${end.sidecarRss.toFixed(0)} MB (${pct(warm.sidecarRss, end.sidecarRss)}) / ${warm.sidecarFds} → ${end.sidecarFds}`,
      target: '≤ +10 %',
      ok: flat(warm.sidecarRss, end.sidecarRss) && flat(warm.sidecarFds, end.sidecarFds) && warm.sidecar === end.sidecar,
    },
  ];
}

async function runInHost(provider) {
  const { cache, dirs, gateway, port, env } = await host.prepareRun(`soak-host-${provider}`, SETTINGS);
  const out = path.join(dirs.base, 'soak-host.json');
  // host.hostEnv builds the host's environment afresh: what the driver reads is passed on here.
  Object.assign(env, {
    SOAK_TURNS: String(TURNS),
    SOAK_HOST_OUT: out,
    SOAK_HOST_LIMIT_MS: String(RUN_LIMIT_MS - 60_000),
    SOAK_HOST_COPILOT: process.env.SOAK_HOST_COPILOT ?? '',
    SOAK_HOST_GC: process.env.SOAK_HOST_GC ?? '',
    SOAK_HOST_PROVIDER: provider,
  });
  const devRoot = path.join(dirs.base, 'dev');
  fs.cpSync(path.join(host.ROOT, 'bench/soak-driver'), path.join(devRoot, 'soak-driver'), { recursive: true });
  fs.copyFileSync(path.join(host.ROOT, 'bench/soak-plan.mjs'), path.join(devRoot, 'soak-driver', 'soak-plan.mjs'));
  let browser;
  try {
    if (provider === 'ours') host.installVsix(cache, dirs, env, host.VSIX);
    await host.startCodeServer(cache, dirs, env, port);
    browser = await host.launchBrowser();
    const page = await browser.newPage();
    const exited = new Promise((resolve) => page.exposeFunction('codeAutomationExit', (c) => resolve(c)));
    page.on('console', (m) => m.text().includes('[soak-host]') && console.error(m.text()));
    const remote = `vscode-remote://127.0.0.1:${port}`;
    const payload = [
      ['extensionDevelopmentPath', `${remote}${devRoot}/soak-driver`],
      ['extensionTestsPath', `${remote}${devRoot}/soak-driver/index.js`],
    ];
    await page.goto(`http://127.0.0.1:${port}/?folder=${dirs.ws}&payload=${encodeURIComponent(JSON.stringify(payload))}`);
    let timer;
    const timeout = new Promise((resolve) => (timer = setTimeout(() => resolve('timeout'), RUN_LIMIT_MS)));
    const code = await Promise.race([exited, timeout]).finally(() => clearTimeout(timer));
    if (code !== 0 || !fs.existsSync(out)) {
      await host.printDiagnostics(dirs, gateway);
      throw new Error(code === 'timeout' ? `the soak in the host ran past ${RUN_LIMIT_MS / 1000} s` : `the soak in the host ended with ${code}`);
    }
    const result = JSON.parse(fs.readFileSync(out, 'utf8'));
    result.vscode = JSON.parse(fs.readFileSync(path.join(cache, 'code-server/node_modules/code-server/lib/vscode/package.json'), 'utf8')).version;
    return result;
  } finally {
    await browser?.close();
    host.cleanup();
  }
}

function printSeries(r) {
  const mb = (v) => (typeof v === 'number' ? v.toFixed(1) : '–'); // JSON has no NaN: a sample before the sidecar ran
  console.error(
    `soak-host: ${r.turns} turns in ${r.wallS.toFixed(0)} s; host pid ${r.pid}, Node ${r.node} (V8 ${r.v8}), execArgv ${JSON.stringify(r.execArgv)}; collections: ${r.gc}`,
  );
  console.error(`  Copilot Chat: ${JSON.stringify(r.copilot)}; active extensions: ${r.activeExtensions.join(', ')}`);
  console.error('  sample: host RSS (anon + file) / heap used / heap total / young generation (resident) / external / fds; sidecar pid RSS / fds');
  for (const s of r.samples) {
    console.error(
      `  ${s.label}: ${mb(s.rss)} (${mb(s.anon)} + ${mb(s.file)}) / ${mb(s.heapUsed)} / ${mb(s.heapTotal)} / ${mb(s.young)} (${mb(s.youngResident)}) / ${mb(s.external)} / ${s.fds}; ${s.sidecar} ${mb(s.sidecarRss)} / ${s.sidecarFds}`,
    );
  }
  console.error(`  sidecar kills: ${JSON.stringify(r.kills)}`);
  if (r.errors.length) console.error(`  errors seen: ${JSON.stringify(r.errors)}`);
  if (r.unclear.length) console.error(`  unclear: ${JSON.stringify(r.unclear)}`);
  if (r.notAsPlanned.length) console.error(`  not as planned: ${JSON.stringify(r.notAsPlanned)}`);
}
