// requirements.lock's hashes, from the package index's own list of files (its JSON simple API,
// PEP 691): every wheel of each pinned version, for every platform and Python, so pip installs
// exactly these bytes (--require-hashes) wherever the lock is used.
//
//   node scripts/lock.mjs write   rewrites the hashes of the pins in requirements.lock (`make lock`)
//   node scripts/lock.mjs check   fails when the lock's hashes are not the index's, or when a target
//                                 of scripts/platforms.json (a platform VSIX, or an interpreter the
//                                 untargeted VSIX serves) has no wheel for some pin (`make check-lock`)
//
// Nothing is downloaded but the index's lists. The index is pip's own default (PIP_INDEX_URL to
// use another); PYTHON names the Python whose pip is asked.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(import.meta.dirname, '..');
const LOCK = path.join(ROOT, 'requirements.lock');
const HEADER = `# The sidecar's runtime packages at exact versions, each with the sha256 of every wheel the index
# has for it (every platform and Python): pip installs these bytes and no others (--require-hashes).
# Change a pin here, then \`make lock\` rewrites the hashes; \`make check-lock\` checks them and that
# every platform has a wheel (scripts/lock.mjs, scripts/platforms.json).
`;

/** The lock's requirements: name, version, marker and hashes, one per logical line. */
export function parseLock(text) {
  const logical = text.replace(/\\\n/g, ' ').split('\n');
  const pins = [];
  for (const line of logical) {
    const body = line.replace(/#.*/, '').trim();
    if (!body) continue;
    const match = /^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;]+)\s*(?:;\s*([^-]*?))?\s*((?:--hash=sha256:[0-9a-f]{64}\s*)*)$/.exec(body);
    if (!match) throw new Error(`requirements.lock: cannot read "${body}"`);
    const hashes = [...match[4].matchAll(/--hash=sha256:([0-9a-f]{64})/g)].map((m) => m[1]);
    pins.push({ name: match[1], version: match[2], marker: match[3]?.trim() || undefined, hashes });
  }
  return pins;
}

function normalise(name) {
  return name.toLowerCase().replace(/[-_.]+/g, '-');
}

function indexUrl() {
  if (process.env.PIP_INDEX_URL) return process.env.PIP_INDEX_URL.replace(/\/?$/, '/');
  const python = process.env.PYTHON ?? 'python3';
  const url = execFileSync(python, ['-c', 'from pip._internal.models.index import PyPI; print(PyPI.simple_url)'], { encoding: 'utf8' }).trim();
  return url.replace(/\/?$/, '/');
}

/** The wheels the index has for one pinned version: file name → sha256. */
async function indexWheels(index, pin) {
  const response = await fetch(`${index}${normalise(pin.name)}/`, {
    headers: { Accept: 'application/vnd.pypi.simple.v1+json' },
    signal: AbortSignal.timeout(60_000),
  });
  if (!response.ok) throw new Error(`${pin.name}: the index answered ${response.status}`);
  const { files } = await response.json();
  const wheels = new Map();
  for (const file of files) {
    const parsed = parseWheel(file.filename);
    if (!parsed || normalise(parsed.name) !== normalise(pin.name) || parsed.version !== pin.version || file.yanked) continue;
    if (!/^[0-9a-f]{64}$/.test(file.hashes?.sha256 ?? '')) throw new Error(`${file.filename}: the index gives no sha256`);
    wheels.set(file.filename, file.hashes.sha256);
  }
  return wheels;
}

/** A wheel's file name's parts (PEP 427), each tag a set (compressed tags: "py2.py3"). */
export function parseWheel(filename) {
  if (!filename.endsWith('.whl')) return undefined;
  const parts = filename.slice(0, -4).split('-');
  if (parts.length !== 5 && parts.length !== 6) return undefined;
  const [py, abi, platform] = parts.slice(-3).map((tag) => tag.split('.'));
  return { name: parts[0], version: parts[1], py, abi, platform };
}

/** Whether pip would install this wheel on CPython `python` ("3.13") on a platform pip names with
 * `platform` (as given to pip's --platform: manylinux_2_28_x86_64, musllinux_1_2_aarch64,
 * macosx_11_0_arm64, win_amd64). pip's own rules, for the tags PyPI's wheels use. */
export function compatible(wheel, python, platform) {
  const minor = Number(python.split('.')[1]);
  const cp = `cp3${minor}`;
  const pyOk = (tag) => tag === cp || tag === 'py3' || tag === `py3${minor}` || (/^cp3(\d+)$/.test(tag) && Number(tag.slice(3)) <= minor);
  const abiOk = (py, abi) =>
    (abi === 'none' && (py === 'py3' || py === `py3${minor}` || py === cp)) || (abi === cp && py === cp) || (abi === 'abi3' && pyOk(py) && py.startsWith('cp'));
  const tagOk = wheel.py.some((py) => pyOk(py) && wheel.abi.some((abi) => abiOk(py, abi)));
  return tagOk && wheel.platform.some((tag) => platformOk(tag, platform));
}

function platformOk(tag, target) {
  if (tag === 'any' || tag === target) return true;
  const legacy = { manylinux1: [2, 5], manylinux2010: [2, 12], manylinux2014: [2, 17] };
  const linux = /^(manylinux|musllinux)_(\d+)_(\d+)_(\w+)$/.exec(target);
  if (linux) {
    const [, family, major, minor, arch] = linux;
    const m = /^(manylinux|musllinux)_(\d+)_(\d+)_(\w+)$/.exec(tag) ?? /^(manylinux1|manylinux2010|manylinux2014)_(\w+)$/.exec(tag);
    if (!m) return false;
    if (m.length === 3) return family === 'manylinux' && m[2] === arch && atMost(legacy[m[1]], [Number(major), Number(minor)]);
    return m[1] === family && m[4] === arch && atMost([Number(m[2]), Number(m[3])], [Number(major), Number(minor)]);
  }
  const mac = /^macosx_(\d+)_(\d+)_(\w+)$/.exec(target);
  if (mac) {
    const m = /^macosx_(\d+)_(\d+)_(\w+)$/.exec(tag);
    const arches = mac[3] === 'arm64' ? ['arm64', 'universal2'] : ['x86_64', 'intel', 'fat64', 'fat3', 'universal', 'universal2'];
    return !!m && arches.includes(m[3]) && atMost([Number(m[1]), Number(m[2])], [Number(mac[1]), Number(mac[2])]);
  }
  return false;
}

function atMost([a, b], [c, d]) {
  return a < c || (a === c && b <= d);
}

/** Whether a pin applies on a platform: the lock's markers name sys_platform only. */
export function applies(marker, platform) {
  if (!marker) return true;
  const m = /^sys_platform\s*(==|!=)\s*['"](\w+)['"]$/.exec(marker);
  if (!m) throw new Error(`requirements.lock: a marker this script cannot judge: ${marker}`);
  const sysPlatform = platform.startsWith('win') ? 'win32' : platform.startsWith('macosx') ? 'darwin' : 'linux';
  return (sysPlatform === m[2]) === (m[1] === '==');
}

function format(pins) {
  const lines = pins.map((pin) => {
    const head = `${pin.name}==${pin.version}${pin.marker ? ` ; ${pin.marker}` : ''}`;
    return [head, ...pin.hashes.map((hash) => `    --hash=sha256:${hash}`)].join(' \\\n');
  });
  return `${HEADER}${lines.join('\n')}\n`;
}

async function main() {
  const mode = process.argv[2];
  if (mode !== 'write' && mode !== 'check') throw new Error('usage: node scripts/lock.mjs write|check');
  const pins = parseLock(fs.readFileSync(LOCK, 'utf8'));
  const index = indexUrl();
  const wheels = await Promise.all(pins.map((pin) => indexWheels(index, pin)));
  if (mode === 'write') {
    pins.forEach((pin, i) => (pin.hashes = [...new Set(wheels[i].values())].sort()));
    fs.writeFileSync(LOCK, format(pins));
    console.log(`requirements.lock: ${pins.length} pins, ${pins.reduce((n, p) => n + p.hashes.length, 0)} wheel hashes`);
    return;
  }
  const problems = [];
  pins.forEach((pin, i) => {
    const known = new Set(wheels[i].values());
    const locked = new Set(pin.hashes);
    if (!locked.size) problems.push(`${pin.name}==${pin.version} has no hashes: run make lock`);
    for (const hash of locked) if (!known.has(hash)) problems.push(`${pin.name}==${pin.version}: hash ${hash} is no wheel of it on the index`);
    for (const [file, hash] of wheels[i]) if (!locked.has(hash)) problems.push(`${file} is on the index but not in the lock: run make lock`);
  });
  const platforms = JSON.parse(fs.readFileSync(path.join(ROOT, 'scripts/platforms.json'), 'utf8'));
  const targets = [
    ...Object.entries(platforms.targets).map(([name, t]) => ({ name, python: platforms.python, platforms: t.platforms })),
    ...platforms.untargeted.pythons.flatMap((python) => platforms.untargeted.platforms.map((p) => ({ name: `untargeted ${p}`, python, platforms: [p] }))),
  ];
  for (const target of targets) {
    pins.forEach((pin, i) => {
      const needed = target.platforms.filter((p) => applies(pin.marker, p));
      for (const platform of needed) {
        const files = [...wheels[i].keys()].filter((file) => compatible(parseWheel(file), target.python, platform));
        if (!files.length) problems.push(`${target.name} (CPython ${target.python}, ${platform}): no wheel of ${pin.name}==${pin.version}`);
      }
    });
  }
  if (problems.length) {
    console.error(problems.join('\n'));
    process.exit(1);
  }
  console.log(`requirements.lock: ${pins.length} pins checked against the index; every one of ${targets.length} targets has a wheel for each`);
}

// Run as a command, not imported (scripts/check-vsix.mjs says why the paths are compared this way).
if (process.argv[1] && fs.realpathSync(process.argv[1]) === fs.realpathSync(fileURLToPath(import.meta.url))) await main();
