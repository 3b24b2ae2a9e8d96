// The sidecar's lifetime and connection: started on first use (after its first-start setup),
// restarted by vscode-languageclient when it crashes, and told about settings changes.
import * as vscode from 'vscode';
import { LanguageClient, State } from 'vscode-languageclient/node';
import { GatewayChatError } from './errors';
import { Calibration, PartsRouter, Rpc } from './rpc';
import { SetupError, sidecarPython } from './setup';

export const SECTION = 'vercelAiGateway';

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

export class SidecarConnection implements Rpc, vscode.Disposable {
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

/** The log channel, for message traces, with every key this session used taken out. */
export function redacting(log: vscode.LogOutputChannel, secrets: () => readonly string[]): vscode.LogOutputChannel {
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

