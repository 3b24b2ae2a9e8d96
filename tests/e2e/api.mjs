// API tests: a small test extension in a real VS Code extension host, against the installed VSIX.
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as path from 'node:path';
import * as host from './host.mjs';

// A platform VSIX with its bundled runtime, run by tests/e2e/bundled.mjs where no other Python exists.
const bundled = process.env.AI_GATEWAY_LM_VSIX;
const name = bundled ? 'bundled-api' : host.HOST === 'newest' ? 'api' : `${host.HOST}-api`; // screenshots and scratch folders
// VS Code's proxy setting, honoured by the sidecar (issue 14): every request of this run goes through
// a forward proxy on loopback that notes what it carried.
const proxied = [];
const proxy = http.createServer((request, response) => {
  proxied.push(`${request.method} ${request.url}`);
  const upstream = http.request(request.url, { method: request.method, headers: request.headers }, (answer) => {
    response.writeHead(answer.statusCode, answer.headers);
    answer.pipe(response);
  });
  upstream.on('error', () => response.destroy());
  // A client that goes away (a cancelled chat) takes the upstream connection with it, as a real proxy does.
  response.on('close', () => upstream.destroy());
  request.pipe(upstream);
});
proxy.on('connect', (request, client, head) => {
  // HTTPS through the proxy (the first start's pip reaches its package index this way).
  proxied.push(`CONNECT ${request.url}`);
  const [host, port] = request.url.split(':');
  const upstream = net.connect(Number(port) || 443, host, () => {
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    upstream.write(head);
    upstream.pipe(client);
    client.pipe(upstream);
  });
  upstream.on('error', () => client.destroy());
  client.on('error', () => upstream.destroy());
  // A tunnel idle for a minute is closed: nothing this run does waits that long on one.
  for (const [socket, other] of [
    [client, upstream],
    [upstream, client],
  ])
    socket.setTimeout(60_000, () => (socket.destroy(), other.destroy()));
});
await new Promise((resolve) => proxy.listen(0, '127.0.0.1', resolve));
const { cache, dirs, gateway, port, env } = await host.prepareRun(name, {
  'vercelAiGateway.trace.server': 'verbose', // the most verbose logging a user can ask for
  'vercelAiGateway.maxRetries': 0,
  'vercelAiGateway.modelOptions': { 'fake/t*': { temperature: 0.25 } }, // per-model options (issue 14)
  'http.proxy': `http://127.0.0.1:${proxy.address().port}`,
});
// A repository's settings that try to send the key elsewhere (host.mjs, workspaceTrap).
const { trap, trapped, trapUrl } = await host.workspaceTrap(dirs);
env.WORKSPACE_TRAP_URL = trapUrl;
env.E2E_USER_DIR = path.join(dirs.ud, 'User'); // chatLanguageModels.json, where VS Code keeps the provider groups
const artifacts = host.ARTIFACTS;
const vsix = bundled ?? host.VSIX;
// The test extension is the one development extension; the provider is the installed VSIX.
const devRoot = path.join(dirs.base, 'dev');
fs.mkdirSync(devRoot);
fs.cpSync(path.join(host.ROOT, 'tests/e2e/api-tests'), path.join(devRoot, 'api-tests'), { recursive: true });

let code = 1;
const failures = []; // printed again after the diagnostics, where a CI log's tail shows them
let browser;
try {
  host.installVsix(cache, dirs, env, vsix);
  await host.startCodeServer(cache, dirs, env, port, ['--log', 'trace']);
  browser = await host.launchBrowser();
  const page = await browser.newPage();
  const exited = new Promise((resolve) => page.exposeFunction('codeAutomationExit', (c) => resolve(c)));
  page.on('console', (m) => {
    if (!m.text().includes('[api-test]')) return;
    console.log(m.text());
    if (/not ok|passed, [1-9]/.test(m.text())) failures.push(m.text());
  });
  const remote = `vscode-remote://127.0.0.1:${port}`;
  const payload = [
    ['extensionDevelopmentPath', `${remote}${devRoot}/api-tests`],
    ['extensionTestsPath', `${remote}${devRoot}/api-tests/index.js`],
  ];
  await page.goto(`http://127.0.0.1:${port}/?folder=${dirs.ws}&payload=${encodeURIComponent(JSON.stringify(payload))}`);
  // The whole run's limit, past each test's own (api-tests/index.js): a host that never reports.
  const limit = 420_000;
  const timeout = new Promise((resolve) => setTimeout(() => resolve('timeout'), limit));
  code = await Promise.race([exited, timeout]);
  if (code === 'timeout') failures.push(`the API tests ran past their time limit of ${limit / 1000} s without reporting`);
  await page.screenshot({ path: path.join(artifacts, `${name}-tests.png`) });
  // remoteagent.log is VS Code's own: at trace level it dumps the environment the key came from.
  const leaks = filesContaining(path.join(dirs.ud, 'logs'), env.AI_GATEWAY_API_KEY).filter((f) => !f.endsWith('remoteagent.log'));
  console.log(`[api-test] the API key appears in ${leaks.length} log file(s)${leaks.length ? `: ${leaks.join(', ')}` : ''}`);
  if (leaks.length && code === 0) code = 1;
  const viaProxy = proxied.filter((line) => line.startsWith('POST ') && line.includes('/v1/responses')).length;
  console.log(`[api-test] ${viaProxy} chat request(s) went through http.proxy (${proxied.length} proxied in all)`);
  if (viaProxy === 0 && code === 0) code = 1;
  console.log(`[api-test] ${trapped.length} request(s) reached the workspace's baseUrl${trapped.length ? `: ${trapped.join(', ')}` : ''}`);
  if (trapped.length && code === 0) code = 1;
  if (bundled) {
    // Nothing but the VSIX's runtime may have run: no interpreter the host found, no setup.
    const others = fs.readFileSync(process.env.AI_GATEWAY_LM_FORBIDDEN_LOG, 'utf8').trim();
    const setup = filesContaining(path.join(dirs.ud, 'logs'), 'setup: ');
    const ran = [
      ...new Set(
        others
          .split('\n')
          .filter(Boolean)
          .map((line) => line.split(' ')[0]),
      ),
    ];
    console.log(
      `[api-test] interpreters outside the VSIX that ran: ${ran.length ? `${ran.join(', ')} (${others.split('\n').length} runs)` : 'none'}; setup run: ${setup.length ? setup.join(', ') : 'no'}`,
    );
    if ((others || setup.length) && code === 0) code = 1;
  }
  if (code !== 0) {
    console.log(`API tests failed (${code}); screenshot: ${path.join(artifacts, `${name}-tests.png`)}`);
    await host.printDiagnostics(dirs, gateway);
  }
} catch (error) {
  failures.push(`API test run broke: ${error.stack}`);
  console.log(failures.at(-1));
  await host.printDiagnostics(dirs, gateway);
} finally {
  await browser?.close();
  host.cleanup();
  proxy.close();
  trap.close();
}
if (code !== 0) console.log(['', ...failures].join('\n'));
process.exit(code === 0 ? 0 : 1); // the test extension printed "[api-test] N passed, N failed"

function filesContaining(dir, secret) {
  const found = [];
  const walk = (d) =>
    fs.existsSync(d) &&
    fs.readdirSync(d, { withFileTypes: true }).forEach((e) => {
      const full = path.join(d, e.name);
      if (e.isDirectory()) walk(full);
      else if (fs.readFileSync(full, 'latin1').includes(secret)) found.push(path.relative(dir, full));
    });
  walk(dir);
  return found;
}
