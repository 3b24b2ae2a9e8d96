// Resolves `require('vscode')` to the stub for tests run under plain Node.
import Module from 'node:module';
import * as path from 'node:path';

const moduleWithResolve = Module as unknown as { _resolveFilename: (request: string, ...rest: unknown[]) => string };
const original = moduleWithResolve._resolveFilename;
moduleWithResolve._resolveFilename = function (request: string, ...rest: unknown[]) {
  if (request === 'vscode') return path.join(__dirname, 'vscode-stub.js');
  return original.call(this, request, ...rest);
};
