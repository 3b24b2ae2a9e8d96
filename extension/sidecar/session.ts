// One sidecar under one LanguageClient. vscode-languageclient restarts a crashed sidecar, but it
// has no start deadline, and once it gives up (its restart limit, or a message it cannot read) it
// answers every request "Client is not running" until VS Code restarts. A session bounds the start,
// owns every process the client spawns, and ends for good when the client would hang or give up:
// its processes are killed, requests in flight fail at once with a message that says what
// happened, and the owner starts a new session for the next request. The client's own notices
// (pop-ups and log lines in its words, with JSON-RPC codes and stacks) are not shown: each failure
// is told once, by the session, in ours (SidecarClient below).
import { ChildProcess, execFile, spawn } from 'node:child_process';
import * as readline from 'node:readline';
import {
  CloseAction,
  CloseHandlerResult,
  ErrorAction,
  ErrorCodes,
  ErrorHandlerResult,
  LanguageClient,
  LanguageClientOptions,
  Message,
  MessageTransports,
  RevealOutputChannelOn,
  State,
} from 'vscode-languageclient/node';
import type * as vscode from 'vscode';
import { bounded } from '../bounded';
import { CLIENT_ID } from '../config';
import { GatewayChatError, isCancellation } from '../errors';
import { DirectRequests } from './direct';
import { FrameReader, FrameWriter } from './frames';
import type { Method, Params, Result } from './rpc';

export interface SessionOptions {
  python: string;
  /** Before `-m gateway_lm serve`: the isolation flags (setup.ts ISOLATED). */
  pythonArgs?: readonly string[];
  clientOptions: LanguageClientOptions;
  /** From spawning to the answer to `initialize`, for the first start and each restart. */
  startTimeoutMs: number;
  /** How long a polite shutdown may take before the process is killed. */
  stopTimeoutMs: number;
  /** Restarts allowed within RESTART_WINDOW_MS, as vscode-languageclient counts them. */
  maxRestartCount: number;
  /** How long a token count is waited for (COUNT_TIMEOUT_MS unless given). */
  countTimeoutMs?: number;
  /** How long a frame cut short waits for the rest (frames.ts PARTIAL_FRAME_MS unless given). */
  partialFrameMs?: number;
  onEnd(session: SidecarSession): void;
  /** Sees each message the sidecar sends as it is read, and keeps those it handles (frames.ts):
   * `gateway/parts` reach the chat only this way. */
  take(message: Message): boolean;
}

const RESTART_WINDOW_MS = 3 * 60_000;
/** A count takes milliseconds, a 1M-character slice well under a second, a background batch waits
 * for the tokenizer to load (a few seconds): an answer not here by then is not coming. */
export const COUNT_TIMEOUT_MS = 30_000;
/** Sent past the client (direct.ts): a token count, which Copilot awaits one at a time, thousands per
 * turn. Sent without a cancellation token only: its `$/cancelRequest` is the client's. */
const DIRECT: ReadonlySet<string> = new Set<Method>(['gateway/countTokens']);
const NAME = 'The Vercel AI Gateway sidecar';
const LOGS = "run 'Vercel AI Gateway: Show Logs'";
/** What to do after a start failed; the notification carries these two as buttons (connection.ts). */
const START_AGAIN = "Run 'Vercel AI Gateway: Restart Server' to try again (the next request also does); 'Vercel AI Gateway: Show Logs' shows what it printed.";
// window/logMessage's MessageType (Error 1, Warning 2, Info 3, Log 4, Debug 5) → the channel's level.
const LOG_LEVELS = { 1: 'error', 2: 'warn', 3: 'info', 4: 'info', 5: 'debug' } as const;

/** vscode-languageclient reports its own failures through these four methods: some as a pop-up it
 * forces whatever `revealOutputChannelOn` says ("…couldn't create connection to server. Message:
 * Pending response rejected since connection got disposed Code: -32097"), others as log lines with
 * a stack ("Stopping server failed … Client is not running and can't be stopped"). Each of those
 * failures is one the session tells itself, once and in our words, so the client's are dropped. The
 * sidecar's own log lines do not come through here: the session reads them (`logged`). */
class SidecarClient extends LanguageClient {
  override error(): void {}
  override warn(): void {}
  override info(): void {}
  override debug(): void {}
}

export class SidecarSession {
  readonly client: LanguageClient;
  private readonly children = new Set<ChildProcess>();
  private readonly restarts: number[] = [];
  private ended: GatewayChatError | undefined;
  // What is waiting on the sidecar, failed at once when the session ends. Not a race with one
  // long-lived "ended" promise: each race would leave a reaction on it for the session's whole life,
  // growing with every request (rfcs/0005-performance.md, "The soak", found it).
  private readonly waiting = new Set<(reason: GatewayChatError) => void>();
  private startTimer: NodeJS.Timeout | undefined;
  private stopped: Promise<void> | undefined;
  private hasRun = false;
  private lastExit: string | undefined; // how the last process ended, for the start failure message
  private direct: DirectRequests | undefined; // of the process spawned last

  constructor(private readonly options: SessionOptions) {
    this.client = new SidecarClient(CLIENT_ID, 'Vercel AI Gateway sidecar', () => this.spawn(), {
      ...options.clientOptions,
      errorHandler: { error: (error, _message, count) => this.onError(error, count), closed: () => this.onClosed() },
      initializationFailedHandler: () => false, // no retry and no pop-up with the raw error: start() reports it once
      revealOutputChannelOn: RevealOutputChannelOn.Never,
    });
    this.client.onDidChangeState(({ newState }) => this.onState(newState));
  }

  get running(): boolean {
    return !this.ended && this.client.state === State.Running;
  }

  /** Resolves once the sidecar has answered `initialize`; ends the session otherwise. */
  async start(): Promise<void> {
    try {
      await this.untilEnd(this.client.start());
    } catch (error) {
      // A closed connection means the process is ending: wait (bounded) to tell how it ended.
      if (isConnectionGone(error)) await within(this.exited(), this.options.stopTimeoutMs);
      throw this.end(this.startFailure(error));
    }
  }

  /** Why the first start failed, as what happened to the process; a reason already given wins. */
  private startFailure(error: unknown): GatewayChatError {
    if (this.lastExit) return failure(`exited as it started (${this.lastExit}). ${START_AGAIN}`);
    if (isConnectionGone(error)) return failure(`closed its output before it answered. ${START_AGAIN}`);
    return failure(`could not start (${detail(error)}). ${START_AGAIN}`);
  }

  async request<M extends Method>(method: M, params: Params<M>, token?: vscode.CancellationToken): Promise<Result<M>> {
    if (this.ended) throw this.ended;
    const countMs = this.options.countTimeoutMs ?? COUNT_TIMEOUT_MS;
    if (!token && DIRECT.has(method) && this.direct && this.client.state === State.Running) {
      try {
        return (await this.untilEnd(this.direct.request(method, params, countMs))) as Result<M>;
      } catch (error) {
        throw this.explain(error);
      }
    }
    // An explicit `undefined` token would turn the params into a positional array.
    let sent = token ? this.client.sendRequest<Result<M>>(method, params, token) : this.client.sendRequest<Result<M>>(method, params);
    if (DIRECT.has(method)) sent = bounded(sent, countMs).catch((error: Error) => Promise.reject(unanswered(method, countMs, error))); // sent while the client starts
    try {
      return await this.untilEnd(sent);
    } catch (error) {
      throw this.explain(error);
    }
  }

  /** `promise`, or the session's end if that comes first. */
  private untilEnd<T>(promise: Promise<T>): Promise<T> {
    if (this.ended) return Promise.reject(this.ended);
    return new Promise<T>((resolve, reject) => {
      this.waiting.add(reject);
      promise.then(resolve, reject).finally(() => this.waiting.delete(reject));
    });
  }

  /** Ends the session (if it has not ended) and resolves once its processes have exited. */
  close(reason: GatewayChatError): Promise<void> {
    this.end(reason);
    return this.stopped ?? Promise.resolve();
  }

  /** The first reason wins; later calls return it. */
  private end(reason: GatewayChatError): GatewayChatError {
    if (this.ended) return this.ended;
    this.ended = reason;
    clearTimeout(this.startTimer);
    this.waiting.forEach((fail) => fail(reason));
    this.waiting.clear();
    this.stopped = this.stop();
    this.options.onEnd(this);
    return reason;
  }

  /** A connection failure, told as what happened to the sidecar; the sidecar's own errors pass. */
  private explain(error: unknown): unknown {
    if (this.ended) return this.ended;
    if (isCancellation(error) || typeof (error as { data?: { kind?: unknown } } | undefined)?.data?.kind === 'string') return error;
    if (isConnectionGone(error)) {
      return failure(`stopped while answering and is being restarted. Try again; if it keeps stopping, ${LOGS}.`);
    }
    // The client stopped for good without asking the error handler (it would answer "Client is not
    // running" from now on).
    if ((error as { code?: unknown } | undefined)?.code === ErrorCodes.ConnectionInactive || this.client.state === State.StartFailed) {
      return this.end(failure(`is not running. The next request starts it again; if it keeps stopping, ${LOGS}.`));
    }
    return error;
  }

  private onState(state: State): void {
    clearTimeout(this.startTimer);
    if (this.ended) return;
    if (state === State.Starting) {
      const seconds = Math.round(this.options.startTimeoutMs / 1000);
      this.startTimer = setTimeout(() => this.end(failure(`did not start within ${seconds} s and was stopped. ${START_AGAIN}`)), this.options.startTimeoutMs);
    }
    if (state === State.Running) this.hasRun = true;
    // A restart the client attempted by itself failed: it would answer "Client is not running" from
    // now on. (A first start that fails is told by start().)
    if (state === State.StartFailed && this.hasRun) {
      this.end(
        failure(
          `could not be restarted${this.lastExit ? ` (it exited with ${this.lastExit})` : ''}. The next request starts it again; if it keeps failing, ${LOGS}.`,
        ),
      );
    }
  }

  /** Read errors (unframed output, invalid JSON; no count) mean the stream can no longer be
   * trusted; write errors (counted) are told and tolerated a few times. */
  private onError(error: Error, count: number | undefined): ErrorHandlerResult {
    if (count === undefined) {
      const next = this.hasRun ? `The next request starts a new one; ${LOGS} for details.` : START_AGAIN;
      this.end(failure(`sent output that is not JSON-RPC (${detail(error)}) and was stopped. ${next}`));
    } else if (count > 3) {
      this.end(failure(`could not be written to (${detail(error)}) and was stopped. The next request starts a new one; ${LOGS} for details.`));
    } else {
      this.client.outputChannel.warn(`Could not write to the sidecar (${detail(error)}).`);
    }
    return { action: ErrorAction.Continue, handled: true };
  }

  private onClosed(): CloseHandlerResult {
    // Before the first start succeeded, start() tells what happened; retrying at once would not help.
    if (this.ended || !this.hasRun) return { action: CloseAction.DoNotRestart, handled: true };
    const now = Date.now();
    this.restarts.push(now);
    while (this.restarts.length && now - this.restarts[0] > RESTART_WINDOW_MS) this.restarts.shift();
    if (this.restarts.length <= this.options.maxRestartCount) {
      this.client.outputChannel.warn('The sidecar stopped; it is being restarted.');
      return { action: CloseAction.Restart, handled: true };
    }
    const times = this.options.maxRestartCount + 1;
    this.end(
      failure(`stopped ${times} times within 3 minutes, so it is not restarted by itself. The next request starts a new one; ${LOGS} to see why it stops.`),
    );
    return { action: CloseAction.DoNotRestart, handled: true };
  }

  /** The client spawns through here (first start and its own restarts), so every process is known.
   * Its output is read by a FrameReader; its stderr is logged line by line, as the client would. */
  private async spawn(): Promise<MessageTransports> {
    const child = await this.spawnProcess();
    this.client.outputChannel.info(`Starting the sidecar: ${this.options.python} (pid ${child.pid}).`);
    readline.createInterface({ input: child.stderr!, crlfDelay: Infinity }).on('line', (line) => this.client.outputChannel.error(line));
    const writer = new FrameWriter(child.stdin!);
    const direct = (this.direct = new DirectRequests(writer));
    child.stdout!.once('close', () => direct.close());
    const take = (message: Message) => direct.take(message) || this.logged(message) || this.options.take(message);
    return { reader: new FrameReader(child.stdout!, take, this.options.partialFrameMs), writer, detached: false };
  }

  /** The sidecar's log lines (`window/logMessage`), logged at their level: the client would pass
   * them through the methods SidecarClient silences. */
  private logged(message: Message): boolean {
    const { method, id, params } = message as { method?: unknown; id?: unknown; params?: { type?: unknown; message?: unknown } };
    if (method !== 'window/logMessage' || id !== undefined) return false;
    const level = LOG_LEVELS[params?.type as keyof typeof LOG_LEVELS] ?? 'info';
    if (typeof params?.message === 'string') this.client.outputChannel[level](params.message);
    return true;
  }

  private spawnProcess(): Promise<ChildProcess> {
    // The key never goes on the command line: it travels per request, or in the environment.
    const child = spawn(this.options.python, [...(this.options.pythonArgs ?? []), '-m', 'gateway_lm', 'serve'], {
      env: { ...process.env, PYTHONUTF8: '1' },
      windowsHide: true,
    });
    this.children.add(child);
    child.once('exit', (code, signal) => {
      this.children.delete(child);
      this.lastExit = code === null ? `signal ${signal}` : `code ${code}`;
    });
    child.on('error', () => undefined); // reported by the promise below, or by the closed stream
    if (this.ended) kill(child);
    return new Promise((resolve, reject) => {
      child.once('spawn', () => resolve(child));
      child.once('error', (error) => {
        this.children.delete(child); // never started, so never exits
        reject(new Error(`${this.options.python}: ${error.message}`));
      });
    });
  }

  /** A polite shutdown first (the sidecar saves what it learned as it exits), then a kill for
   * whatever is left; each step bounded. */
  private async stop(): Promise<void> {
    const limit = this.options.stopTimeoutMs;
    if (this.client.state === State.Running) {
      await within(
        this.client.stop(limit).then(
          () => this.exited(),
          () => undefined,
        ),
        limit,
      );
    }
    this.children.forEach(kill);
    await within(this.exited(), limit);
  }

  private exited(): Promise<void> {
    return Promise.all([...this.children].map((child) => new Promise((resolve) => child.once('exit', resolve)))).then(() => undefined);
  }
}

function isConnectionGone(error: unknown): boolean {
  return (error as { code?: unknown } | undefined)?.code === ErrorCodes.PendingResponseRejected;
}

function failure(what: string): GatewayChatError {
  return new GatewayChatError(`${NAME} ${what}`, 'sidecar', null);
}

/** The first line of an error, bounded: connection errors can quote whatever the process printed. */
function detail(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  const line = text.split('\n')[0].trim();
  return line.length > 160 ? `${line.slice(0, 160)}…` : line;
}

function kill(child: ChildProcess): void {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  // On Windows a venv's python.exe is a launcher with the real interpreter as its child.
  if (process.platform === 'win32') execFile('taskkill', ['/T', '/F', '/PID', String(child.pid)], () => undefined);
  else child.kill('SIGKILL');
}

/** Waits for `promise`, at most `ms`: past that the step after it runs anyway. */
async function within(promise: Promise<unknown>, ms: number): Promise<void> {
  await bounded(promise, ms).catch(() => undefined);
}

/** A count not answered in time: bounded()'s rejection in words, other failures as they are. */
function unanswered(method: string, ms: number, error: Error): Error {
  return /^no answer in /.test(error.message) ? new Error(`The sidecar did not answer ${method} within ${ms / 1000} s.`) : error;
}
