// scripts/check-commits.mjs, which `make lint` runs: a commit subject over 72 characters made after
// the baseline fails the build; without the history to read, it passes and says why.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { ROOT } from './real';

function checkCommits(...args: string[]): { status: number | null; output: string } {
  const run = spawnSync(process.execPath, [path.join(ROOT, 'scripts/check-commits.mjs'), ...args], { encoding: 'utf8', timeout: 30_000 });
  return { status: run.status, output: run.stdout + run.stderr };
}

/** A repository with a baseline commit and then one commit per subject; returns it and the baseline. */
function repository(subjects: string[]): { dir: string; baseline: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agl-commits-'));
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.invalid', ...args], { cwd: dir, encoding: 'utf8' }).trim();
  git('init', '-q');
  git('commit', '-q', '--allow-empty', '-m', `${'a long subject from before the rule '.repeat(4)}`);
  const baseline = git('rev-parse', 'HEAD');
  for (const subject of subjects) git('commit', '-q', '--allow-empty', '-m', `${subject}\n\nThe evidence, as long as it needs.`);
  return { dir, baseline };
}

test('subjects of at most 72 characters after the baseline pass; the history before it is not read', () => {
  const { dir, baseline } = repository(['check-docs reads comments', 'x'.repeat(72), 'é'.repeat(72)]);
  try {
    const run = checkCommits('--repo', dir, '--since', baseline);
    assert.equal(run.status, 0, run.output);
    assert.match(run.output, /commits: 3 since/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a subject over 72 characters after the baseline fails, named with its length', () => {
  const long = `check-docs reads comments: ${'and the evidence that belongs in the body '.repeat(2).trimEnd()}`;
  const { dir, baseline } = repository(['a short one', long]);
  try {
    const run = checkCommits('--repo', dir, '--since', baseline);
    assert.equal(run.status, 1, run.output);
    assert.ok(run.output.includes(`(${long.length}): ${long}`), run.output);
    assert.ok(!run.output.includes('a short one'), run.output);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('outside a git checkout, or without the baseline in the clone, it passes and says why', () => {
  const plain = fs.mkdtempSync(path.join(os.tmpdir(), 'agl-commits-plain-'));
  const { dir } = repository([]);
  try {
    const outside = checkCommits('--repo', plain);
    assert.equal(outside.status, 0, outside.output);
    assert.match(outside.output, /not a git checkout/);
    const shallow = checkCommits('--repo', dir, '--since', '0123456789012345678901234567890123456789');
    assert.equal(shallow.status, 0, shallow.output);
    assert.match(shallow.output, /does not hold 0123456/);
  } finally {
    fs.rmSync(plain, { recursive: true, force: true });
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
