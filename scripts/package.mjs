// Packs a VSIX from a staging folder that holds exactly what ships: the untargeted one (`make build`),
// or a platform VSIX that carries its own Python (`make vsix-platforms`, RFC 0001 "Shipping Python").
//
//   node scripts/package.mjs --out FILE                          the untargeted VSIX
//   node scripts/package.mjs --target T --out FILE [--runtime DIR | --no-runtime]
//
// A platform VSIX's runtime is CPython for target T (scripts/platforms.json): from --runtime DIR (an
// install tree: bin/python3 and lib/python3.X, or python.exe and Lib), else downloaded from the
// pinned URL and checked against its pinned sha256. Into it go the locked packages for exactly
// that target (binary wheels only, hashes checked, pip --platform/--python-version) and the
// sidecar wheel; then it is pruned, precompiled and packed. --no-runtime packs the packages alone,
// to check the layout of a target whose runtime cannot be had here (scripts/check-vsix.mjs); such
// a VSIX is marked so and is not a release.
//
// Release settings (environment): PUBLISHER, the Marketplace publisher id; REPOSITORY, the public
// repository's URL. Unset, package.json's own values are used. PYTHON: the Python whose pip
// installs the packages (the build's venv). Needs dist/ (node extension/build.mjs) and python/
// (the sidecar wheel and requirements.txt), which `make build` makes.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { applies, parseLock } from './lock.mjs';

const ROOT = path.resolve(import.meta.dirname, '..');
const PLATFORMS = JSON.parse(fs.readFileSync(path.join(ROOT, 'scripts/platforms.json'), 'utf8'));
const VSCE = path.join(ROOT, 'node_modules/@vscode/vsce/vsce');

const { values: args } = parseArgs({
  options: { target: { type: 'string' }, out: { type: 'string' }, runtime: { type: 'string' }, 'no-runtime': { type: 'boolean' } },
});
if (!args.out) throw new Error('usage: node scripts/package.mjs [--target T [--runtime DIR | --no-runtime]] --out FILE');
const target = args.target;
if (target && !PLATFORMS.targets[target]) throw new Error(`unknown target ${target}: one of ${Object.keys(PLATFORMS.targets).join(', ')}`);
const python = process.env.PYTHON ?? 'python3';

const stage = path.join(ROOT, 'out', 'vsix', target ?? 'untargeted');
fs.rmSync(stage, { recursive: true, force: true });
fs.mkdirSync(stage, { recursive: true });
stageExtension(stage);
if (target) {
  const started = Date.now();
  const runtime = path.join(stage, 'runtime');
  const source = args.runtime ?? (args['no-runtime'] ? undefined : await download(PLATFORMS.targets[target].runtime));
  const layout = source ? copyRuntime(source, runtime) : emptyRuntime(runtime);
  installPackages(layout);
  prune(runtime, layout);
  precompile(runtime, layout);
  writeNotices(runtime, layout, source);
  console.log(
    `${target}: runtime ${source ? `from ${source}` : 'absent (--no-runtime: a layout check, not a release)'}, ${mb(du(runtime))} MB unpacked, ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
}
const out = path.resolve(args.out);
fs.mkdirSync(path.dirname(out), { recursive: true }); // vsce fails on a folder that is not there yet
// vsce lists every file it packs (thousands, with a runtime): only its warnings and errors are shown.
const packed = execFileSync(process.execPath, [VSCE, 'package', '--no-dependencies', ...(target ? ['--target', target] : []), '--out', out], {
  cwd: stage,
  encoding: 'utf8',
  stdio: ['ignore', 'pipe', 'inherit'],
});
for (const line of packed.split('\n')) if (/WARNING|ERROR|DONE/.test(line)) console.log(line.trim());
console.log(`${path.basename(out)}: ${mb(fs.statSync(out).size)} MB`);

/** What every VSIX ships, with the release settings applied to package.json. */
function stageExtension(dir) {
  const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  if (process.env.PUBLISHER) manifest.publisher = process.env.PUBLISHER;
  if (process.env.REPOSITORY) {
    const home = process.env.REPOSITORY.replace(/\.git$/, '');
    Object.assign(manifest, { repository: { type: 'git', url: process.env.REPOSITORY }, bugs: { url: `${home}/issues` }, homepage: `${home}#readme` });
  }
  delete manifest.devDependencies; // the staged folder has no node_modules, and needs none
  delete manifest.scripts;
  fs.writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  for (const file of ['README.md', 'CHANGELOG.md', 'LICENSE', manifest.icon]) copy(path.join(ROOT, file), path.join(dir, file));
  for (const file of ['dist/extension.js', 'dist/webview/page.js', 'dist/webview/page.css']) copy(path.join(ROOT, file), path.join(dir, file));
  const wheels = fs.readdirSync(path.join(ROOT, 'python')).filter((f) => f.endsWith('.whl'));
  if (wheels.length !== 1) throw new Error(`python/ holds ${wheels.length} sidecar wheels: run make build`);
  for (const file of [...wheels, 'requirements.txt']) copy(path.join(ROOT, 'python', file), path.join(dir, 'python', file));
  // Everything staged ships; the repository's own .vscodeignore is for packing from the repository.
  fs.writeFileSync(path.join(dir, '.vscodeignore'), '.vscodeignore\n');
}

function copy(from, to) {
  fs.mkdirSync(path.dirname(to), { recursive: true });
  fs.copyFileSync(from, to);
}

/** The pinned runtime, downloaded once into the cache and checked against its pinned sha256. */
async function download(pin) {
  const cache = path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'ai-gateway-lm-runtimes');
  const archive = path.join(cache, decodeURIComponent(path.basename(new URL(pin.url).pathname)));
  if (!fs.existsSync(archive) || sha256(archive) !== pin.sha256) {
    fs.mkdirSync(cache, { recursive: true });
    let response;
    try {
      response = await fetch(pin.url, { signal: AbortSignal.timeout(300_000) });
    } catch (error) {
      throw new Error(`could not download the runtime (${pin.url}): ${error.cause?.message ?? error.message}. Give one with --runtime DIR.`, { cause: error });
    }
    if (!response.ok) throw new Error(`could not download the runtime (${pin.url}): ${response.status}. Give one with --runtime DIR.`);
    fs.writeFileSync(`${archive}.part`, Buffer.from(await response.arrayBuffer()));
    if (sha256(`${archive}.part`) !== pin.sha256) throw new Error(`${pin.url}: sha256 is not the pinned ${pin.sha256}`);
    fs.renameSync(`${archive}.part`, archive);
  }
  const extracted = fs.mkdtempSync(path.join(os.tmpdir(), 'agl-runtime-'));
  // The archive by its bare name, from its own folder: GNU tar (the one Git for Windows puts on PATH)
  // takes an archive named C:\… for one on a remote host "C" and fails; bsdtar reads either.
  execFileSync('tar', ['-xzf', path.basename(archive), '-C', extracted], { cwd: path.dirname(archive) });
  return path.join(extracted, 'python'); // python-build-standalone's install_only layout
}

function sha256(file) {
  return createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

/** Where things are in a runtime of this target. */
function layoutOf(runtime) {
  const windows = target.startsWith('win32');
  const minor = PLATFORMS.python;
  return {
    windows,
    executable: windows ? path.join(runtime, 'python.exe') : path.join(runtime, 'bin', 'python3'),
    stdlib: windows ? path.join(runtime, 'Lib') : path.join(runtime, 'lib', `python${minor}`),
    site: windows ? path.join(runtime, 'Lib', 'site-packages') : path.join(runtime, 'lib', `python${minor}`, 'site-packages'),
    // CPython's licence: beside python.exe on Windows (CPython's PC/layout), in the stdlib elsewhere.
    licence: windows ? path.join(runtime, 'LICENSE.txt') : path.join(runtime, 'lib', `python${minor}`, 'LICENSE.txt'),
  };
}

/** Copies an install tree, its links made files (a VSIX is a zip: links would be copies anyway). */
function copyRuntime(source, runtime) {
  const layout = layoutOf(runtime);
  fs.cpSync(source, runtime, { recursive: true, dereference: false, verbatimSymlinks: true });
  const stdlib = path.relative(runtime, layout.stdlib);
  if (!fs.existsSync(layout.stdlib)) throw new Error(`${source} is not CPython ${PLATFORMS.python} for ${target}: no ${stdlib}`);
  if (!layout.windows) {
    // bin/python3 is what the extension runs: a file, never a link; the other names go.
    const real = fs.realpathSync(path.join(runtime, 'bin', 'python3'));
    const bytes = fs.readFileSync(real);
    for (const name of fs.readdirSync(path.join(runtime, 'bin'))) fs.rmSync(path.join(runtime, 'bin', name), { force: true });
    fs.writeFileSync(layout.executable, bytes, { mode: 0o755 });
  }
  // The runtime's site-packages holds what installPackages puts there and nothing else: what a given
  // install tree had there (the build machine's packages, a .pth file that runs code at every start)
  // would ship and run in every user's sidecar. (python-build-standalone's holds only pip.)
  fs.rmSync(layout.site, { recursive: true, force: true });
  fs.mkdirSync(layout.site, { recursive: true });
  for (const file of [...walk(runtime)]) {
    if (!fs.lstatSync(file).isSymbolicLink()) continue;
    const to = path.resolve(path.dirname(file), fs.readlinkSync(file));
    fs.rmSync(file);
    // A library's versioned name (libpython3.13.so.1.0) is what the binary asks for; the bare
    // name is for linking against it, which nobody does here.
    if (/\.so$/.test(file) || !to.startsWith(runtime) || !fs.existsSync(to)) continue;
    fs.cpSync(to, file, { recursive: true });
  }
  return layout;
}

function emptyRuntime(runtime) {
  const layout = layoutOf(runtime);
  fs.mkdirSync(layout.site, { recursive: true });
  return layout;
}

/** The locked packages for exactly this target, then the sidecar: binary wheels, hashes checked. */
function installPackages(layout) {
  const spec = PLATFORMS.targets[target];
  const pins = parseLock(fs.readFileSync(path.join(ROOT, 'requirements.lock'), 'utf8')).filter((pin) => applies(pin.marker, spec.platforms[0]));
  const requirements = path.join(stage, '..', `${target}-requirements.txt`);
  fs.writeFileSync(requirements, pins.map((p) => [`${p.name}==${p.version}`, ...p.hashes.map((h) => `--hash=sha256:${h}`)].join(' ')).join('\n') + '\n');
  const minor = PLATFORMS.python.replace('.', '');
  const platform = spec.platforms.flatMap(pipPlatforms).flatMap((p) => ['--platform', p]);
  const pip = [...['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '--no-compile', '--no-deps', '--target', layout.site]];
  const only = ['--only-binary=:all:', '--implementation', 'cp', '--python-version', PLATFORMS.python, '--abi', `cp${minor}`, '--abi', 'abi3', '--abi', 'none'];
  execFileSync(python, [...pip, ...only, ...platform, '--require-hashes', '-r', requirements], { stdio: ['ignore', 'ignore', 'inherit'] });
  fs.rmSync(path.join(layout.site, 'bin'), { recursive: true, force: true });
  const wheel = fs.readdirSync(path.join(ROOT, 'python')).find((f) => f.endsWith('.whl'));
  execFileSync(python, [...pip, '--no-index', path.join(ROOT, 'python', wheel)], { stdio: ['ignore', 'ignore', 'inherit'] });
  fs.rmSync(path.join(layout.site, 'bin'), { recursive: true, force: true }); // console scripts for the build's own Python
}

/** pip expands a macOS --platform to the older versions it covers, but not a manylinux or musllinux
 * one: manylinux_2_28 also runs wheels for glibc 2.5–2.27, musllinux_1_2 those for musl 1.0–1.1. */
function pipPlatforms(tag) {
  const m = /^(manylinux_2|musllinux_1)_(\d+)_(\w+)$/.exec(tag);
  if (!m) return [tag];
  const lowest = m[1] === 'manylinux_2' ? 5 : 0;
  return Array.from({ length: Number(m[2]) - lowest + 1 }, (_, i) => `${m[1]}_${Number(m[2]) - i}_${m[3]}`);
}

/** What the sidecar never uses: tests, IDLE, Tk, pip and ensurepip, headers, static libraries,
 * manuals, stale bytecode. Unused stdlib modules that are small stay (a plugin may want them). */
function prune(runtime, layout) {
  const stdlibGone = ['test', 'idlelib', 'tkinter', 'turtledemo', 'ensurepip', 'lib2to3', 'pydoc_data', '__phello__', 'unittest/test'];
  for (const name of stdlibGone) fs.rmSync(path.join(layout.stdlib, name), { recursive: true, force: true });
  for (const name of ['pip', 'setuptools', 'wheel']) {
    for (const entry of fs.readdirSync(layout.site))
      if (entry === name || entry.startsWith(`${name}-`)) fs.rmSync(path.join(layout.site, entry), { recursive: true, force: true });
  }
  const gone = layout.windows
    ? ['include', 'libs', 'Scripts', 'tcl', 'DLLs/_tkinter.pyd', 'DLLs/tcl86t.dll', 'DLLs/tk86t.dll']
    : ['include', 'share', 'lib/pkgconfig', 'lib/tcl8', 'lib/tcl8.6', 'lib/tk8.6', 'lib/itcl4.2.4', 'lib/thread2.8.9'];
  for (const name of gone) fs.rmSync(path.join(runtime, name), { recursive: true, force: true });
  for (const file of [...walk(runtime)]) {
    const base = path.basename(file);
    // The static library (config-3.X-*/libpython3.X.a) is for embedding; tk's for Tk.
    if (/\.a$/.test(base) || /^_tkinter\./.test(base) || /^lib(tcl|tk)\d/.test(base)) fs.rmSync(file, { force: true });
  }
  for (const dir of [...walkDirs(runtime)]) if (path.basename(dir) === '__pycache__') fs.rmSync(dir, { recursive: true, force: true });
  // Debugging symbols are most of a wheel's shared objects (uvloop: 16 of 17 MB). Stripped with the
  // build machine's strip when it reads this architecture; otherwise left as they came.
  const strip = stripFor(target);
  if (strip) for (const file of [...walk(runtime)]) if (isElf(file)) execFileSync(strip, ['--strip-unneeded', file]);
}

function stripFor(t) {
  const wanted = PLATFORMS.targets[t].binary;
  if (wanted.format !== 'elf') return undefined;
  const name = wanted.arch === 'x86-64' ? 'x86_64-linux-gnu-strip' : 'aarch64-linux-gnu-strip';
  const here = { x64: 'x86-64', arm64: 'aarch64' }[os.arch()];
  for (const candidate of [name, ...(wanted.arch === here ? ['strip'] : [])]) {
    try {
      execFileSync(candidate, ['--version'], { stdio: 'ignore' });
      return candidate;
    } catch {
      /* not on this machine */
    }
  }
  return undefined;
}

function isElf(file) {
  const fd = fs.openSync(file, 'r');
  const head = Buffer.alloc(4);
  fs.readSync(fd, head, 0, 4, 0);
  fs.closeSync(fd);
  return head.equals(Buffer.from([0x7f, 0x45, 0x4c, 0x46]));
}

/** Bytecode for the stdlib and the packages, so no start compiles anything (an extension's folder
 * may not even be writable). Bytecode depends on the Python version only, so any CPython of the
 * target's minor version makes it; "unchecked-hash" keeps it valid whatever mtimes the VSIX's
 * unpacking gives the sources. Every file's: a timestamp pyc (what an import writes) is stale
 * once unpacked (a zip's times are 2 s apart; VS Code's unpacking writes its own), so a read-only
 * install compiled it again at every start, and a writable one on the first; scripts/check-vsix.mjs
 * fails a VSIX that ships one. */
function precompile(runtime, layout) {
  // This target's own runtime when this machine runs it; else COMPILE_PYTHON, the linux-x64 runtime
  // a `make vsix-platforms` staged first, or one on PATH.
  const staged = path.join(ROOT, 'out', 'vsix', 'linux-x64', 'runtime', 'bin', 'python3');
  const candidates = [layout.windows ? undefined : layout.executable, process.env.COMPILE_PYTHON, staged, `python${PLATFORMS.python}`];
  const compiler = candidates.find((candidate) => {
    if (!candidate) return false;
    try {
      return execFileSync(candidate, ['-I', '-c', 'import sys; print("%d.%d" % sys.version_info[:2])'], { encoding: 'utf8' }).trim() === PLATFORMS.python;
    } catch {
      return false;
    }
  });
  if (!compiler) {
    console.log(`${target}: no CPython ${PLATFORMS.python} here to precompile with (COMPILE_PYTHON); the first start compiles`);
    return;
  }
  const dirs = fs.existsSync(path.join(layout.stdlib, 'os.py')) ? [layout.stdlib] : [layout.site];
  if (compiler !== layout.executable) console.log(`${target}: precompiled with ${compiler}`);
  // -B: the modules compileall itself imports (re, enum, typing, multiprocessing…, from this very
  // stdlib when the compiler is the runtime) would otherwise get timestamp pycs first, which
  // compileall then keeps as up to date; -f rewrites any that are there all the same.
  execFileSync(
    compiler,
    ['-I', '-B', '-m', 'compileall', '-q', '-f', '-j', '0', '--invalidation-mode', 'unchecked-hash', '-x', 'lib2to3|/test/|bad_coding', ...dirs],
    {
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
}

/** The licences: CPython's own and each package's (its dist-info keeps its licence files), and
 * where the runtime came from. */
function writeNotices(runtime, layout, source) {
  const packages = fs
    .readdirSync(layout.site)
    .filter((entry) => entry.endsWith('.dist-info'))
    .sort()
    .map((entry) => {
      const metadata = fs.readFileSync(path.join(layout.site, entry, 'METADATA'), 'utf8');
      const field = (name) => new RegExp(`^${name}: (.*)$`, 'm').exec(metadata)?.[1] ?? '';
      const licence = field('License-Expression') || field('License') || /^Classifier: License :: (?:OSI Approved :: )?(.*)$/m.exec(metadata)?.[1];
      return `- ${field('Name')} ${field('Version')}: ${licence || 'see its licence files'} (${path.relative(runtime, path.join(layout.site, entry)).replaceAll('\\', '/')})`;
    });
  const pin = PLATFORMS.targets[target].runtime;
  const origin = !source ? 'none (a layout check)' : args.runtime ? `given to the build (${path.basename(args.runtime)})` : `${pin.url} (sha256 ${pin.sha256})`;
  fs.writeFileSync(
    path.join(runtime, 'NOTICE.md'),
    [
      `# The Python runtime of this VSIX (${target})`,
      '',
      `CPython ${PLATFORMS.python}: ${origin}. Its licence: ${path.relative(runtime, layout.licence).replaceAll('\\', '/')}.`,
      '',
      'Packages installed for this platform from requirements.lock (binary wheels, hashes checked); each one’s licence files are in its .dist-info folder:',
      '',
      ...packages,
      '',
    ].join('\n'),
  );
  fs.writeFileSync(path.join(runtime, 'manifest.json'), `${JSON.stringify({ target, python: PLATFORMS.python, runtime: source ? origin : null }, null, 2)}\n`);
}

function* walk(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* walk(full);
    else yield full;
  }
}

function* walkDirs(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const full = path.join(dir, entry.name);
    yield full;
    yield* walkDirs(full);
  }
}

function du(dir) {
  let total = 0;
  for (const file of walk(dir)) total += fs.lstatSync(file).size;
  return total;
}

function mb(bytes) {
  return (bytes / 1e6).toFixed(1);
}
