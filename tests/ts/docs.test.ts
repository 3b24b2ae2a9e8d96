// scripts/check-docs.mjs, which `make lint` runs: a doc that names a file, module or symbol that
// does not exist fails the build.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { ROOT } from './real';

function check(markdown: string): { status: number | null; output: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agl-docs-'));
  try {
    const file = path.join(dir, 'doc.md');
    fs.writeFileSync(file, markdown);
    const run = spawnSync(process.execPath, [path.join(ROOT, 'scripts/check-docs.mjs'), file], { encoding: 'utf8', timeout: 30_000 });
    return { status: run.status, output: run.stdout + run.stderr };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test('names that exist pass: files, folders, modules and their symbols, settings, run-time files', () => {
  const good = check(
    'See `server/gateway_lm/spend/ledger.py`, `ledger.py`, `extension/webview/`, `history.GUARD_READ_TIMEOUT_S`, ' +
      '`methods.Sidecar._priced`, `approval.Approvals`, `spend.maxDailyCost` (a setting), `usage.sqlite3`, `vscode.lm` and [RFC](rfcs/0006-spend.md).',
  );
  assert.equal(good.status, 0, good.output);
});

test('a stale file, module symbol or link fails with the doc and line', () => {
  const bad = check(
    'Line one.\nThe settings are `messages.Settings` (the panel once `usagePanel.show`); see `server/gateway_lm/gone.py`, `nothere.ts` and [x](rfcs/9999-none.md).\n',
  );
  assert.equal(bad.status, 1);
  for (const expected of [
    "doc.md:2: `messages.Settings`: 'messages' defines no 'Settings'",
    "`usagePanel.show`: 'usagePanel' is no module now (see dashboard)",
    "no file or folder 'server/gateway_lm/gone.py'",
    "no file named 'nothere.ts'",
    "no file or folder 'rfcs/9999-none.md'",
  ]) {
    assert.ok(bad.output.includes(expected), `${expected}\n${bad.output}`);
  }
});
