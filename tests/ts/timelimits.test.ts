// No Node test can hang the suite: register.ts gives every test a time limit, and a test past it
// fails with its own name while its file goes on.
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { test } from 'node:test';

test('a test that never ends fails by name at its time limit, and the next test runs', { timeout: 30_000 }, () => {
  const started = Date.now();
  const env: NodeJS.ProcessEnv = { ...process.env, AI_GATEWAY_LM_TEST_TIMEOUT_MS: '500' };
  delete env.NODE_TEST_CONTEXT; // a run of its own, not a file of this one
  const run = spawnSync(
    process.execPath,
    ['--require', path.join(__dirname, 'register.js'), '--test', '--test-timeout=3000', '--test-reporter=spec', path.join(__dirname, 'fixtures/hangs.js')],
    {
      env,
      encoding: 'utf8',
      timeout: 20_000,
    },
  );
  const output = run.stdout + run.stderr;
  assert.match(output, /✖ a test that never ends \(\d+(\.\d+)?ms\)\n\s+'test timed out after 500ms'/);
  assert.match(output, /✔ the test after it/);
  assert.notEqual(run.status, 0);
  assert.ok(Date.now() - started < 20_000, `took ${Date.now() - started} ms`);
});
