// Lets code-server 4.106.3's postinstall (VS Code 1.106.3) install from the npm registry alone.
// Usage: node registry-only.mjs <code-server>/lib/vscode
//
// VS Code 1.106 pins @parcel/watcher to a GitHub commit (1ca032a, "Don't show error messages when
// checking if watchman is available"), in lib/vscode and in lib/vscode/extensions; npm fetches it
// with git, which a machine that reaches only the registries cannot. 2.5.4 is the first release on
// npm that contains that commit, with prebuilt binaries (@parcel/watcher-linux-x64-glibc).
// npm 11 also runs a dependency's install scripts only when package.json allows them: allow the
// native modules VS Code builds, and not @vscode/ripgrep's, which downloads rg from GitHub (the
// setup script links Debian's instead).
import * as fs from 'node:fs';
import * as path from 'node:path';

const WATCHER = '@parcel/watcher';
const PINNED = 'parcel-bundler/watcher#1ca032aa8339260a8a3bcf825c3a1a71e3e43542';
const FROM_NPM = '2.5.4';
const NATIVE = ['@parcel/watcher', '@vscode/deviceid', '@vscode/spdlog', '@vscode/windows-ca-certs', '@vscode/windows-process-tree',
  '@vscode/windows-registry', 'kerberos', 'native-watchdog', 'node-pty'];

const readJson = (file) => JSON.parse(fs.readFileSync(file, 'utf8'));
const writeJson = (file, value) => fs.writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);

/** Points the pinned dependency at npm in package.json and the shrinkwrap's root; drops its
 * locked GitHub entry so that npm resolves it (and its dependencies) from the registry. */
function unpinWatcher(folder) {
  const manifest = readJson(path.join(folder, 'package.json'));
  const shrinkwrap = readJson(path.join(folder, 'npm-shrinkwrap.json'));
  for (const deps of [manifest.dependencies, manifest.devDependencies, shrinkwrap.packages[''].dependencies, shrinkwrap.packages[''].devDependencies]) {
    if (deps?.[WATCHER] === undefined) continue;
    if (deps[WATCHER] !== PINNED) throw new Error(`${folder}: ${WATCHER} is '${deps[WATCHER]}', expected '${PINNED}'`);
    deps[WATCHER] = FROM_NPM;
  }
  delete shrinkwrap.packages[`node_modules/${WATCHER}`];
  return { manifest, shrinkwrap };
}

const root = process.argv[2];
if (!root || !fs.existsSync(path.join(root, 'npm-shrinkwrap.json'))) throw new Error(`not a VS Code folder: ${root}`);
for (const folder of [root, path.join(root, 'extensions')]) {
  const { manifest, shrinkwrap } = unpinWatcher(folder);
  if (folder === root) manifest.allowScripts = { ...Object.fromEntries(NATIVE.map((name) => [name, true])), '@vscode/ripgrep': false };
  writeJson(path.join(folder, 'package.json'), manifest);
  writeJson(path.join(folder, 'npm-shrinkwrap.json'), shrinkwrap);
  console.log(`registry-only: ${folder}: ${WATCHER} ${FROM_NPM} from npm`);
}
