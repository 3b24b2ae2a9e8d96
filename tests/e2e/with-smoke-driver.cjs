// Starts code-server 4.133 with VS Code's smoke-test driver on: VS Code 1.133 reads a test payload
// (extensionDevelopmentPath, extensionTestsPath) only then, and that code-server has no
// --vscode-option to ask for it (4.139 has). code-server parses its command line once, here, and
// hands the parsed options whole to its server process and on to VS Code's server, which reads
// `enable-smoke-test-driver` from them: one more entry in code-server's option table is enough.
// Usage: node with-smoke-driver.cjs <code-server package folder> <code-server arguments…>
const path = require('node:path');

const [root, ...args] = process.argv.slice(2);
const entry = path.join(root, 'out/node/entry.js');
const { options } = require(path.join(root, 'out/node/cli.js'));
if (options['vscode-option']) throw new Error(`${root} has --vscode-option: use it instead`);
options['enable-smoke-test-driver'] = { type: 'boolean' };
process.argv = [process.argv[0], entry, ...args, '--enable-smoke-test-driver'];
require(entry);
