// One sidecar under one session: the process, and its JSON-RPC connection (vscode-jsonrpc's
// `createMessageConnection` on the reader and writer of frames.ts), which carries every message in
// both directions. The session owns what a language client would add and we need: spawning each
// process, `initialize`/`initialized` (the sidecar reads its settings from `initializationOptions`),
// a restart after a crash, `shutdown`/`exit`. Each start is bounded; after too many crashes, or a
// stream it can no longer trust, the session ends for good: its processes are killed, requests in
// flight fail at once with a message that says what happened, and the owner starts a new session
// for the next request. Each failure is told once, in our words (rfcs/0001-architecture.md, "When
// the sidecar hangs, crashes or writes garbage").
import { ChildProcess, execFile, spawn } from 'node:child_process';
import * as readline from 'node:readline';
import { ConnectionError, createMessageConnection, ErrorCodes, Logger, MessageConnection, Trace, Tracer } from 'vscode-jsonrpc/node';
import * as vscode from 'vscode';
import { bounded } from '../bounded';
import { SECTION, TRACE_SERVER } from '../config';
import type { ConfigureParams } from '../contract';
import { GatewayChatError, isCancellation } from '../errors';
import { FrameReader, FrameWriter } from './frames';
import type { Method, Params, Result } from './rpc';

export interface SessionOptions {
  python: string;
  /** Before `-m gateway_lm serve`: the isolation flags (extension/sidecar/setup.ts ISOLATED). */
  pythonArgs?: readonly string[];
  /** `initialize`'s `initializationOptions`: the settings the sidecar starts with. */
  initializationOptions: ConfigureParams;
  /** The sidecar's logs and stderr, the session's own lines and the message trace; it redacts. */
  log: vscode.LogOutputChannel;
  /** From spawning to the answer to `initialize`, for the first start and each restart. */
  startTimeoutMs: number;
  /** How long a polite shutdown may take before the process is killed. */
  stopTimeoutMs: number;
  /** Restarts allowed within RESTART_WINDOW_MS. */
  maxRestartCount: number;
  /** How long a token count is waited for (COUNT_TIMEOUT_MS unless given). */
  countTimeoutMs?: number;
  /** How long a frame cut short waits for the rest (frames.ts PARTIAL_FRAME_MS unless given). */
  partialFrameMs?: number;
  onEnd(session: SidecarSession): void;
  /** Installs the handlers of the sidecar's notifications on each connection (the first start's and
   * each restart's) before it listens, so none is missed. */
  attach(connection: MessageConnection): void;
}

const RESTART_WINDOW_MS = 3 * 60_000;
/** A count takes milliseconds, a 1M-character slice well under a second, a background batch waits
 * for the tokenizer to load (a few seconds): an answer not here by then is not coming. */
export const COUNT_TIMEOUT_MS = 30_000;
/** Requests bounded by the count timeout: Copilot awaits each, thousands per turn. */
const COUNTS: ReadonlySet<string> = new Set<Method>(['gateway/countTokens']);
const NAME = 'The Vercel AI Gateway sidecar';
const LOGS = "run 'Vercel AI Gateway: Show Logs'";
/** What to do after a start failed; the notification carries these two as buttons (connection.ts). */
const START_AGAIN = "Run 'Vercel AI Gateway: Restart Server' to try again (the next request also does); 'Vercel AI Gateway: Show Logs' shows what it printed.";
// window/logMessage's MessageType (Error 1, Warning 2, Info 3, Log 4, Debug 5) → the channel's level.
const LOG_LEVELS = { 1: 'error', 2: 'warn', 3: 'info', 4: 'info', 5: 'debug' } as const;

type State = 'starting' | 'running' | 'stopped';

export class SidecarSession {
  private readonly children = new Set<ChildProcess>();
  private readonly restarts: number[] = [];
  private ended: GatewayChatError | undefined;
  // What is waiting on the sidecar, failed at once when the session ends. Not a race with one
  // long-lived "ended" promise: each race would leave a reaction on it for the session's whole life,
  // a leak per request (rfcs/0005-performance.md, "The soak", found it).
  private readonly waiting = new Set<(reason: GatewayChatError) => void>();
  private startTimer: NodeJS.Timeout | undefined;
  private stopped: Promise<void> | undefined;
  private hasRun = false;
  private lastExit: string | undefined; // how the last process ended, for the start failure message
  private state: State = 'stopped';
  private connection: MessageConnection | undefined; // of the process spawned last
  private launched: Promise<MessageConnection> | undefined; // the current start or restart
  private readonly traceListener: vscode.Disposable;

  constructor(private readonly options: SessionOptions) {
    this.traceListener = options.log.onDidChangeLogLevel(() => this.connection && this.trace(this.connection));
  }

  get running(): boolean {
    return !this.ended && this.state === 'running';
  }

  /** Resolves once the sidecar has answered `initialize`; ends the session otherwise. */
  async start(): Promise<void> {
    try {
      await this.untilEnd(this.launch());
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
    try {
      // While a restart runs, a request waits for it, as it would for the first start.
      const connection = this.state === 'running' && this.connection ? this.connection : await this.untilEnd(this.launched ?? this.launch());
      // An explicit `undefined` token would turn the params into a positional array.
      let sent = token ? connection.sendRequest<Result<M>>(method, params, token) : connection.sendRequest<Result<M>>(method, params);
      if (COUNTS.has(method)) {
        const ms = this.options.countTimeoutMs ?? COUNT_TIMEOUT_MS;
        sent = bounded(sent, ms).catch((error: Error) => Promise.reject(unanswered(method, ms, error)));
      }
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
    this.traceListener.dispose();
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
    if (isConnectionGone(error) || error instanceof ConnectionError) {
      return failure(`stopped while answering and is being restarted. Try again; if it keeps stopping, ${LOGS}.`);
    }
    return error;
  }

  /** Spawns a process and connects to it, bounded by the start timeout: the first start, or a
   * restart after a crash. */
  private launch(): Promise<MessageConnection> {
    this.state = 'starting';
    clearTimeout(this.startTimer);
    const seconds = Math.round(this.options.startTimeoutMs / 1000);
    this.startTimer = setTimeout(() => this.end(failure(`did not start within ${seconds} s and was stopped. ${START_AGAIN}`)), this.options.startTimeoutMs);
    const launched = this.connect().then(
      (connection) => {
        clearTimeout(this.startTimer);
        if (this.ended) throw this.ended;
        this.state = 'running';
        this.hasRun = true;
        return connection;
      },
      (error: unknown) => {
        clearTimeout(this.startTimer);
        throw error;
      },
    );
    this.launched = launched;
    launched.catch(() => undefined); // a restart's failure is told by restart(); a start's by start()
    return launched;
  }

  private async connect(): Promise<MessageConnection> {
    const child = await this.spawnProcess();
    if (this.ended) throw this.ended;
    const log = this.options.log;
    log.info(`Starting the sidecar: ${this.options.python} (pid ${child.pid}).`);
    readline.createInterface({ input: child.stderr!, crlfDelay: Infinity }).on('line', (line) => log.error(line));
    // vscode-jsonrpc handles what it reads one message per turn, in the order read. Not its
    // `maxParallelism`, which would settle a response in the turn it is read, ahead of the
    // notifications read before it: a chat's last parts would come after its result.
    const connection = createMessageConnection(new FrameReader(child.stdout!, this.options.partialFrameMs), new FrameWriter(child.stdin!), quiet);
    this.connection = connection;
    connection.onError(([error, , count]) => this.onError(error, count));
    connection.onClose(() => this.onClosed(connection, child));
    connection.onNotification('window/logMessage', (params: { type?: unknown; message?: unknown } | undefined) => {
      const level = LOG_LEVELS[params?.type as keyof typeof LOG_LEVELS] ?? 'info';
      if (typeof params?.message === 'string') log[level](params.message);
    });
    this.options.attach(connection);
    this.trace(connection);
    connection.listen();
    await connection.sendRequest('initialize', {
      processId: process.pid,
      clientInfo: { name: 'Vercel AI Gateway for Copilot Chat' },
      rootUri: null,
      capabilities: {},
      initializationOptions: this.options.initializationOptions,
    });
    await connection.sendNotification('initialized', {});
    return connection;
  }

  /** Messages traced to the log while it is at Trace, as `<SECTION>.trace.server` says ('messages',
   * or 'verbose' with each message's params): the log redacts the keys they carry. */
  private trace(connection: MessageConnection): void {
    const log = this.options.log;
    const setting = vscode.workspace.getConfiguration(SECTION).get<unknown>(TRACE_SERVER);
    const verbose = Trace.fromString(typeof setting === 'string' ? setting : 'messages') === Trace.Verbose;
    const level = log.logLevel !== vscode.LogLevel.Trace ? Trace.Off : verbose ? Trace.Verbose : Trace.Messages;
    const tracer: Tracer = {
      log: (message: unknown, data?: string) => log.trace(typeof message === 'string' ? (data ? `${message}\n${data}` : message) : JSON.stringify(message)),
    };
    connection.trace(level, tracer).catch(() => undefined); // sends nothing: no notification is asked for
  }

  /** Read errors (unframed output, invalid JSON; no count) mean the stream can no longer be
   * trusted; write errors (counted) are told and tolerated a few times. */
  private onError(error: Error, count: number | undefined): void {
    if (this.ended) return;
    if (count === undefined) {
      const next = this.hasRun ? `The next request starts a new one; ${LOGS} for details.` : START_AGAIN;
      this.end(failure(`sent output that is not JSON-RPC (${detail(error)}) and was stopped. ${next}`));
    } else if (count > 3) {
      this.end(failure(`could not be written to (${detail(error)}) and was stopped. The next request starts a new one; ${LOGS} for details.`));
    } else {
      this.options.log.warn(`Could not write to the sidecar (${detail(error)}).`);
    }
  }

  /** The process's output closed: what waits on it fails at once (vscode-jsonrpc rejects a disposed
   * connection's pending requests), and a sidecar that had run is restarted, a few times. */
  private onClosed(connection: MessageConnection, child: ChildProcess): void {
    if (this.ended || connection !== this.connection) return;
    this.state = 'stopped';
    connection.dispose();
    kill(child); // its output is gone: it can no longer answer
    // Before the first start succeeded, start() tells what happened; retrying at once would not help.
    if (!this.hasRun) return;
    const now = Date.now();
    this.restarts.push(now);
    while (this.restarts.length && now - this.restarts[0] > RESTART_WINDOW_MS) this.restarts.shift();
    if (this.restarts.length > this.options.maxRestartCount) {
      const times = this.options.maxRestartCount + 1;
      this.end(
        failure(`stopped ${times} times within 3 minutes, so it is not restarted by itself. The next request starts a new one; ${LOGS} to see why it stops.`),
      );
      return;
    }
    this.options.log.warn('The sidecar stopped; it is being restarted.');
    this.launch().catch(async (error: unknown) => {
      if (isConnectionGone(error)) await within(this.exited(), this.options.stopTimeoutMs);
      this.end(
        failure(
          `could not be restarted${this.lastExit ? ` (it exited with ${this.lastExit})` : ''}. The next request starts it again; if it keeps failing, ${LOGS}.`,
        ),
      );
    });
  }

  /** Every process is spawned here (the first start and each restart), so every one is known. */
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
    child.stdin?.on('error', () => undefined); // a write to an exited process: the writer tells it
    if (this.ended) kill(child);
    return new Promise((resolve, reject) => {
      child.once('spawn', () => resolve(child));
      child.once('error', (error) => {
        this.children.delete(child); // never started, so never exits
        reject(new Error(`${this.options.python}: ${error.message}`));
      });
    });
  }

  /** A polite shutdown first (`shutdown`, then `exit`: the sidecar saves what it learned as it
   * exits), then a kill for whatever is left; each step bounded. */
  private async stop(): Promise<void> {
    const limit = this.options.stopTimeoutMs;
    const connection = this.connection;
    if (connection && this.state === 'running') {
      await within(
        (async () => {
          await bounded(connection.sendRequest('shutdown'), limit);
          await connection.sendNotification('exit');
          await this.exited();
        })(),
        limit,
      );
    }
    this.state = 'stopped';
    connection?.dispose();
    this.children.forEach(kill);
    await within(this.exited(), limit);
  }

  private exited(): Promise<void> {
    return Promise.all([...this.children].map((child) => new Promise((resolve) => child.once('exit', resolve)))).then(() => undefined);
  }
}

/** vscode-jsonrpc's own log lines (a response under an id nobody waits for, a notification no
 * handler takes): the session tells each failure that matters to a user itself. */
const quiet: Logger = { error: () => undefined, warn: () => undefined, info: () => undefined, log: () => undefined };

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
  // On Windows a venv's python.exe is a launcher with the real interpreter as its child. taskkill is
  // a console program: without windowsHide each kill flashes a console window.
  if (process.platform === 'win32') execFile('taskkill', ['/T', '/F', '/PID', String(child.pid)], { windowsHide: true }, () => undefined);
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
