// Writes extension/contract.ts, the extension's types of the RPC seam, from the sidecar's models:
// `python -m gateway_lm.contract` prints them as one JSON Schema, json-schema-to-typescript turns
// that into TypeScript. `node scripts/gen-contract.mjs [OUT]` (default extension/contract.ts);
// PYTHON names the interpreter (default .venv/bin/python). Run by `make contract`; `make lint`
// generates to a temporary file and compares.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { compile } from 'json-schema-to-typescript';
import * as prettier from 'prettier';

const TARGET = 'extension/contract.ts';
const out = process.argv[2] ?? TARGET;
const python = process.env.PYTHON ?? '.venv/bin/python';

const HEADER = `// GENERATED FILE, DO NOT EDIT: run \`make contract\` after changing a model of the RPC seam.
// Source: server/gateway_lm/contract.py (the pydantic models and TypedDicts the sidecar reads and
// writes), through scripts/gen-contract.mjs and json-schema-to-typescript.`;

const schema = JSON.parse(execFileSync(python, ['-m', 'gateway_lm.contract'], { encoding: 'utf8' }));

// The one map between the sidecar's settings and VS Code's ids (settings.SETTING_IDS) names only
// settings that exist: ours in package.json, VS Code's own network settings (section `http`). And
// every setting of ours the extension does not keep to itself reaches the sidecar through it.
const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const declared = new Set(Object.keys(manifest.contributes.configuration.properties));
// Read by the extension alone: the interpreter it starts, how it shows thinking, what the picker offers.
const EXTENSION_ONLY = new Set(['vercelAiGateway.pythonPath', 'vercelAiGateway.thinking', 'vercelAiGateway.picker.models']);
const mapped = new Set(Object.values(schema['x-constants'].SETTING_IDS));
const problems = [
  ...[...mapped].filter((id) => !declared.has(id) && !/^http\.\w+$/.test(id)).map((id) => `SETTING_IDS names ${id}, which package.json does not declare`),
  ...[...declared]
    .filter((id) => !mapped.has(id) && !EXTENSION_ONLY.has(id))
    .map((id) => `package.json declares ${id}, which SETTING_IDS does not map (nor is it the extension's own)`),
];
if (problems.length) {
  console.error(`The setting map (server/gateway_lm/settings.py SETTING_IDS) and package.json disagree:\n${problems.join('\n')}`);
  process.exit(1);
}
const types = await compile(schema, 'RpcContract', {
  bannerComment: HEADER,
  format: false,
  unreachableDefinitions: false,
});
// The runtime values: the extension checks a kind against the closed list before trusting it, and
// applies the sidecar's bounds and secret words (contract.py's CONSTANTS, the schema's x-constants).
const kinds = schema.$defs.ErrorKind.enum;
const constants = Object.entries(schema['x-constants'])
  .map(([name, value]) => `export const ${name} = ${JSON.stringify(value)}${typeof value === 'object' ? ' as const' : ''};`)
  .join('\n');
const runtime =
  `\n/** Every ErrorKind, for checking a kind read off the wire. */\nexport const ERROR_KINDS: readonly ErrorKind[] = ${JSON.stringify(kinds)};\n` +
  `\n/** server/gateway_lm/contract.py's CONSTANTS: the sidecar's bounds and secret words, applied here too. */\n${constants}\n`;
const options = { ...(await prettier.resolveConfig(TARGET)), filepath: TARGET };
writeFileSync(out, await prettier.format(types + runtime, options));
