// The soak (bench/soak-plan.mjs) in a real extension host: code-server with the installed VSIX and a
// test extension (tests/e2e/soak-host/) that drives the turns through vscode.lm from inside the host
// and samples the host's memory there. The bench's soak (bench/soak.mjs) runs the same turns in a
// plain node process, whose young generation only our extension sizes; this one shows the host users
// have (its Node, its other extensions). Heavy: `flock /tmp/agl-heavy.lock node tests/e2e/soak-host.mjs`
// after `make build`. SOAK_TURNS (default 1000) shortens it; SOAK_HOST_COPILOT=1 enables and activates
// the built-in Copilot Chat first; SOAK_HOST_GC=0 samples without a full GC first (tests/e2e/soak-host/index.js
// says why).
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as host from './host.mjs';
import { SETTINGS } from '../../bench/soak-plan.mjs';

const TURNS = Number(process.env.SOAK_TURNS ?? 1000);
// The whole run's limit: the sidecar's first start (≤ 240 s) and the turns (~0.1–0.5 s each, the
// faults' waits apart), with room; the test extension has its own, shorter one.
const RUN_LIMIT_MS = 300_000 + TURNS * 1_500;
const name = 'soak-host';

const { cache, dirs, gateway, port, env } = await host.prepareRun(name, SETTINGS);
const out = path.join(dirs.base, 'soak-host.json');
// host.hostEnv builds the host's environment afresh: what the test extension reads is passed on here.
Object.assign(env, { SOAK_TURNS: String(TURNS), SOAK_HOST_OUT: out, SOAK_HOST_LIMIT_MS: String(RUN_LIMIT_MS - 60_000), SOAK_HOST_COPILOT: process.env.SOAK_HOST_COPILOT ?? '', SOAK_HOST_GC: process.env.SOAK_HOST_GC ?? '' });
const devRoot = path.join(dirs.base, 'dev');
fs.cpSync(path.join(host.ROOT, 'tests/e2e/soak-host'), path.join(devRoot, 'soak-host'), { recursive: true });
fs.copyFileSync(path.join(host.ROOT, 'bench/soak-plan.mjs'), path.join(devRoot, 'soak-host', 'soak-plan.mjs'));

let result;
let browser;
try {
  host.installVsix(cache, dirs, env, host.VSIX);
  await host.startCodeServer(cache, dirs, env, port);
  browser = await host.launchBrowser();
  const page = await browser.newPage();
  const exited = new Promise((resolve) => page.exposeFunction('codeAutomationExit', (c) => resolve(c)));
  page.on('console', (m) => m.text().includes('[soak-host]') && console.log(m.text()));
  const remote = `vscode-remote://127.0.0.1:${port}`;
  const payload = [['extensionDevelopmentPath', `${remote}${devRoot}/soak-host`], ['extensionTestsPath', `${remote}${devRoot}/soak-host/index.js`]];
  await page.goto(`http://127.0.0.1:${port}/?folder=${dirs.ws}&payload=${encodeURIComponent(JSON.stringify(payload))}`);
  const timeout = new Promise((resolve) => setTimeout(() => resolve('timeout'), RUN_LIMIT_MS));
  const code = await Promise.race([exited, timeout]);
  if (code !== 0 || !fs.existsSync(out)) throw new Error(`the soak in the host ended with ${code}`);
  result = JSON.parse(fs.readFileSync(out, 'utf8'));
} catch (error) {
  console.log(`soak-host: ${error.stack}`);
  await host.printDiagnostics(dirs, gateway);
} finally {
  await browser?.close();
  host.cleanup();
}
if (!result) process.exit(1);
report(result);
process.exit(0);

function report(r) {
  const mb = (v) => v.toFixed(1);
  const pct = (a, b) => `${b >= a ? '+' : ''}${(((b - a) / a) * 100).toFixed(1)} %`;
  console.log(`\nsoak-host: ${r.turns} turns in ${r.wallS.toFixed(0)} s; extension host pid ${r.pid}, Node ${r.node} (V8 ${r.v8}), execArgv ${JSON.stringify(r.execArgv)}, NODE_OPTIONS '${r.nodeOptions}', gc by ${r.gcSource}`);
  console.log(`  Copilot Chat: ${JSON.stringify(r.copilot)}`);
  for (const [when, ids] of Object.entries(r.extensions)) console.log(`  active extensions (${when}): ${ids.join(', ')}`);
  console.log('  sample: RSS (anon + file) / heap after GC / heap total / young generation (resident) / external / malloced / fds');
  for (const s of [...r.samples, r.youngMax]) {
    console.log(`  ${s.label}: ${mb(s.rss)} (${mb(s.anon)} + ${mb(s.file)}) / ${mb(s.heapUsed)} / ${mb(s.heapTotal)} / ${mb(s.young)} (${mb(s.youngResident)}) / ${mb(s.external)} / ${mb(s.malloced)} / ${s.fds}`);
  }
  const at = (label) => r.samples.find((s) => s.label === label);
  const start = at('turn 50') ?? at('activated'); // a short run (SOAK_TURNS) ends before turn 50
  const end = at('end');
  const activated = at('activated');
  const without = (s) => s.rss - s.youngResident;
  console.log(`  host RSS turn 50 → end: ${mb(start.rss)} → ${mb(end.rss)} MB (${mb(end.rss - start.rss)} MB, ${pct(start.rss, end.rss)})`);
  console.log(`  without the young generation's resident pages: ${mb(without(start))} → ${mb(without(end))} MB (${pct(without(start), without(end))})`);
  console.log(`  young generation size (resident): activated ${mb(activated.young)} (${mb(activated.youngResident)}), turn 50 ${mb(start.young)} (${mb(start.youngResident)}), end ${mb(end.young)} (${mb(end.youngResident)}); its largest after the nursery probe ${mb(r.youngMax.young)} (${mb(r.youngMax.youngResident)})`);
  console.log(`  heap after GC turn 50 → end: ${mb(start.heapUsed)} → ${mb(end.heapUsed)} MB; heap_size_limit ${mb(end.heapLimit)} MB; fds ${start.fds} → ${end.fds}`);
  console.log(`  turns: ${r.succeeded} succeeded / ${r.failed} failed (planned to fail: ${r.plannedFailures}); not as planned ${r.notAsPlanned.length}${r.notAsPlanned.length ? ` ${JSON.stringify(r.notAsPlanned.slice(0, 10))}` : ''}; cut by the watchdog ${r.cut}; longest ${(r.longestMs / 1000).toFixed(2)} s`);
  console.log(`  sidecar kills: ${JSON.stringify(r.kills)}`);
  if (r.errors.length) console.log(`  errors seen: ${JSON.stringify(r.errors)}`);
}
