// scripts/check-docs.mjs, which `make lint` runs: a doc or a code comment that names a file, module,
// symbol or RFC section that does not exist fails the build, and so does a measured figure in a
// comment that does not cite the section of RFC 0005 holding it.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { ROOT } from './real';

function check(markdown: string, name = 'doc.md'): { status: number | null; output: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agl-docs-'));
  try {
    const file = path.join(dir, name);
    fs.writeFileSync(file, markdown);
    const run = spawnSync(process.execPath, [path.join(ROOT, 'scripts/check-docs.mjs'), file], { encoding: 'utf8', timeout: 30_000 });
    return { status: run.status, output: run.stdout + run.stderr };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The check failed, and its output names each of `expected`. */
function assertFails(run: { status: number | null; output: string }, expected: string[]): void {
  assert.equal(run.status, 1, run.output);
  for (const line of expected) assert.ok(run.output.includes(line), `${line}\n${run.output}`);
}

test('names that exist pass: files, folders, modules and their symbols, settings, run-time files', () => {
  const good = check(
    'See `server/gateway_lm/spend/ledger.py`, `ledger.py`, `extension/webview/`, `history.GUARD_READ_TIMEOUT_S`, ' +
      '`chats.ChatService._priced`, `approval.Approvals`, `spend.maxDailyCost` (a setting), `usage.sqlite3`, `vscode.lm` and [RFC](rfcs/0006-spend.md).',
  );
  assert.equal(good.status, 0, good.output);
});

test('a stale file, module symbol or link fails with the doc and line', () => {
  const bad = check(
    'Line one.\nThe settings are `messages.Settings` (the panel once `usagePanel.show`); see `server/gateway_lm/gone.py`, `nothere.ts` and [x](rfcs/9999-none.md).\n',
  );
  assertFails(bad, [
    "doc.md:2: `messages.Settings`: 'messages' defines no 'Settings'",
    "`usagePanel.show`: 'usagePanel' is no module now (see dashboard)",
    "no file or folder 'server/gateway_lm/gone.py'",
    "no file named 'nothere.ts'",
    "no file or folder 'rfcs/9999-none.md'",
  ]);
});

test('README.md is the Marketplace page: at most 150 lines, for the people who install it', () => {
  // Build, test, release, layout and bench live in CONTRIBUTING.md, which `make lint` checks too.
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const lines = readme.trimEnd().split('\n').length;
  assert.ok(lines <= 150, `README.md has ${lines} lines; move what is not for users to CONTRIBUTING.md`);
  assert.ok(readme.includes('](CONTRIBUTING.md)'), 'README.md links to CONTRIBUTING.md');
});

test('a stale RFC section fails, a section or bold title that exists passes', () => {
  const good = check('See RFC 0005, "The round trip", and rfcs/0005-performance.md, "Huge counts on the event loop".\n');
  assert.equal(good.status, 0, good.output);
  const bad = check('Line one.\nSee RFC 0003, "Errors".\n');
  assert.equal(bad.status, 1);
  assert.ok(bad.output.includes('doc.md:2: rfcs/0003-rpc-contract.md has no section "Errors"'), bad.output);
});

test("comments' paths that exist and figures that are no measurement pass", () => {
  const good = check(
    [
      '// Reads extension/sidecar/frames.ts, spend/ledger.py, tests/e2e/, rfcs/0005 and fake-sidecar.js (built from its .ts).',
      '// Not paths: gateway/countTokens, openai/gpt-5. Bounds the code chooses: up to 240 s, every 10 s, a 16 MiB cap.',
      '// The tokenizer loads off the first chat (rfcs/0005-performance.md, "The tokenizer under the first chat").',
      '// Parsing it whole took 14 s (RFC 0005, "Huge counts on the event loop").',
      "const url = 'extension/gone.ts ~4 ms'; // a string is no comment",
      '/** 1,000 × $3 + 20 × $15 per million tokens: a product, not a ratio. */',
      'export const x = url;',
    ].join('\n'),
    'code.ts',
  );
  assert.equal(good.status, 0, good.output);
});

test("a comment's stale path, uncited figure, or figure its section does not hold fails with the file and line", () => {
  const bad = check(
    [
      '// The connection (extension/session.ts) logs it.',
      'export const a = 1;',
      '/** A save rewrites them all',
      ' * (~4 ms for 512K characters). */',
      'export const b = 2;',
      '// Parsing it took 0.987 s (rfcs/0005-performance.md, "The round trip").',
    ].join('\n'),
    'code.ts',
  );
  assertFails(bad, [
    "code.ts:1: extension/session.ts: no file or folder 'extension/session.ts'",
    "code.ts:4: '4 ms' is a measured figure: cite the section of rfcs/0005-performance.md that holds it",
    "code.ts:6: '0.987 s': no section it cites of rfcs/0005-performance.md holds 0.987",
  ]);
});

test('Python comments and docstrings are read, and its strings are not', () => {
  const bad = check(
    ['"""The tokenizer (~0.35 s) loads late (gateway_lm/history.py)."""', 'PATH = "extension/gone.ts"  # a string is no comment, this is: tests/gone.py'].join(
      '\n',
    ),
    'code.py',
  );
  assertFails(bad, [
    "code.py:1: '0.35 s' is a measured figure",
    "code.py:1: gateway_lm/history.py: no path ends in 'gateway_lm/history.py'",
    "code.py:2: tests/gone.py: no file or folder 'tests/gone.py'",
  ]);
  assert.ok(!bad.output.includes('extension/gone.ts'), bad.output);
});
