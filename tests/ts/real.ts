// The real parts the Node tests run against: the loopback fake gateway and the sidecar over
// vscode-jsonrpc (its output read by the extension's FrameReader), each started once here so no test
// file writes the start-up twice.
import { ChildProcess, spawn } from 'node:child_process';
import * as path from 'node:path';
import { createMessageConnection, MessageConnection, StreamMessageWriter } from 'vscode-jsonrpc/node';
import { FrameReader } from '../../extension/sidecar/frames';
import { PartsRouter } from '../../extension/sidecar/rpc';

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
  // Read as the extension reads it: parts straight to the router, the rest through the connection.
  const connection = createMessageConnection(new FrameReader(sidecar.stdout, (m) => router.take(m)), new StreamMessageWriter(sidecar.stdin));
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
