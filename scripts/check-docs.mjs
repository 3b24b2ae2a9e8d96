// `make lint`'s check that the docs name only what exists: every file, module and symbol that
// README.md, rfcs/*.md and docs/*.md write in backticks or link to. A doc that names a module or
// symbol that was renamed or removed is a bug the build catches, like a type error.
//
// What counts as a reference, in backticks or a link's target:
// - a path with a known extension, or under one of the repository's folders: it must exist (a bare
//   file name must be the name of a tracked file somewhere);
// - `module.Symbol` (or `module.Symbol.member`) where `module` is one of the sidecar's Python
//   modules or the extension's TypeScript modules: the module must define `Symbol` (and `member`).
// Files that exist only at run time or in a build (global storage, the VSIX) are listed below.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..');
const EXTENSIONS = /\.(py|ts|mjs|cjs|js|md|json|sh|css|toml|lock|png|yml|yaml|txt|sqlite3|html)$/;
const FOLDERS = /^(extension|server|tests|rfcs|scripts|bench|docs|\.ci)\//;
// Made at run time or by the build, never tracked: named in the docs on purpose.
const NOT_TRACKED = new Set([
  'models.json', // global storage: the last model list
  'token-counts.json', // global storage: token counts
  'message-counts.json', // global storage: the newest messages' counts, sealed (extension/sealed.ts)
  'accounting.json', // global storage: calibration and learned limits
  'usage.sqlite3', // global storage: the usage history
  'settings.json', // a user's or workspace's VS Code settings
  'requirements.txt', // the VSIX's copy of requirements.lock
  'remoteagent.log', // VS Code's own log
  'accounting.json.lock', // global storage: the lock beside accounting.json
]);
// Other projects' files, named where a decision rests on reading them.
const EXTERNAL = new Set([
  'agentIntent.ts', // Copilot Chat's sources
  'backgroundSummarizer.ts', // Copilot Chat's sources
  'packages/gateway/src/gateway-generation-info.ts', // vercel/ai
  'gateway-provider-options.ts', // vercel/ai
  'chatLanguageModels.json', // VS Code's file of provider groups in the user's profile
  'agentHostMain.js', // VS Code's agent host, in its bundle (RFC 0009)
  'extensions/copilot/dist/extension.js', // Copilot Chat's bundle in the host (RFC 0004)
  'src/vs/workbench/contrib/chat/browser/agentSessions/agentHost/agentHostByokLmHandler.ts', // VS Code's sources (RFC 0009)
  'server-main.js', // code-server's VS Code server, in its bundle (RFC 0009)
]);
const GENERATED = /^(dist|out|python|node_modules|\.venv)\//;

const tracked = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' }).split('\n').filter(Boolean);
const trackedSet = new Set(tracked);
const basenames = new Set(tracked.map((f) => path.basename(f)));
const folders = new Set(
  tracked.flatMap((f) =>
    f
      .split('/')
      .slice(0, -1)
      .map((_, i, parts) => parts.slice(0, i + 1).join('/')),
  ),
);

// Python: classes, functions, methods, module and class attributes, instance attributes, TypedDict keys.
const PY = /^\s*(?:async\s+def|def|class)\s+([A-Za-z_]\w*)|^\s*([A-Za-z_]\w*)\s*[:=]|self\.([A-Za-z_]\w*)\s*[:=]/gm;
// TypeScript: declarations, members, object keys.
const TS =
  /(?:class|interface|type|function|const|let|enum)\s+([A-Za-z_$][\w$]*)|^\s*(?:readonly\s+|private\s+|static\s+|async\s+|export\s+)*([A-Za-z_$][\w$]*)\s*[(:?=<]/gm;
/** Module name (`ledger`, `provider`) → the names its file defines; a name both languages use
 * (`errors`, `tokens`) holds both files' names. */
const modules = new Map();
for (const file of tracked) {
  const module = /^server\/gateway_lm\/(?:\w+\/)?(\w+)\.py$/.exec(file)?.[1] ?? /^extension\/(?:\w+\/)?(\w+)\.ts$/.exec(file)?.[1];
  if (!module) continue;
  const names = modules.get(module) ?? new Set();
  const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
  for (const match of text.matchAll(file.endsWith('.py') ? PY : TS)) for (const group of match.slice(1)) if (group) names.add(group);
  modules.set(module, names);
}

function checkPath(ref) {
  const clean = ref.replace(/[#?].*$/, '').replace(/\/$/, '');
  if (GENERATED.test(clean) || NOT_TRACKED.has(path.basename(clean)) || EXTERNAL.has(clean)) return undefined;
  if (folders.has(clean)) return undefined;
  if (clean.includes('/')) {
    if (trackedSet.has(clean) || folders.has(clean)) return undefined;
    // A path relative to the folder it lives in is named from the repository root in these docs.
    return `no file or folder '${clean}'`;
  }
  return basenames.has(clean) ? undefined : `no file named '${clean}'`;
}

// Modules that were renamed, merged or removed (issue 23): a doc naming `usagePanel.show` names a
// module no longer there, which the lookup below would take for someone else's (`vscode.lm`).
// (`protocol`, once merged into `messages`, is a module again since issue 37: `rpc/protocol.py`.)
const FORMER = new Map([
  ['models', 'catalogue'],
  ['spend', 'lookups, prices or ledger'],
  ['cli_spend', 'cli'],
  ['images', 'translate'],
  ['sidecar', 'connection'],
  ['spendTypes', 'contract or records'],
  ['usagePanel', 'dashboard'],
  ['usageHtml', 'dashboardHtml'],
  ['usageData', 'dashboardData'],
]);

function checkSymbol(ref) {
  const [module, symbol, member] = ref.split('.');
  const names = modules.get(module);
  if (!names && FORMER.has(module)) return `'${module}' is no module now (see ${FORMER.get(module)})`;
  if (!names) return undefined; // not one of our modules: `vscode.lm`, `os.environ`, …
  if (!names.has(symbol)) return `'${module}' defines no '${symbol}'`;
  if (member && !/^\w+$/.test(member)) return undefined;
  if (member && !names.has(member)) return `'${module}' defines no '${member}' (of '${symbol}')`;
  return undefined;
}

/** Every reference in a markdown text: backticked spans and local link targets. */
function* references(text) {
  const body = text.replace(/^```[\s\S]*?^```/gm, (block) => block.replace(/[^\n]/g, ' ')); // code blocks: examples
  for (const match of body.matchAll(/`([^`\n]+)`/g)) yield match[1].trim();
  for (const match of body.matchAll(/\]\(([^)\s]+)\)/g)) if (!/^[a-z]+:/.test(match[1])) yield match[1];
}

// A setting's name (`spend.maxDailyCost`) is not a module's symbol (`history.py`).
const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
const settings = new Set(Object.keys(manifest.contributes.configuration.properties).map((id) => id.replace(/^vercelAiGateway\./, '')));

// The docs to check: README.md, rfcs/ and docs/, or the files given (tests/ts/docs.test.ts).
const given = process.argv.slice(2);
const docs = given.length ? given : tracked.filter((f) => f === 'README.md' || /^(rfcs|docs)\/.*\.md$/.test(f));
const problems = [];
for (const doc of docs) {
  const lines = fs.readFileSync(path.resolve(ROOT, doc), 'utf8').split('\n');
  const text = lines.join('\n');
  for (const ref of new Set(references(text))) {
    if (/\s|^[<~$]|[*{}<>]|^https?:|^-/.test(ref) || settings.has(ref)) continue; // commands, globs, placeholders, options, settings
    const file = EXTENSIONS.test(ref.replace(/[#?].*$/, '')) || FOLDERS.test(ref) ? ref : undefined;
    const problem = file ? checkPath(file.replace(/^\.\//, '')) : /^\w+\.\w+(\.\w+)?(\(\))?$/.test(ref) ? checkSymbol(ref.replace(/\(\)$/, '')) : undefined;
    if (problem) {
      const line = lines.findIndex((l) => l.includes(ref)) + 1;
      problems.push(`${doc}:${line}: \`${ref}\`: ${problem}`);
    }
  }
}
// RFC 0001's module tables name every module of both languages, in their folders too (by file
// name): a new module without a row is a module nobody can find.
if (!given.length) {
  const architecture = fs.readFileSync(path.join(ROOT, 'rfcs/0001-architecture.md'), 'utf8');
  for (const file of tracked.filter((f) => /^server\/gateway_lm\/(?:\w+\/)?\w+\.py$|^extension\/(?:\w+\/)?\w+\.ts$/.test(f))) {
    const name = path.basename(file);
    if (!['__init__.py', '__main__.py'].includes(name) && !architecture.includes(`\`${name}\``)) {
      problems.push(`rfcs/0001-architecture.md: no row names \`${name}\` (${file})`);
    }
  }
}
if (problems.length) {
  console.error(`The docs name what does not exist (scripts/check-docs.mjs):\n${problems.join('\n')}`);
  process.exit(1);
}
console.log(`docs: ${docs.length} files, every file, module and symbol they name exists`);
