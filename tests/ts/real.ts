// The real parts the Node tests run against: the loopback fake gateway and the sidecar over
// vscode-jsonrpc (its output read by the extension's FrameReader), and the surroundings of a test of
// the built bundle, each written once here so no test file writes the start-up twice.
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before } from 'node:test';
import type * as vscode from 'vscode';
import { createMessageConnection, MessageConnection, StreamMessageWriter } from 'vscode-jsonrpc/node';
import { activate } from '../../extension/extension';
import type { GatewayChatProvider } from '../../extension/provider';
import { FrameReader } from '../../extension/sidecar/frames';
import { PartsRouter } from '../../extension/sidecar/rpc';
import * as stub from './vscode-stub';

export const ROOT = path.resolve(__dirname, '../../..');
export const PYTHON = process.env.GATEWAY_LM_PYTHON ?? path.join(ROOT, '.venv/bin/python');

/** Starts tests/fake_gateway.py; resolves to its base URL once it prints its port. */
export function startGateway(children: ChildProcess[]): Promise<string> {
  const child = spawn(PYTHON, [path.join(ROOT, 'tests/fake_gateway.py')], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((resolve) => child.stdout.once('data', (chunk: Buffer) => resolve(`http://127.0.0.1:${/PORT (\d+)/.exec(String(chunk))![1]}`)));
}

/** Starts the real sidecar (`gateway-lm serve`) and initialises it against `gatewayUrl`, with its
 * notifications routed; no key in its environment, so the tests' own keys are the ones used. */
export async function startSidecar(children: ChildProcess[], gatewayUrl: string): Promise<{ connection: MessageConnection; router: PartsRouter }> {
  const env = { ...process.env };
  delete env.AI_GATEWAY_API_KEY;
  const sidecar = spawn(PYTHON, ['-m', 'gateway_lm', 'serve'], { env, stdio: ['pipe', 'pipe', 'inherit'] });
  children.push(sidecar);
  const router = new PartsRouter();
  // Read as the extension reads it (frames.ts), every notification through the connection.
  const connection = createMessageConnection(new FrameReader(sidecar.stdout), new StreamMessageWriter(sidecar.stdin));
  router.attach(connection);
  connection.listen();
  await connection.sendRequest('initialize', {
    processId: process.pid,
    capabilities: {},
    initializationOptions: { baseUrl: `${gatewayUrl}/v1`, settings: { maxRetries: 0 } },
  });
  void connection.sendNotification('initialized', {});
  return { connection, router };
}

/** The key the tests give as the default key (`AI_GATEWAY_API_KEY`); its list is served (rfcs/0010). */
export const TEST_KEY = 'test-key-0123456789';

export interface BundleGateway {
  /** The fake gateway's base URL (set once the file's `before` has run). */
  readonly url: string;
  /** A fresh folder (e.g. a window's global storage), removed when the file's process exits. */
  folder(prefix: string): string;
}

/** What a test file of the built bundle (activate() under the stub `vscode`) runs against, set up
 * before its tests and undone after them: the fake gateway, the stub's `baseUrl` at `path` of it
 * with no retries, the real sidecar's Python, the default key when asked, and any other settings.
 * `cleanup` runs first after the tests (e.g. disposing the window, before its folder goes). */
export function bundleGateway(options: { defaultKey?: boolean; path?: string; settings?: Record<string, unknown>; cleanup?: () => void } = {}): BundleGateway {
  const children: ChildProcess[] = [];
  const folders: string[] = [];
  // At exit, not after the tests: a closed window's last save of its counts is still in flight then,
  // and would make its folder again.
  process.once('exit', () => folders.forEach((folder) => fs.rmSync(folder, { recursive: true, force: true })));
  const settings: Record<string, unknown> = { maxRetries: 0, ...options.settings };
  let url = '';
  before(async () => {
    if (options.defaultKey) process.env.AI_GATEWAY_API_KEY = TEST_KEY;
    url = await startGateway(children);
    stub.settings['vercelAiGateway.baseUrl'] = `${url}${options.path ?? ''}/v1`;
    for (const [name, value] of Object.entries(settings)) stub.settings[`vercelAiGateway.${name}`] = value;
    process.env.AI_GATEWAY_LM_PYTHON = PYTHON;
  });
  after(() => {
    options.cleanup?.();
    children.forEach((child) => child.kill());
    if (options.defaultKey) delete process.env.AI_GATEWAY_API_KEY;
    delete process.env.AI_GATEWAY_LM_PYTHON;
    for (const name of ['baseUrl', ...Object.keys(settings)]) delete stub.settings[`vercelAiGateway.${name}`];
  });
  return {
    get url() {
      return url;
    },
    folder(prefix) {
      const folder = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
      folders.push(folder);
      return folder;
    },
  };
}

/** One window of the built bundle: activate() with `folder` as its global storage and a fresh secret
 * store, and the provider it registered with VS Code. */
export async function activateWindow(folder: string, subscriptions: { dispose(): unknown }[]): Promise<GatewayChatProvider> {
  const context = { subscriptions, secrets: new stub.SecretStorage(), globalStorageUri: { fsPath: folder } };
  await activate(context as unknown as vscode.ExtensionContext);
  return stub.registeredProviders.get('vercel-ai-gateway') as GatewayChatProvider;
}
