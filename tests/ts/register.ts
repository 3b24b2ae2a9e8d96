// Loaded into every Node test process: resolves `require('vscode')` to the stub, and gives every
// test a time limit.
import Module from 'node:module';
import * as path from 'node:path';
import nodeTest from 'node:test';

const moduleWithResolve = Module as unknown as { _resolveFilename: (request: string, ...rest: unknown[]) => string };
const original = moduleWithResolve._resolveFilename;
moduleWithResolve._resolveFilename = function (request: string, ...rest: unknown[]) {
  if (request === 'vscode') return path.join(__dirname, 'vscode-stub.js');
  return original.call(this, request, ...rest);
};

// Every test and hook gets a time limit unless it sets its own: one that runs past it fails with its
// name, and its file goes on. (`make test-node` also bounds each file as a whole, --test-timeout, as
// Node applies that flag to a file's process too and would otherwise name only the file.)
const TEST_TIMEOUT_MS = Number(process.env.AI_GATEWAY_LM_TEST_TIMEOUT_MS) || 60_000;
type AnyFn = (...args: unknown[]) => unknown;
const exported = nodeTest as unknown as Record<string, AnyFn>;

function limitedTest(base: AnyFn): AnyFn {
  const limited = (...args: unknown[]): unknown => {
    const name = args.find((a) => typeof a === 'string');
    const options = args.find((a) => typeof a === 'object' && a !== null) ?? {};
    const fn = args.find((a) => typeof a === 'function');
    return base(name, { timeout: TEST_TIMEOUT_MS, ...options }, fn);
  };
  return Object.assign(limited, base); // test.skip, test.only, test.todo
}

function limitedHook(base: AnyFn): AnyFn {
  return (fn: unknown, options?: unknown) => base(fn, { timeout: TEST_TIMEOUT_MS, ...(options ?? {}) });
}

for (const name of ['test', 'it']) exported[name] = limitedTest(exported[name]);
for (const name of ['before', 'after', 'beforeEach', 'afterEach']) exported[name] = limitedHook(exported[name]);
