// The sidecar's lifetime and connection: started on first use (after its first-start setup), each
// start bounded; restarted by its session when it crashes, and afresh by the next request once the
// session gives up (extension/sidecar/session.ts); told about settings changes.
import * as vscode from 'vscode';
import { expandHome, networkSetting, setting } from '../config';
import { SECRET_WORDS, SETTING_IDS, type Calibration, type MetricsNotification, type Settings } from '../contract';
import { GatewayChatError, RESTART_SERVER, SHOW_LOGS, showError, showOnce } from '../errors';
import { notify } from '../notify';
import { Method, Params, PartsRouter, Result, Rpc } from './rpc';
import { SidecarSession } from './session';
import { SetupError, sidecarPython } from './setup';
import type { UsageRecord } from '../contract';

/** The sidecar's settings (the contract's Settings), from the extension's and VS Code's network
 * settings, each read by the id the contract's SETTING_IDS gives it (the one map between the two
 * names; server/gateway_lm/settings.py). They travel over the sidecar's stdin, never its command line:
 * the proxy authorization is a secret (sidecarSecrets). VS Code does not check their types; the sidecar
 * does, so they go as VS Code holds them. */
export function sidecarSettings(stateDir: string, platform: NodeJS.Platform = process.platform): Settings {
  const values: Record<string, unknown> = {};
  for (const [field, id] of Object.entries(SETTING_IDS)) values[field] = configured(id);
  return { ...values, stateDir, caBundle: pathOrNull(values.caBundle, platform), attributionTags: attributionTags() };
}

/** A setting's value by its full id (`vercelAiGateway.spend.maxDailyCost`, `http.proxy`). */
function configured(id: string): unknown {
  const dot = id.indexOf('.');
  return vscode.workspace.getConfiguration(id.slice(0, dot)).get(id.slice(dot + 1));
}

/** The tags the user set, and the workspace's name when they asked for it (the gateway's reports
 * then split spend by project; the sidecar cannot know the name). */
function attributionTags(): string[] | undefined {
  const tags = setting<string[]>('attribution.tags'); // VS Code does not check it: the sidecar does
  const name = vscode.workspace.name;
  if (!setting<boolean>('attribution.tagWorkspace') || !name || !Array.isArray(tags)) return tags;
  return [...tags, `workspace:${name.slice(0, 100)}`];
}

/** `~/…` (and `~\…` on Windows) as the shell would read it; anything else as written (the sidecar
 * reports a bad path). Null when unset: a key left out would keep the sidecar's previous value. */
function pathOrNull(file: unknown, platform: NodeJS.Platform): string | null {
  if (typeof file !== 'string' || !file) return null;
  return expandHome(file, platform);
}

/** What the settings hold that no log may show: the proxy's authorization and password, and the
 * values of modelOptions' extra headers (an API key of the user's own, often). */
export function sidecarSecrets(): string[] {
  const found: unknown[] = [networkSetting('proxyAuthorization'), ...proxyPassword(networkSetting('proxy'))];
  const options = setting<unknown>('modelOptions');
  if (options && typeof options === 'object') {
    for (const entry of Object.values(options as Record<string, unknown>)) {
      const { extraHeaders, extraBody } = (entry && typeof entry === 'object' ? entry : {}) as { extraHeaders?: unknown; extraBody?: unknown };
      if (extraHeaders && typeof extraHeaders === 'object') found.push(...Object.values(extraHeaders as Record<string, unknown>));
      found.push(...secretsIn(extraBody, false));
    }
  }
  return found.filter((value): value is string => typeof value === 'string' && value.length > 0);
}

/** The strings of an extraBody under a key with a secret's name, at any depth (a BYOK provider key):
 * the sidecar's rule, server/gateway_lm/request/options.py `secrets_in`, with its words (contract.ts). */
function secretsIn(value: unknown, secret: boolean): string[] {
  if (typeof value === 'string') return secret ? [value] : [];
  if (Array.isArray(value)) return value.flatMap((item) => secretsIn(item, secret));
  if (!value || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, item]) => secretsIn(item, secret || isSecretName(key)));
}

function isSecretName(name: string): boolean {
  const normal = name.toLowerCase().replace(/[-_]/g, '');
  return SECRET_WORDS.some((word) => normal.includes(word));
}

/** The password in a proxy URL, as written (the trace quotes the setting) and as decoded. */
function proxyPassword(proxy: unknown): string[] {
  if (typeof proxy !== 'string' || !proxy) return [];
  try {
    const password = new URL(proxy).password;
    return [password, decodeURIComponent(password)];
  } catch {
    return [];
  }
}

export interface SidecarLimits {
  /** Spawn to `initialize` answered (the first-start setup is not counted). */
  startTimeoutMs: number;
  stopTimeoutMs: number;
  /** Crashes a session restarts within 3 minutes before it gives up. */
  maxRestartCount: number;
  /** A token count not answered by then (lost, answered under another id, dropped when cancelled)
   * fails, as any failed count: Copilot then does without it. Default COUNT_TIMEOUT_MS. */
  countTimeoutMs?: number;
  /** A frame whose Content-Length runs past the bytes that came (frames.ts): how long it may wait
   * for more before the output counts as unframed. Default PARTIAL_FRAME_MS. */
  partialFrameMs?: number;
}

const DEFAULT_LIMITS: SidecarLimits = { startTimeoutMs: 30_000, stopTimeoutMs: 2_000, maxRestartCount: 4 };

/** The limits, with the start bound from AI_GATEWAY_LM_START_TIMEOUT_MS when it holds a whole number
 * of milliseconds from 100 to 600,000 (tests of the shipped bundle, where 30 s per hung start would
 * be most of the run; like AI_GATEWAY_LM_PYTHON, not a user setting). Anything else: the default. */
export function defaultLimits(env: NodeJS.ProcessEnv = process.env): SidecarLimits {
  const text = env.AI_GATEWAY_LM_START_TIMEOUT_MS ?? '';
  const ms = /^\d{3,6}$/.test(text) ? Number(text) : NaN;
  return ms >= 100 && ms <= 600_000 ? { ...DEFAULT_LIMITS, startTimeoutMs: ms } : DEFAULT_LIMITS;
}

/** Why a start or request was abandoned by us: no pop-up, the caller asked for it. */
class Superseded extends GatewayChatError {}

export class SidecarConnection implements Rpc, vscode.Disposable {
  private session: SidecarSession | undefined;
  private starting: Promise<SidecarSession> | undefined;
  private generation = 0; // bumped by restart and dispose: a start from before them is void
  private disposed = false; // a late request (a credits refresh after a chat) must not start a new one
  private readonly router = new PartsRouter();
  private readonly stateDir: string;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly log: vscode.LogOutputChannel,
    private readonly traceChannel: vscode.LogOutputChannel,
    private readonly limits: SidecarLimits = defaultLimits(),
  ) {
    this.stateDir = context.globalStorageUri.fsPath;
    this.router.onInvalid = (what) => this.log.warn(`${what}.`);
    this.router.onShowMessage = (type, message) => void notify(type === 1 ? 'error' : type === 2 ? 'warning' : 'info', message);
  }

  onCalibration(handler: (calibration: Calibration) => void): void {
    this.router.onCalibration = handler;
  }

  onMetrics(handler: (metrics: MetricsNotification) => void): void {
    this.router.onMetrics = handler;
  }

  onBilled(handler: (requestId: string, record: UsageRecord) => void): void {
    this.router.onBilled = handler;
  }

  async request<M extends Method>(method: M, params: Params<M>, token?: vscode.CancellationToken): Promise<Result<M>> {
    return (await this.ready()).request(method, params, token);
  }

  onParts(requestId: string, handler: Parameters<PartsRouter['subscribe']>[1]): vscode.Disposable {
    return this.router.subscribe(requestId, handler);
  }

  /** Applies changed settings to a running sidecar; a stopped one reads them when it starts. */
  async configure(): Promise<void> {
    if (!this.session?.running) return;
    await this.session.request('gateway/configure', { settings: sidecarSettings(this.stateDir) }).catch((error: unknown) => {
      this.log.warn(`Could not apply the settings: ${error instanceof Error ? error.message : String(error)}`);
    });
  }

  /** Stops the current sidecar for sure (killed if it does not stop in time), then starts one.
   * True once the new one answers; false when a later restart or the window's shutdown took over;
   * rejects when it did not start (its one error notification has been shown). */
  async restart(): Promise<boolean> {
    await this.retire(new Superseded('The Vercel AI Gateway sidecar was restarted while this request waited. Try again.', 'sidecar', null));
    try {
      await this.ready();
      return true;
    } catch (error) {
      if (error instanceof Superseded) return false;
      throw error;
    }
  }

  private async retire(reason: GatewayChatError): Promise<void> {
    this.generation++;
    const old = this.session;
    this.session = undefined;
    this.starting = undefined;
    await old?.close(reason);
  }

  private ready(): Promise<SidecarSession> {
    if (this.disposed) return Promise.reject(new Superseded('Vercel AI Gateway is shutting down.', 'sidecar', null));
    if (this.starting) return this.starting;
    const starting = this.start().catch((error: unknown) => {
      if (this.starting === starting) this.starting = undefined;
      throw this.startFailure(error);
    });
    this.starting = starting;
    return starting;
  }

  private async start(): Promise<SidecarSession> {
    const generation = this.generation;
    const { command: python, args: pythonArgs } = await sidecarPython(this.context, this.log);
    if (generation !== this.generation) throw new Superseded('The Vercel AI Gateway sidecar was restarted while it started. Try again.', 'sidecar', null);
    const session = new SidecarSession({
      python,
      pythonArgs,
      // The session's lines quote what the process printed, and message tracing prints request
      // params (gateway/chat carries the key): both go through the redacting channel.
      log: this.traceChannel,
      initializationOptions: { settings: sidecarSettings(this.stateDir) },
      ...this.limits,
      // Installed before each connection listens, so the first notification of a restarted sidecar is routed too.
      attach: (connection) => this.router.attach(connection),
      onEnd: (ended) => {
        if (this.session !== ended) return;
        this.session = undefined; // the next request starts a new sidecar
        this.starting = undefined;
      },
    });
    this.session = session;
    await session.start();
    return session;
  }

  /** The one notification of a failed start: a setup failure offers the interpreter setting when
   * another Python would help; a sidecar that did not start offers its logs and a restart. */
  private startFailure(error: unknown): GatewayChatError {
    if (error instanceof Superseded) return error;
    const message = error instanceof Error ? error.message : String(error);
    // A setup failure comes back with every start VS Code asks for: told once per window (errors.showOnce).
    if (error instanceof SetupError) showOnce(message, ...error.buttons, SHOW_LOGS);
    else showError(message, SHOW_LOGS, RESTART_SERVER);
    this.log.error(message);
    return error instanceof GatewayChatError ? error : new GatewayChatError(message, 'setup', null);
  }

  dispose(): void {
    this.disposed = true;
    void this.retire(new Superseded('Vercel AI Gateway is shutting down.', 'sidecar', null));
  }
}

/** The log channel, for message traces, with every key this session used taken out: as written, and
 * as a trace quotes it in JSON (a `"` or `\\` escaped). */
export function redacting(log: vscode.LogOutputChannel, secrets: () => readonly string[]): vscode.LogOutputChannel {
  const forms = (secret: string) => [secret, JSON.stringify(secret).slice(1, -1)];
  const clean = (text: string) =>
    secrets()
      .filter((secret) => secret.length >= 8)
      .flatMap(forms)
      .reduce((out, secret) => out.split(secret).join('[redacted]'), text);
  return {
    name: log.name,
    get logLevel() {
      return log.logLevel;
    },
    onDidChangeLogLevel: log.onDidChangeLogLevel,
    trace: (message) => log.trace(clean(message)),
    debug: (message) => log.debug(clean(message)),
    info: (message) => log.info(clean(message)),
    warn: (message) => log.warn(clean(message)),
    error: (error) => log.error(clean(error instanceof Error ? error.message : error)),
    append: (value) => log.append(clean(value)),
    appendLine: (value) => log.appendLine(clean(value)),
    replace: (value) => log.replace(clean(value)),
    clear: () => log.clear(),
    show: () => log.show(true),
    hide: () => log.hide(),
    dispose: () => undefined,
  };
}
