// The smoke test of a built VSIX on the machine it is for (issue 41 §4): its own Python, started by
// the extension's own code (extension/sidecar/setup.ts bundledRuntime for the command,
// extension/sidecar/session.ts SidecarSession to spawn it with the same arguments, environment and
// windowsHide, over the same frames), answers `initialize`, lists the fake gateway's models, streams a
// chat, and stops a cancelled chat, closing its upstream connection; then shuts down. Each step has its
// own time limit; the first failure names its step and exits 1. Against tests/fake_gateway.py on
// loopback: no network, no key.
//
//   out/tests/ts/smoke.js FILE.vsix | DIR | --python PY    (node, with out/tests/ts/register.js preloaded by --require)
//
// FILE.vsix is unpacked first; DIR is an unpacked extension folder; --python runs a Python that has
// the sidecar installed (the development venv) instead of a VSIX's. The fake gateway runs in
// GATEWAY_LM_PYTHON (else .venv/bin/python), which needs the sidecar's packages. Built by `npx tsc -p
// tests/ts`; `make smoke-vsix` builds the linux-x64 VSIX and runs it; CI runs it on each runner
// (.github/workflows/test.yml).
import type { ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import type * as vscode from 'vscode';
import { CancellationTokenSource } from 'vscode-jsonrpc/node';
import { bounded } from '../../extension/bounded';
import type { ChatParams, StreamPart } from '../../extension/contract';
import { GatewayChatError, isCancellation } from '../../extension/errors';
import { sidecarSettings } from '../../extension/sidecar/connection';
import { PartsRouter } from '../../extension/sidecar/rpc';
import { SidecarSession } from '../../extension/sidecar/session';
import { bundledRuntime, SidecarCommand } from '../../extension/sidecar/setup';
import { ROOT, startGateway, TEST_KEY } from './real';
import * as stub from './vscode-stub';

export interface SmokeOptions {
  /** The sidecar's Python and what goes before `-m gateway_lm serve`. */
  command: SidecarCommand;
  /** The fake gateway's base URL (startGateway). */
  gatewayUrl: string;
  /** The sidecar's state folder (its usage history): a fresh one. */
  stateDir: string;
  /** Spawn to `initialize` answered: a first start compiles nothing (the VSIX carries bytecode), but
   * a cold CI runner with an antivirus scanning every file it opens can take many seconds. */
  startTimeoutMs?: number;
  /** Each later step. */
  stepTimeoutMs?: number;
  /** Each step, as it passes. */
  report?: (line: string) => void;
}

/** A failed step, named; `log` is what the session and the sidecar wrote (its stderr included). */
export class SmokeFailure extends Error {
  constructor(
    readonly step: string,
    message: string,
    readonly log: readonly string[],
  ) {
    super(`${step}: ${message}`);
  }
}

const ANSWER = 'Hello from the fake gateway.'; // tests/fake_gateway.py ANSWER

export async function smoke(options: SmokeOptions): Promise<void> {
  const stepMs = options.stepTimeoutMs ?? 30_000;
  const report = options.report ?? (() => undefined);
  const channel = new stub.LogOutputChannel('smoke');
  const router = new PartsRouter();
  stub.settings['vercelAiGateway.baseUrl'] = `${options.gatewayUrl}/v1`;
  stub.settings['vercelAiGateway.maxRetries'] = 0;
  let ended: GatewayChatError | undefined;
  // As extension/sidecar/connection.ts starts one: its settings, its router, the session's own spawn.
  const session = new SidecarSession({
    python: options.command.command,
    pythonArgs: options.command.args,
    initializationOptions: { settings: sidecarSettings(options.stateDir) },
    log: channel,
    startTimeoutMs: options.startTimeoutMs ?? 60_000,
    stopTimeoutMs: 5_000,
    maxRestartCount: 0, // a crash is a failure here, not something to recover from
    attach: (connection) => router.attach(connection),
    onEnd: () => undefined,
  });
  const step = async <T>(name: string, ms: number, run: () => Promise<T>): Promise<T> => {
    const started = Date.now();
    try {
      const result = await bounded(run(), ms);
      report(`ok ${name} (${Date.now() - started} ms)`);
      return result;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new SmokeFailure(name, /^no answer in /.test(message) ? `no answer within ${ms / 1000} s` : message, channel.lines);
    }
  };
  try {
    await step('initialize', (options.startTimeoutMs ?? 60_000) + 5_000, () => session.start());
    await step('gateway/models', stepMs, async () => {
      const { models } = await session.request('gateway/models', { apiKey: TEST_KEY });
      const ids = (Array.isArray(models) ? models : []).map((m) => m.id);
      if (!ids.includes('fake/text')) throw new Error(`the fake gateway's models were not listed (got ${JSON.stringify(ids).slice(0, 200)})`);
    });
    await step('gateway/chat, streamed', stepMs, async () => {
      // ttfp: the gateway pauses after the first word, so the answer comes in more than one notification.
      const { batches, result } = await chat(session, router, 'smoke-stream', 'fake/text', '[scenario:ttfp] hi');
      const text = batches
        .flat()
        .map((part) => (part.type === 'text' ? part.value : ''))
        .join('');
      if (text !== ANSWER) throw new Error(`the answer was ${JSON.stringify(text)}, not ${JSON.stringify(ANSWER)}`);
      if (batches.length < 2) throw new Error(`the answer came in ${batches.length} notification, not streamed`);
      if (result.finishReason !== 'stop') throw new Error(`finish reason ${JSON.stringify(result.finishReason)}`);
    });
    await step('gateway/chat, cancelled', stepMs, async () => {
      // slow: 400 words 20 ms apart (8 s); cancelled at its first part, it ends at once and the
      // sidecar closes the gateway connection, which the gateway records.
      const source = new CancellationTokenSource();
      let parts = 0;
      let cancelledAt = 0;
      const subscription = router.subscribe('smoke-cancel', (batch) => {
        parts += batch.length;
        if (!cancelledAt) {
          cancelledAt = Date.now();
          source.cancel();
        }
      });
      try {
        const params = chatParams('smoke-cancel', 'fake/text', '[scenario:slow] go');
        await session.request('gateway/chat', params, source.token as unknown as vscode.CancellationToken).catch((error: unknown) => {
          if (!isCancellation(error)) throw error;
        });
      } finally {
        subscription.dispose();
      }
      if (!cancelledAt) throw new Error('the chat ended before any part arrived');
      const took = Date.now() - cancelledAt;
      if (took > 3_000) throw new Error(`the chat ended ${took} ms after it was cancelled`);
      if (parts >= 400) throw new Error(`all ${parts} parts arrived: the cancel did not stop the stream`);
      const closed = await closedUpstream(options.gatewayUrl, 5_000);
      if (!closed) throw new Error('the gateway never saw its connection close');
    });
    await step('shutdown', 15_000, async () => {
      ended = new GatewayChatError('The smoke test is over.', 'sidecar', null);
      await session.close(ended);
    });
  } finally {
    // After a failed step too, the process is gone before the failure is told: on Windows a running
    // python.exe would keep its unpacked folder from being removed.
    if (!ended) await bounded(session.close(new GatewayChatError('The smoke test failed.', 'sidecar', null)), 10_000).catch(() => undefined);
  }
}

function chatParams(requestId: string, model: string, text: string): ChatParams {
  return { model, requestId, apiKey: TEST_KEY, messages: [{ role: 1, content: [{ type: 'text', value: text }] }] };
}

async function chat(session: SidecarSession, router: PartsRouter, requestId: string, model: string, text: string) {
  const batches: StreamPart[][] = [];
  const subscription = router.subscribe(requestId, (parts) => batches.push(parts));
  try {
    const result = await session.request('gateway/chat', chatParams(requestId, model, text));
    return { batches, result };
  } finally {
    subscription.dispose();
  }
}

/** Whether the gateway's last `fake/text` request saw its client go away, within `ms`. */
async function closedUpstream(gatewayUrl: string, ms: number): Promise<boolean> {
  for (const deadline = Date.now() + ms; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
    const log = (await (await fetch(`${gatewayUrl}/_requests`, { signal: AbortSignal.timeout(5_000) })).json()) as { client_closed_at?: number }[];
    if (log.at(-1)?.client_closed_at) return true;
  }
  return false;
}

/** The sidecar command of an unpacked extension folder: the Python it carries, as the extension finds it. */
export async function carried(extensionDir: string): Promise<SidecarCommand> {
  const command = await bundledRuntime(extensionDir);
  if (!command) throw new SmokeFailure('runtime', `${extensionDir} carries no Python for this platform (runtime/)`, []);
  return command;
}

async function main(argv: string[]): Promise<number> {
  const children: ChildProcess[] = [];
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agl-smoke-'));
  try {
    let command: SidecarCommand;
    if (argv[0] === '--python' && argv[1]) {
      command = { command: argv[1], args: [] };
    } else if (argv.length === 1 && fs.existsSync(argv[0])) {
      let dir = argv[0];
      if (fs.statSync(dir).isFile()) {
        const { unpackVsix } = (await import(pathToFileURL(path.join(ROOT, 'scripts/check-vsix.mjs')).href)) as {
          unpackVsix: (file: string, to: string) => string;
        };
        dir = unpackVsix(argv[0], path.join(scratch, 'extension'));
      }
      command = await carried(dir);
    } else {
      console.error('usage: node --require ./out/tests/ts/register.js out/tests/ts/smoke.js FILE.vsix | DIR | --python PY');
      return 2;
    }
    delete process.env.AI_GATEWAY_API_KEY; // the key travels per request, as in VS Code
    console.log(`smoke: ${command.command} ${command.args.join(' ')}`.trim());
    const gatewayUrl = await bounded(startGateway(children), 30_000).catch(() => {
      throw new SmokeFailure('fake gateway', 'did not print its port within 30 s', []);
    });
    await smoke({ command, gatewayUrl, stateDir: path.join(scratch, 'state'), report: (line) => console.log(`smoke: ${line}`) });
    console.log('smoke: passed');
    return 0;
  } catch (error) {
    if (error instanceof SmokeFailure) {
      console.error(`smoke: FAILED at ${error.message}`);
      if (error.log.length) console.error(`smoke: what the sidecar and its session logged:\n${error.log.join('\n')}`);
    } else {
      console.error(`smoke: FAILED: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    }
    return 1;
  } finally {
    children.forEach((child) => child.kill());
    // On Windows a process that just exited can still hold its files for a moment.
    fs.rmSync(scratch, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  }
}

if (require.main === module) {
  void main(process.argv.slice(2)).then((code) => process.exit(code));
}
