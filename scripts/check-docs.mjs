// `make lint`'s check that the docs and the code's comments name only what exists, and that a
// measured figure lives in one place. A doc or comment that names a renamed or removed file, or
// repeats a number the benchmark has since changed, is a bug the build catches, like a type error.
//
// The docs (the README and CONTRIBUTING files at the root, the .md files of rfcs/, docs/ and
// bench/): what they write in backticks or link to.
// - a path with a known extension, or under one of the repository's folders: it must exist (a bare
//   file name must be the name of a tracked file somewhere);
// - `module.Symbol` (or `module.Symbol.member`) where `module` is one of the sidecar's Python
//   modules or the extension's TypeScript modules: the module must define `Symbol` (and `member`).
//
// The comments of the code in extension/, server/, tests/, bench/ and scripts/ (TypeScript and
// JavaScript comments as TypeScript's parser finds them, Python comments and docstrings, shell
// comments, a JSON file's "comment"). Comments name paths without backticks, so there a path is only
// what cannot be anything else:
// - a word under one of the repository's top folders (`extension/`, `tests/e2e/` …) or starting
//   with a dot and a slash: it must exist, read from the root (a dotted one, from the comment's
//   folder); `rfcs/` and an RFC's four digits alone name that RFC;
// - a word ending in a known extension (`spend/ledger.py`, `ui.mjs`): the end of a tracked path.
//   Compiled output is named by its source (`fake-sidecar.js` is `fake-sidecar.ts`'s).
//   Slashed words without an extension (`gateway/countTokens`, `openai/gpt-5`) are not paths.
// And a measured figure: a number with a unit of time (ns, µs, ms, s), of size (KB … GiB) or a
// ratio (a number and ×, not a product such as 3 × $15), when it is a time written as approximate
// (a tilde, "about") or any of them in a sentence that measures: a word of measurement (took,
// measured, median, p50, faster, "of CPU", "per event" …), a growth (a plus sign before a size) or
// a time for a workload (seconds for so many items). Bounds, timeouts and sizes the code chooses
// ("up to 240 s", "a 16 MiB cap") are none of these. A measured figure lives in
// rfcs/0005-performance.md: the comment cites the section that holds it (`rfcs/0005, "The round
// trip"`) and, better, leaves the number to it; a number it does repeat must be in that section.
//
// Both: a section cited in quotes after an RFC (`RFC 0004, "One budget unit"`) must begin one of
// that RFC's headings or bold titles, in any case.
//
// Files that exist only at run time or in a build (global storage, the VSIX) and other projects'
// files are listed below, each with where it lives: the one place to allow a name that is not ours.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(import.meta.dirname, '..');
const EXTENSIONS = /\.(py|ts|mjs|cjs|js|md|json|sh|css|toml|lock|png|yml|yaml|txt|sqlite3|html)$/;
const FOLDERS = /^(extension|server|tests|rfcs|scripts|bench|docs|\.ci)\//;
// The code whose comments are read, and the one home of a measured figure.
const CODE = /^(extension|server|tests|bench|scripts)\/.*\.(ts|mjs|cjs|js|py|sh|json)$/;
const FIGURES_HOME = 'rfcs/0005-performance.md';
// Made at run time or by the build, never tracked: named on purpose.
const NOT_TRACKED = new Set([
  'models.json', // global storage: the last model list
  'token-counts.json', // global storage: token counts
  'message-counts.json', // global storage: the newest messages' counts, sealed (extension/counts/sealed.ts)
  'accounting.json', // global storage: calibration and learned limits
  'usage.sqlite3', // global storage: the usage history
  'settings.json', // a user's or workspace's VS Code settings
  'requirements.txt', // the VSIX's copy of requirements.lock
  'remoteagent.log', // VS Code's own log
  'accounting.json.lock', // global storage: the lock beside accounting.json
  'manifest.json', // a platform VSIX's runtime/manifest.json (scripts/package.mjs)
]);
// Made at run time, by pattern: the files the e2e agent reads in its workspace (tests/fake_agent.py).
const NOT_TRACKED_LIKE = [/^part-\d\d\.txt$/];
// Other projects' files, named where a decision rests on reading them.
const EXTERNAL = new Set([
  'agentIntent.ts', // Copilot Chat's sources
  'backgroundSummarizer.ts', // Copilot Chat's sources
  'extChatEndpoint.ts', // Copilot Chat's sources
  'packages/gateway/src/gateway-generation-info.ts', // vercel/ai
  'gateway-provider-options.ts', // vercel/ai
  'packages/gateway/src/gateway-model-metrics.ts', // vercel/ai (PR #16721): the model metrics endpoint (RFC 0003)
  'chatLanguageModels.json', // VS Code's file of provider groups in the user's profile
  'agentHostMain.js', // VS Code's agent host, in its bundle (RFC 0009)
  'extensions/copilot/dist/extension.js', // Copilot Chat's bundle in the host (RFC 0004)
  'src/vs/workbench/contrib/chat/browser/agentSessions/agentHost/agentHostByokLmHandler.ts', // VS Code's sources (RFC 0009)
  'agentHostByokLmHandler.ts', // the same file, by its name
  'platform/agentHost/common/agentHostByokLm.ts', // VS Code's sources (RFC 0009)
  'src/vs/base/common/linkedText.ts', // VS Code's sources: the links of a notification's text
  'src/vs/workbench/services/extensions/common/extensionManifestPropertiesService.ts', // VS Code's sources: how it reads a map of extension ids (RFC 0009)
  'server-main.js', // code-server's VS Code server, in its bundle (RFC 0009)
  'sysconfig.py', // CPython's standard library
  'download-metadata.json', // uv's record of python-build-standalone's releases and their sha256
  'chart.js', // the charting library the usage page bundles (npm), not a file
  'vscode-host.md', // the working notes on VS Code's extension host, outside the repository
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
// Every tail of every tracked path (`spend/ledger.py`, `ledger.py`): what a comment may name.
const tails = new Set(tracked.flatMap((f) => f.split('/').map((_, i, parts) => parts.slice(i).join('/'))));

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

/** Whether a name that is not tracked is one of the allowed ones above. */
function allowed(clean) {
  const name = path.basename(clean);
  return GENERATED.test(clean) || NOT_TRACKED.has(name) || NOT_TRACKED_LIKE.some((like) => like.test(name)) || EXTERNAL.has(clean);
}

function checkPath(ref) {
  const clean = ref.replace(/[#?].*$/, '').replace(/\/$/, '');
  if (allowed(clean) || folders.has(clean)) return undefined;
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
  for (const match of text.matchAll(/`([^`\n]+)`/g)) yield match[1].trim();
  for (const match of text.matchAll(/\]\(([^)\s]+)\)/g)) if (!/^[a-z]+:/.test(match[1])) yield match[1];
}

function squash(text) {
  return text.replace(/\s+/g, ' ').trim();
}

// Each RFC by its number: its file and its sections. A section is a heading, or a paragraph's or an
// item's bold title (`**Huge counts on the event loop.**`), with its text up to the next heading of
// the same or a higher level (a bold title's: up to the next title of any kind).
const rfcs = new Map();
for (const file of tracked.filter((f) => /^rfcs\/\d{4}-.*\.md$/.test(f))) {
  const lines = fs.readFileSync(path.join(ROOT, file), 'utf8').split('\n');
  const titles = lines.map((line) => {
    const heading = /^(#+)\s+(.*)$/.exec(line);
    if (heading) return { level: heading[1].length, title: heading[2] };
    const bold = /^(?:- |\d+\. )?\*\*([^*]+?)[.:]?\*\*/.exec(line);
    return bold ? { level: 9, title: bold[1] } : undefined;
  });
  const sections = [];
  titles.forEach((mark, i) => {
    if (!mark) return;
    const end = titles.findIndex((next, j) => j > i && next && next.level <= mark.level);
    sections.push({ title: squash(mark.title), text: lines.slice(i, end < 0 ? undefined : end).join('\n') });
  });
  rfcs.set(path.basename(file).slice(0, 4), { file, sections });
}

/** The sections a text cites (`RFC 0005, "The first part"`, `rfcs/0005-performance.md, "The first
 * part"`): those whose heading begins with the quoted name, and a problem when none does. */
function* citations(text) {
  for (const match of squash(text).matchAll(/\b(?:RFC |rfcs\/)(\d{4})(?:-[\w.-]*\.md)?(?:'s)?,? "([^"]+)"/g)) {
    const rfc = rfcs.get(match[1]);
    const name = match[2].toLowerCase();
    const sections = rfc?.sections.filter((section) => section.title.toLowerCase().startsWith(name)) ?? [];
    yield { rfc: match[1], name: match[2], sections, problem: rfc && !sections.length ? `${rfc.file} has no section "${match[2]}"` : undefined };
  }
}

// A setting's name (`spend.maxDailyCost`) is not a module's symbol (`history.py`).
const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
const settings = new Set(Object.keys(manifest.contributes.configuration.properties).map((id) => id.replace(/^vercelAiGateway\./, '')));

/** The line of `offset` in `text`, from 1. */
function lineOf(text, offset) {
  return text.slice(0, Math.max(0, offset)).split('\n').length;
}

function checkDoc(doc, problems) {
  const raw = fs.readFileSync(path.resolve(ROOT, doc), 'utf8');
  const text = raw.replace(/^```[\s\S]*?^```/gm, (block) => block.replace(/[^\n]/g, ' ')); // code blocks: examples
  for (const ref of new Set(references(text))) {
    if (/\s|^[<~$]|[*{}<>]|^https?:|^-/.test(ref) || settings.has(ref)) continue; // commands, globs, placeholders, options, settings
    const file = EXTENSIONS.test(ref.replace(/[#?].*$/, '')) || FOLDERS.test(ref) ? ref : undefined;
    // A doc in a folder (bench/RESULTS.md) links from its folder: `../rfcs/…` is read from there.
    const local = file && /^\.\.?\//.test(file) ? path.posix.normalize(path.posix.join(path.posix.dirname(doc), file)) : file;
    const problem = file ? checkPath(local.replace(/^\.\//, '')) : /^\w+\.\w+(\.\w+)?(\(\))?$/.test(ref) ? checkSymbol(ref.replace(/\(\)$/, '')) : undefined;
    if (problem) problems.push(`${doc}:${lineOf(raw, raw.indexOf(ref))}: \`${ref}\`: ${problem}`);
  }
  for (const cited of citations(text)) if (cited.problem) problems.push(`${doc}:${lineOf(raw, raw.indexOf(`"${cited.name.split(' ')[0]}`))}: ${cited.problem}`);
}

// ---- Comments ----

/** A TypeScript or JavaScript file's comments, as its parser sees them (not a `//` in a string). */
function* scriptComments(file, text) {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, file.endsWith('.ts') ? ts.ScriptKind.TS : ts.ScriptKind.JS);
  const seen = new Set();
  const stack = [source];
  while (stack.length) {
    const node = stack.pop();
    for (const range of [...(ts.getLeadingCommentRanges(text, node.pos) ?? []), ...(ts.getTrailingCommentRanges(text, node.end) ?? [])]) {
      if (!seen.has(range.pos)) yield { start: range.pos, end: range.end };
      seen.add(range.pos);
    }
    stack.push(...node.getChildren(source));
  }
}

/** A Python file's comments and docstrings (a triple-quoted string that begins a line). */
function* pythonComments(text) {
  let lineStart = true;
  for (let i = 0; i < text.length;) {
    const c = text[i];
    if (c === '#') {
      const end = text.indexOf('\n', i) < 0 ? text.length : text.indexOf('\n', i);
      yield { start: i, end };
      i = end;
    } else if (/\s|\\/.test(c)) {
      lineStart ||= c === '\n';
      i++;
    } else {
      const string = /^[rRbBuUfF]{0,2}('''|"""|'|")/.exec(text.slice(i, i + 5));
      if (string) {
        const quote = string[1];
        let j = i + string[0].length;
        while (j < text.length && !text.startsWith(quote, j) && !(quote.length === 1 && text[j] === '\n')) j += text[j] === '\\' ? 2 : 1;
        const end = Math.min(text.length, j + quote.length);
        if (quote.length === 3 && lineStart) yield { start: i, end };
        i = end;
      } else {
        i += /^[\w.]*/.exec(text.slice(i, i + 100))[0].length || 1;
      }
      lineStart = false;
    }
  }
}

/** A shell script's comments: `#` at a line's start or after a space, before any quote. */
function* shellComments(text) {
  let offset = 0;
  for (const line of text.split('\n')) {
    const hash = /(^|\s)#(?!!)/.exec(line);
    if (hash && !/['"]/.test(line.slice(0, hash.index))) yield { start: offset + hash.index, end: offset + line.length };
    offset += line.length + 1;
  }
}

/** A JSON file's `"comment"` strings. */
function* jsonComments(text) {
  for (const match of text.matchAll(/"\$?comment"\s*:\s*"(?:[^"\\]|\\.)*"/g)) yield { start: match.index, end: match.index + match[0].length };
}

const COMMENTS = [
  [/\.(ts|mjs|cjs|js)$/, scriptComments],
  [/\.py$/, (_, text) => pythonComments(text)],
  [/\.sh$/, (_, text) => shellComments(text)],
  [/\.json$/, (_, text) => jsonComments(text)],
];

/** A file's comments, a run of them on consecutive lines as one: `{ line, text }`, markers blanked. */
function comments(file, text) {
  const found = [...(COMMENTS.find(([kind]) => kind.test(file))?.[1](file, text) ?? [])].sort((a, b) => a.start - b.start);
  const runs = [];
  for (const range of found) {
    const last = runs.at(-1);
    if (last && /^[ \t]*\r?\n?[ \t]*$/.test(text.slice(last.end, range.start))) last.end = range.end;
    else runs.push({ ...range });
  }
  return runs.map((run) => ({
    line: lineOf(text, run.start),
    text: text
      .slice(run.start, run.end)
      .replace(/^([ \t]*)(\/\/+|\/\*+|\*+(?!\/)|#+)/gm, (_, space, marker) => space + ' '.repeat(marker.length))
      .replace(/\*+\/|"""|'''/g, (end) => ' '.repeat(end.length)),
  }));
}

// A path in a comment: a word under a top folder, ending in a known extension, or `./`, `../`.
const PATH_WORD = /(?<![\w./@~$-])(?:\.{1,2}\/)*[\w@-][\w.@-]*(?:\/[\w.@-]+)*\/?(?![\w/])/g;

function checkCommentPath(word, file) {
  const ref = word.replace(/\.+$/, '');
  const relative = /^\.{1,2}\//.test(ref);
  if (!relative && !FOLDERS.test(ref) && !EXTENSIONS.test(ref)) return undefined;
  const clean = relative ? path.relative(ROOT, path.resolve(path.dirname(path.resolve(ROOT, file)), ref)) : ref.replace(/\/$/, '');
  if (/^rfcs\/\d{4}$/.test(clean)) return rfcs.has(clean.slice(5)) ? undefined : `no RFC ${clean.slice(5)}`;
  if (allowed(clean) || trackedSet.has(clean) || folders.has(clean)) return undefined;
  if (FOLDERS.test(clean) || relative) return `no file or folder '${clean}'`;
  if (tails.has(clean) || tails.has(clean.replace(/\.js$/, '.ts'))) return undefined; // the end of a path; compiled output by its source
  return clean.includes('/') ? `no path ends in '${clean}'` : `no file named '${clean}'`;
}

// A figure: a number (or a range) with a unit of time or size, or a ratio (`3 × $15` is a product).
const FIGURE =
  /(?<![\w.,])(\d[\d,]*(?:\.\d+)?(?:\s?[–-]\s?\d[\d,]*(?:\.\d+)?)?)(?:\s?(?:ns|µs|us|ms|s|KB|kB|MB|GB|KiB|MiB|GiB)(?![\w/])|\s?×(?!\s*[$\d])|x(?!\w))/g;
const TIME = /(?:ns|µs|us|ms|s)$/;
const APPROXIMATE = /(?:[~≈]|\b(?:about|around|roughly)\s)\s*$/;
// A sentence that measures: a word of measurement, a growth (a plus sign before a size), or a time
// for a workload (seconds for so many items). Not "cost": a comment reasons with it (eight times the
// items cost eight times as much when linear) as often as it reports one.
const MEASURING = new RegExp(
  [
    /\b(?:measured|measures|took|takes|taking|spent|spends|p50|p95|p99|median|mean|average|faster|slower|profiled)\b/,
    /\bof (?:the [\w' ]+?'s |its |our )?CPU\b/,
    /\bper (?:event|part|first part|line|request|walk|pass|turn|start)\b/,
    /(?<![\w.])\+\d[\d,.]*\s?(?:KB|MB|GB|KiB|MiB|GiB)\b/,
    /\d\s?(?:ns|µs|ms|s) for (?:a |an )?[\d,.]+\s?[KMk]?\b/,
  ]
    .map((part) => part.source)
    .join('|'),
  'i',
);

/** The measured figures of a comment, each with its offset: a time written as approximate, or any
 * figure in a sentence that measures. */
function* measuredFigures(text) {
  for (const sentence of text.matchAll(/\S[\s\S]*?(?:[.;!?](?=\s+[A-Z(`])|$)/g)) {
    const measuring = MEASURING.test(squash(sentence[0]));
    for (const match of sentence[0].matchAll(FIGURE)) {
      const before = squash(sentence[0].slice(0, match.index));
      if (measuring || (TIME.test(match[0]) && APPROXIMATE.test(before)))
        yield { figure: squash(match[0]), number: squash(match[1]), at: sentence.index + match.index };
    }
  }
}

/** Whether a section's text holds each number of a figure (`5–6` needs 5 and 6; `1,200` is 1200). */
function holds(section, number) {
  const numbers = new Set([...section.matchAll(/\d[\d,]*(?:\.\d+)?/g)].map((match) => match[0].replace(/,/g, '')));
  return number.split(/\s?[–-]\s?/).every((n) => numbers.has(n.replace(/,/g, '')));
}

function checkCode(file, problems) {
  const text = fs.readFileSync(path.resolve(ROOT, file), 'utf8');
  const name = path.relative(ROOT, path.resolve(ROOT, file));
  for (const comment of comments(name, text)) {
    const prose = comment.text.replace(/\b[a-z][\w+.-]*:\/\/\S+/g, (url) => ' '.repeat(url.length)); // URLs
    for (const match of prose.matchAll(PATH_WORD)) {
      const problem = checkCommentPath(match[0], name);
      if (problem) problems.push(`${file}:${comment.line + lineOf(prose, match.index) - 1}: ${match[0]}: ${problem}`);
    }
    const cited = [...citations(prose)];
    for (const citation of cited) if (citation.problem) problems.push(`${file}:${comment.line}: ${citation.problem}`);
    const home = cited.filter((citation) => rfcs.get(citation.rfc)?.file === FIGURES_HOME).flatMap((citation) => citation.sections);
    for (const { figure, number, at } of measuredFigures(prose)) {
      const line = comment.line + lineOf(prose, at) - 1;
      if (!home.length) problems.push(`${file}:${line}: '${figure}' is a measured figure: cite the section of ${FIGURES_HOME} that holds it`);
      else if (!home.some((section) => holds(section.text, number)))
        problems.push(`${file}:${line}: '${figure}': no section it cites of ${FIGURES_HOME} holds ${number}`);
    }
  }
}

// What to check: the docs and the code, or the files given (tests/ts/docs.test.ts).
const given = process.argv.slice(2);
const files = given.length ? given : tracked.filter((f) => /^(README|CONTRIBUTING)\.md$|^(rfcs|docs|bench)\/.*\.md$/.test(f) || CODE.test(f));
const problems = [];
for (const file of files) (file.endsWith('.md') ? checkDoc : checkCode)(file, problems);
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
  console.error(`The docs and comments name what does not exist, or repeat a measured figure (scripts/check-docs.mjs):\n${problems.join('\n')}`);
  process.exit(1);
}
const docs = files.filter((f) => f.endsWith('.md')).length;
console.log(`docs: ${docs} docs and the comments of ${files.length - docs} files name only what exists; their measured figures cite ${FIGURES_HOME}`);
