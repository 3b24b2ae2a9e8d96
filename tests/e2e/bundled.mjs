// The linux-x64 platform VSIX in the real host (issue 21 §4), as a user without Python gets it: the
// API tests (chats, a tool round trip, cancellation, a crash and restart…) run against its bundled
// runtime inside a private network namespace that has loopback only, and a private mount namespace
// where every Python the host could find (on PATH, in the login shell's PATH, pyenv's shims) is a
// stub that records that it ran and fails. The run fails if any stub ran or the extension set up an
// environment; the fake gateway runs from the development venv, which is on no PATH.
//
//   node tests/e2e/bundled.mjs [VSIX]     (make test-e2e-bundled builds vsix/ai-gateway-lm-linux-x64.vsix)
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../..');
const vsix = path.resolve(process.argv[2] ?? path.join(ROOT, 'vsix/ai-gateway-lm-linux-x64.vsix'));
if (!fs.existsSync(vsix)) throw new Error(`${vsix} is not built: make test-e2e-bundled builds it`);

if (!process.env.AGL_ISOLATED) {
  // unshare(1) makes the new mount namespace's mounts private: nothing below reaches the machine.
  const run = spawnSync('unshare', ['--mount', '--net', '--', process.execPath, import.meta.filename, vsix], {
    env: { ...process.env, AGL_ISOLATED: '1' },
    stdio: 'inherit',
  });
  process.exit(run.status ?? 1);
}

execFileSync('ip', ['link', 'set', 'lo', 'up']);
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agl-bundled-'));
const ran = path.join(scratch, 'interpreters-that-ran.log');
fs.writeFileSync(ran, '');
const stub = path.join(scratch, 'python-stub');
fs.writeFileSync(stub, `#!/bin/sh\necho "$0 $*" >> "${ran}"\necho "no Python here" >&2\nexit 127\n`, { mode: 0o755 });
const hidden = [];
const dirs = new Set(['/usr/bin', '/usr/local/bin', '/bin', path.join(os.homedir(), '.pyenv/shims'), ...(process.env.PATH ?? '').split(':')]);
for (const dir of dirs) {
  if (!dir || dir.startsWith(ROOT) || !fs.existsSync(dir)) continue;
  for (const name of fs.readdirSync(dir)) {
    const file = path.join(dir, name);
    if (!/^(python[\d.]*|py|pypy[\d.]*)$/.test(name) || hidden.includes(fs.realpathSync(file))) continue;
    execFileSync('mount', ['--bind', stub, file]);
    hidden.push(fs.realpathSync(file));
  }
}
console.log(`[bundled] network: loopback only; ${hidden.length} interpreters replaced by a stub: ${hidden.join(', ')}`);
execFileSync('sh', ['-c', 'python3 --version || true'], { stdio: 'ignore' }); // the stub answers, and says so
if (fs.readFileSync(ran, 'utf8').trim() === '') throw new Error('the interpreter stubs are not in place');
fs.writeFileSync(ran, '');

process.env.AI_GATEWAY_LM_VSIX = vsix;
process.env.AI_GATEWAY_LM_FORBIDDEN_LOG = ran;
await import('./api.mjs');
