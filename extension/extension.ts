// Activation: the parts that need VS Code (secrets, settings, status bar, commands, output channel)
// and the sidecar's lifetime. Everything else happens in the Python sidecar.
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { LanguageClient, State } from 'vscode-languageclient/node';
import { GatewayChatError, MANAGE_KEY, offerAction } from './errors';
import { GatewayChatProvider, ModelEntry } from './provider';
import { Calibration, PartsRouter, Rpc } from './rpc';
import { SetupError, sidecarPython } from './setup';
import { UsageStatus } from './status';
import { SavedCounts, toolStrings } from './tokens';
import type { ThinkingMode } from './wire';

const VENDOR = 'vercel-ai-gateway';
const SECRET = 'vercelAiGateway.apiKey';
const SECTION = 'vercelAiGateway';

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscode.window.createOutputChannel('Vercel AI Gateway', { log: true });
  const status = new UsageStatus();
  const keys = new KeyStore(context.secrets);
  const sidecar = new SidecarConnection(context, log, redacting(log, () => keys.known()));
  const cacheFile = path.join(context.globalStorageUri.fsPath, 'models.json');
  const countsFile = path.join(context.globalStorageUri.fsPath, 'token-counts.json');
  const provider = new GatewayChatProvider(sidecar, {
    apiKey: () => keys.get(),
    askForKey: () => keys.prompt(),
    thinking: () => vscode.workspace.getConfiguration(SECTION).get<ThinkingMode>('thinking', 'auto'),
    loadCache: () => readJson<ModelEntry[]>(cacheFile, []),
    saveCache: (models) => writeJson(cacheFile, models),
    onUsage: (model, usage) => status.show(model, usage),
    onError: (error) => offerAction(error, (action) => runAction(action, error)),
    toolStrings: () => toolStrings(vscode.lm.tools),
    log,
  });
  sidecar.onCalibration((calibration) => provider.tokens.setFactor(calibration.model, calibration.factor));
  provider.tokens.restore(await readJson<Partial<SavedCounts>>(countsFile, {}));
  const saveCounts = () => {
    const snapshot = provider.tokens.snapshot();
    return snapshot ? writeJson(countsFile, snapshot) : Promise.resolve();
  };
  const saver = setInterval(() => void saveCounts(), 10_000);
  const runAction = (action: string, _error: GatewayChatError) =>
    void vscode.commands.executeCommand(action === MANAGE_KEY ? 'vercelAiGateway.manage' : 'vercelAiGateway.showLogs');

  context.subscriptions.push(
    log,
    status,
    sidecar,
    vscode.lm.registerLanguageModelChatProvider(VENDOR, provider),
    { dispose: () => (clearInterval(saver), void saveCounts()) },
    keys.onDidChange(() => provider.notifyChanged()),
    vscode.commands.registerCommand('vercelAiGateway.manage', () => keys.manage()),
    vscode.commands.registerCommand('vercelAiGateway.refreshModels', () => provider.refresh()),
    vscode.commands.registerCommand('vercelAiGateway.showLogs', () => log.show()),
    vscode.commands.registerCommand('vercelAiGateway.restartServer', () => sidecar.restart()),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration(`${SECTION}.pythonPath`)) void sidecar.restart();
      else if (event.affectsConfiguration(SECTION)) void sidecar.configure().then(() => provider.refresh());
    }),
  );
}

export function deactivate(): void {}

/** The sidecar settings, named as rfcs/0003-rpc-contract.md lists them. */
function sidecarSettings(stateDir: string): Record<string, unknown> {
  const c = vscode.workspace.getConfiguration(SECTION);
  return {
    stateDir,
    baseUrl: c.get('baseUrl'),
    reasoningEffort: c.get('reasoningEffort'),
    reasoningEffortByModel: c.get('reasoningEffortByModel'),
    gatewayOrder: c.get('routing.order'),
    gatewayOnly: c.get('routing.only'),
    gatewayModels: c.get('routing.fallbackModels'),
    outputReservation: c.get('outputReservation'),
    maxOutputTokens: c.get('maxOutputTokens'),
    connectTimeout: c.get('connectTimeout'),
    idleTimeout: c.get('idleTimeout'),
    maxRetries: c.get('maxRetries'),
    logLevel: c.get('logLevel'),
  };
}

class SidecarConnection implements Rpc, vscode.Disposable {
  private client: LanguageClient | undefined;
  private readonly router = new PartsRouter();
  private readonly stateDir: string;
  private starting: Promise<LanguageClient> | undefined;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly log: vscode.LogOutputChannel,
    private readonly traceChannel: vscode.LogOutputChannel,
  ) {
    this.stateDir = context.globalStorageUri.fsPath;
  }

  onCalibration(handler: (calibration: Calibration) => void): void {
    this.router.onCalibration = handler;
  }

  async request<R>(method: string, params: unknown, token?: vscode.CancellationToken): Promise<R> {
    const client = await this.ready();
    // An explicit `undefined` token would turn the params into a positional array.
    return token ? client.sendRequest<R>(method, params, token) : client.sendRequest<R>(method, params);
  }

  onParts(requestId: string, handler: Parameters<PartsRouter['subscribe']>[1]): vscode.Disposable {
    return this.router.subscribe(requestId, handler);
  }

  async configure(): Promise<void> {
    if (this.client?.state === State.Running) await this.client.sendRequest('gateway/configure', { settings: sidecarSettings(this.stateDir) });
  }

  async restart(): Promise<void> {
    const old = this.client;
    this.client = undefined;
    this.starting = undefined;
    await old?.stop().catch(() => undefined);
    await this.ready();
  }

  private ready(): Promise<LanguageClient> {
    this.starting ??= this.start().catch((error) => {
      this.starting = undefined;
      throw this.setupFailure(error);
    });
    return this.starting;
  }

  private async start(): Promise<LanguageClient> {
    const python = await sidecarPython(this.context, this.log);
    const client = new LanguageClient(
      'vercelAiGateway',
      'Vercel AI Gateway sidecar',
      // The key never goes on the command line: it travels per request, or in the environment.
      { command: python, args: ['-m', 'gateway_lm', 'serve'], options: { env: { ...process.env, PYTHONUTF8: '1' } } },
      {
        outputChannel: this.log,
        // Message tracing prints request params, and gateway/chat carries the key.
        traceOutputChannel: this.traceChannel,
        initializationOptions: { settings: sidecarSettings(this.stateDir) },
        connectionOptions: { maxRestartCount: 4 },
      },
    );
    // Installed before start so the first notification of a restarted server is routed too.
    this.router.attach(client);
    await client.start();
    this.client = client;
    return client;
  }

  private setupFailure(error: unknown): GatewayChatError {
    const message = error instanceof Error ? error.message : String(error);
    const choose = error instanceof SetupError && error.canChooseInterpreter ? ['Choose Interpreter'] : [];
    void vscode.window.showErrorMessage(message, ...choose, 'Show Logs').then((picked) => {
      if (picked === 'Show Logs') this.log.show();
      if (picked === 'Choose Interpreter') void vscode.commands.executeCommand('workbench.action.openSettings', `${SECTION}.pythonPath`);
    });
    this.log.error(message);
    return new GatewayChatError(message, 'setup', null);
  }

  dispose(): void {
    void this.client?.stop();
  }
}

class KeyStore {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChange = this.changed.event;
  private readonly seen = new Set<string>();

  constructor(private readonly secrets: vscode.SecretStorage) {}

  async get(): Promise<string | undefined> {
    const key = (await this.secrets.get(SECRET)) || process.env.AI_GATEWAY_API_KEY || process.env.VERCEL_OIDC_TOKEN || undefined;
    if (key) this.seen.add(key);
    return key;
  }

  /** Every key this session has handed out, for redaction. */
  known(): readonly string[] {
    return [...this.seen];
  }

  async prompt(): Promise<void> {
    const key = await vscode.window.showInputBox({
      title: 'Vercel AI Gateway API key',
      prompt: 'Create one at vercel.com → AI Gateway → API Keys. It is kept in VS Code\'s secret storage.',
      password: true,
      ignoreFocusOut: true,
      validateInput: (value) => (value.trim() ? undefined : 'Enter a key, or press Escape to cancel'),
    });
    if (key === undefined) return;
    await this.secrets.store(SECRET, key.trim());
    this.changed.fire();
  }

  async manage(): Promise<void> {
    const stored = await this.secrets.get(SECRET);
    const pick = stored
      ? await vscode.window.showQuickPick(['Replace API key', 'Remove API key'], { title: 'Vercel AI Gateway' })
      : 'Replace API key';
    if (pick === 'Replace API key') await this.prompt();
    if (pick === 'Remove API key') {
      await this.secrets.delete(SECRET);
      this.changed.fire();
    }
  }
}

/** The log channel, for message traces, with every key this session used taken out. */
function redacting(log: vscode.LogOutputChannel, secrets: () => readonly string[]): vscode.LogOutputChannel {
  const clean = (text: string) => secrets().reduce((out, secret) => (secret.length >= 8 ? out.split(secret).join('[redacted]') : out), text);
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

async function readJson<T>(file: string, fallback: T): Promise<T> {
  try {
    return JSON.parse(await fs.readFile(file, 'utf8')) as T;
  } catch {
    return fallback;
  }
}

async function writeJson(file: string, value: unknown): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true });
  await fs.writeFile(file, JSON.stringify(value));
}
