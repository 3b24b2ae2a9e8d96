// What holds on Windows and macOS, checked here on Linux (issue 41): every child process the
// extension starts hides its console window on Windows (taskkill, a console program, flashed one at
// every kill); paths compare as each platform's file system does; a Windows checkout keeps the
// byte-exact files as committed.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import ts from 'typescript';
import { isWithin, samePath } from '../../extension/sidecar/setup';
import { ROOT } from './real';

const CHILD_PROCESS = new Set(['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork']);

/** Every call of a node:child_process function in `source` ("file:line name"), with whether its
 * options are an object literal that says `windowsHide: true`. Named and namespace imports both. */
function childProcessCalls(file: string, source: string): { where: string; hidden: boolean }[] {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.ES2022, true);
  const named = new Map<string, string>(); // local name → child_process function
  const namespaces = new Set<string>();
  for (const statement of sf.statements) {
    if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
    if (!['node:child_process', 'child_process'].includes(statement.moduleSpecifier.text)) continue;
    const bindings = statement.importClause?.namedBindings;
    if (bindings && ts.isNamespaceImport(bindings)) namespaces.add(bindings.name.text);
    if (bindings && ts.isNamedImports(bindings))
      for (const element of bindings.elements) named.set(element.name.text, (element.propertyName ?? element.name).text);
    if (statement.importClause?.name) namespaces.add(statement.importClause.name.text);
  }
  const calls: { where: string; hidden: boolean }[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node)) {
      const callee = node.expression;
      const name = ts.isIdentifier(callee)
        ? named.get(callee.text)
        : ts.isPropertyAccessExpression(callee) && ts.isIdentifier(callee.expression) && namespaces.has(callee.expression.text)
          ? callee.name.text
          : undefined;
      if (name && CHILD_PROCESS.has(name)) {
        const hidden = node.arguments.some(
          (arg) =>
            ts.isObjectLiteralExpression(arg) &&
            arg.properties.some((p) => ts.isPropertyAssignment(p) && p.name.getText(sf) === 'windowsHide' && p.initializer.kind === ts.SyntaxKind.TrueKeyword),
        );
        calls.push({ where: `${file}:${sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1} ${name}`, hidden });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return calls;
}

function* sources(dir: string): Generator<string> {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* sources(full);
    else if (/\.ts$/.test(entry.name)) yield full;
  }
}

test('Windows: every child process the extension starts carries windowsHide: true (no console window flashes)', () => {
  const calls = [...sources(path.join(ROOT, 'extension'))].flatMap((file) => childProcessCalls(path.relative(ROOT, file), fs.readFileSync(file, 'utf8')));
  // The sidecar's spawn, setup's runs, and the kill's taskkill at least: the check found them.
  assert.ok(calls.length >= 3, calls.map((c) => c.where).join('\n'));
  assert.deepEqual(
    calls.filter((c) => !c.hidden).map((c) => c.where),
    [],
    'a call without windowsHide: true opens a console window on Windows',
  );
  // The check can fail: a call without the option, or with it only in a variable, is named.
  const bad = childProcessCalls(
    'x.ts',
    "import * as cp from 'node:child_process';\nimport { execFile as run } from 'node:child_process';\nconst o = { windowsHide: true };\ncp.spawn('a', [], o);\nrun('taskkill', ['/F'], () => undefined);\nrun('b', [], { windowsHide: true }, () => undefined);\n",
  );
  assert.deepEqual(bad, [
    { where: 'x.ts:4 spawn', hidden: false },
    { where: 'x.ts:5 execFile', hidden: false },
    { where: 'x.ts:6 execFile', hidden: true },
  ]);
});

// Paths as each platform's default file system compares them: NTFS and APFS ignore case (APFS and
// HFS+ also Unicode normalization); Linux file systems do not.
test('paths compare case-insensitively on Windows and macOS, normalized, and case-sensitively on Linux', () => {
  assert.ok(samePath('C:\\Users\\Ana\\Python312\\python.exe', 'c:\\users\\ana\\python312\\PYTHON.EXE', 'win32'));
  assert.ok(samePath('C:\\Users\\Ana\\', 'C:/users/ana', 'win32'), 'either separator, a trailing one or not');
  assert.ok(samePath('/Users/Ana/.pyenv/versions/3.12.4/bin/python3', '/users/ana/.pyenv/versions/3.12.4/bin/Python3', 'darwin'));
  assert.ok(samePath('/Users/Zoe\u0301', '/users/zo\u00e9', 'darwin'), 'decomposed and composed é are one name on APFS');
  assert.ok(!samePath('/home/ana/Python', '/home/ana/python', 'linux'));
  assert.ok(isWithin('c:\\work\\project\\.venv\\Scripts\\python.exe', 'C:\\Work\\Project', 'win32'));
  assert.ok(isWithin('/users/ana/project/.venv/bin/python', '/Users/Ana/Project/', 'darwin'));
  assert.ok(isWithin('C:\\', 'C:\\', 'win32'));
  assert.ok(!isWithin('C:\\Work\\Project2\\python.exe', 'C:\\Work\\Project', 'win32'), 'a sibling whose name starts the same is not inside');
  assert.ok(!isWithin('/home/ana/project/.venv/bin/python', '/home/ana/Project', 'linux'));
});

const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 << 20, timeout: 30_000 });

/** The committed files that must reach every checkout as committed: the fixtures (recorded streams
 * replayed byte for byte, one CRLF on purpose), the shell scripts, .ci/run and the scripts. */
function byteExact(): string[] {
  return git('ls-files', '-z', '--', 'tests/fixtures', '.ci/run', 'scripts', '*.sh').split('\0').filter(Boolean);
}

test('.gitattributes: every fixture, script and .ci/run is eol=lf or -text, whatever core.autocrlf says', { timeout: 60_000 }, () => {
  const files = byteExact();
  assert.ok(files.filter((f) => f.startsWith('tests/fixtures/')).length >= 40, `${files.length} files`);
  // `git check-attr` prints "<file>: <attr>: <value>" per file and attribute.
  const attrs = new Map<string, Record<string, string>>();
  for (const line of git('check-attr', 'text', 'eol', '--', ...files)
    .split('\n')
    .filter(Boolean)) {
    const m = /^(.*): (text|eol): (.*)$/.exec(line)!;
    attrs.set(m[1], { ...attrs.get(m[1]), [m[2]]: m[3] });
  }
  const uncovered = files.filter((f) => !(attrs.get(f)?.text === 'unset' || attrs.get(f)?.eol === 'lf'));
  assert.deepEqual(uncovered, [], 'a Windows checkout (core.autocrlf=true) would rewrite these to CRLF');
  for (const f of files.filter((f) => f.startsWith('tests/fixtures/'))) assert.equal(attrs.get(f)?.text, 'unset', `${f}: byte for byte`);

  // What a Windows checkout writes: git archive converts as a checkout does, with core.autocrlf=true
  // and this working tree's .gitattributes. Every committed file arrives byte for byte.
  const committed = new Set(git('ls-tree', '-r', '--name-only', '-z', 'HEAD').split('\0'));
  const exact = files.filter((f) => committed.has(f));
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'agl-checkout-'));
  try {
    const archive = execFileSync('git', ['-c', 'core.autocrlf=true', 'archive', '--worktree-attributes', 'HEAD', '--', ...exact], {
      cwd: ROOT,
      maxBuffer: 256 << 20,
      timeout: 30_000,
    });
    execFileSync('tar', ['-x', '-C', out], { input: archive, timeout: 30_000 });
    const changed = exact.filter(
      (f) => !fs.readFileSync(path.join(out, f)).equals(execFileSync('git', ['cat-file', 'blob', `HEAD:${f}`], { cwd: ROOT, maxBuffer: 64 << 20 })),
    );
    assert.deepEqual(changed, [], 'rewritten by a checkout with core.autocrlf=true');
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
  }
});
