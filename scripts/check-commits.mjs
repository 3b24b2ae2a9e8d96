// `make lint`'s check that a commit subject can be scanned: at most 72 characters, saying what
// changed; the evidence (numbers, test results) goes in the body. `git log --oneline` is how a
// person reads the history, and a subject past 72 characters wraps or is cut there.
//
// Only commits made after BASELINE are checked: the history before it holds hundreds of subjects
// of 100–1,400 characters (issue 37 §5), and rewriting published history is worse than leaving it.
// BASELINE is main's HEAD when the rule was made (issue 37, "Commit subjects a person can scan").
//
// Where there is no history to read it says so and passes: outside a git checkout (an unpacked
// source archive), or in a clone that does not hold BASELINE (a shallow clone). CI clones main
// with its full history, so there it checks every commit since BASELINE.
//
// `node scripts/check-commits.mjs [--repo DIR] [--since REV]`: another repository or baseline, for
// tests/ts/commits.test.ts.
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { parseArgs } from 'node:util';

const BASELINE = '646296474bfbf49c73d9da5f2f2cb7881b0d4f30';
const MAX_SUBJECT = 72;

const { values } = parseArgs({ options: { repo: { type: 'string' }, since: { type: 'string' } } });
const repo = values.repo ?? path.resolve(import.meta.dirname, '..');
const since = values.since ?? BASELINE;

function git(...args) {
  return execFileSync('git', args, { cwd: repo, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
}

function succeeds(...args) {
  try {
    git(...args);
    return true;
  } catch {
    return false;
  }
}

if (!succeeds('rev-parse', '--is-inside-work-tree')) {
  console.log('commits: not a git checkout, no subjects to check');
  process.exit(0);
}
if (!succeeds('cat-file', '-e', `${since}^{commit}`)) {
  console.log(`commits: this clone does not hold ${since.slice(0, 7)} (shallow?), no subjects to check`);
  process.exit(0);
}
const commits = git('log', '--format=%h%x00%s', `${since}..HEAD`)
  .split('\n')
  .filter(Boolean)
  .map((line) => line.split('\0'));
const long = commits.filter(([, subject]) => [...subject].length > MAX_SUBJECT);
if (long.length) {
  console.error(
    `Commit subjects over ${MAX_SUBJECT} characters (scripts/check-commits.mjs): say what changed in the subject, the evidence in the body ` +
      `(git commit --amend, or git rebase -i before the branch is merged):\n` +
      long.map(([hash, subject]) => `${hash} (${[...subject].length}): ${subject}`).join('\n'),
  );
  process.exit(1);
}
console.log(`commits: ${commits.length} since ${since.slice(0, 7)}, every subject at most ${MAX_SUBJECT} characters`);
