// tests/ts/smoke.ts, the smoke test each CI runner runs on its platform's VSIX: it passes against the
// real sidecar (here the development venv's; `make smoke-vsix` runs it on the linux-x64 VSIX), and it
// fails, naming the step, against a sidecar that never answers `initialize`, one that answers
// everything with nonsense, and a folder that carries no Python.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { PYTHON, startGateway } from './real';
import { carried, smoke, SmokeFailure } from './smoke';

const children: ChildProcess[] = [];
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agl-smoke-test-'));
let gatewayUrl = '';
before(async () => {
  gatewayUrl = await startGateway(children);
});
after(() => {
  children.forEach((child) => child.kill());
  fs.rmSync(scratch, { recursive: true, force: true });
});

const FAKE = path.join(__dirname, 'fixtures', 'fake-sidecar.js');
const stateDir = () => fs.mkdtempSync(path.join(scratch, 'state-'));

test('the smoke test passes against the real sidecar, step by step', async () => {
  const steps: string[] = [];
  await smoke({ command: { command: PYTHON, args: [] }, gatewayUrl, stateDir: stateDir(), report: (line) => steps.push(line.replace(/ \(\d+ ms\)$/, '')) });
  assert.deepEqual(steps, ['ok initialize', 'ok gateway/models', 'ok gateway/chat, streamed', 'ok gateway/chat, cancelled', 'ok shutdown']);
});

test('a sidecar that never answers initialize fails the smoke test at initialize, within its limit', async () => {
  const started = Date.now();
  // The fake sidecar reads its mode from its first argument; `-m gateway_lm serve` follows, unread.
  const command = { command: process.execPath, args: [FAKE, 'hang'] };
  await assert.rejects(smoke({ command, gatewayUrl, stateDir: stateDir(), startTimeoutMs: 1_500 }), (error: SmokeFailure) => {
    assert.equal(error.step, 'initialize');
    assert.match(error.message, /did not start within 2 s/);
    return true;
  });
  assert.ok(Date.now() - started < 10_000, `${Date.now() - started} ms`);
});

test('a sidecar that answers with nonsense fails the smoke test at the model list', async () => {
  const command = { command: process.execPath, args: [FAKE, 'echo'] };
  await assert.rejects(smoke({ command, gatewayUrl, stateDir: stateDir(), stepTimeoutMs: 5_000 }), (error: SmokeFailure) => {
    assert.equal(error.step, 'gateway/models');
    assert.match(error.message, /models were not listed/);
    return true;
  });
});

test('an extension folder without a runtime (the untargeted VSIX) is no smoke test of a platform VSIX', async () => {
  await assert.rejects(carried(scratch), (error: SmokeFailure) => error.step === 'runtime' && /carries no Python/.test(error.message));
});
