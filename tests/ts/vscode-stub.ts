// A stand-in for the `vscode` module with real classes and VS Code's exact enum values: the code
// under test uses `instanceof`, so plain objects would not do. The bench builds its `vscode` module
// on it too (bench/from-tests.cjs): no node:test or assert here.
import { CancellationTokenSource as JsonRpcTokenSource } from 'vscode-jsonrpc/node';

export class LanguageModelTextPart {
  constructor(public value: string) {}
}
export class LanguageModelToolCallPart {
  constructor(
    public callId: string,
    public name: string,
    public input: object,
  ) {}
}
export class LanguageModelToolResultPart {
  constructor(
    public callId: string,
    public content: unknown[],
  ) {}
}
export class LanguageModelToolResultPart2 extends LanguageModelToolResultPart {}
export class LanguageModelDataPart {
  constructor(
    public data: Uint8Array,
    public mimeType: string,
  ) {}
  static image(data: Uint8Array, mime: string): LanguageModelDataPart {
    return new LanguageModelDataPart(data, mime);
  }
}
export class LanguageModelPromptTsxPart {
  constructor(public value: unknown) {}
}
export class LanguageModelThinkingPart {
  constructor(
    public value: string | string[],
    public id?: string,
    public metadata?: { readonly [key: string]: unknown },
  ) {}
}
export const LanguageModelChatMessageRole = { User: 1, Assistant: 2 } as const;
export const LanguageModelChatToolMode = { Auto: 1, Required: 2 } as const;
export const StatusBarAlignment = { Left: 1, Right: 2 } as const;

export class ThemeIcon {
  constructor(readonly id: string) {}
}
export class ThemeColor {
  constructor(public id: string) {}
}
export class CancellationError extends Error {}
export const CancellationTokenSource = JsonRpcTokenSource;

export class EventEmitter<T> {
  private listeners: ((value: T) => void)[] = [];
  fired = 0;
  event = (listener: (value: T) => void) => {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
  };
  fire(value: T): void {
    this.fired++;
    this.listeners.forEach((l) => l(value));
  }
  dispose(): void {}
}

// The window's kind (extension/harness.ts) and the log levels (the sidecar's message trace).
export const UIKind = { Desktop: 1, Web: 2 } as const;
export const env = { appName: 'stub', language: 'en', uiKind: UIKind.Desktop as number };
export const LogLevel = { Off: 0, Trace: 1, Debug: 2, Info: 3, Warning: 4, Error: 5 } as const;
const noEvent = () => ({ dispose() {} });

export const ProgressLocation = { SourceControl: 1, Window: 10, Notification: 15 } as const;
export const progressTitles: string[] = [];
export const settings: Record<string, unknown> = {};
/** Values a workspace's `.vscode/settings.json` holds: `inspect` reports them; `get` does not, as
 * VS Code does for application- and machine-scoped settings (the real host checks the rest). */
export const workspaceSettings: Record<string, unknown> = {};
/** Settings whose workspace value `get` reads over the user's, as VS Code does for window- and
 * resource-scoped ones (a test names those it needs). */
export const workspaceWins = new Set<string>();
/** The defaults of settings other extensions register (Copilot's `chat.*`): unregistered when absent. */
export const registeredDefaults: Record<string, unknown> = {};
export const ConfigurationTarget = { Global: 1, Workspace: 2, WorkspaceFolder: 3 } as const;
export const configUpdates: { key: string; value: unknown; target: unknown }[] = [];
/** Fired by `update`, as VS Code fires it when a setting is written. */
const configChanged = new EventEmitter<{ affectsConfiguration(section: string): boolean }>();
const fullKey = (section: string | undefined, key: string) => (section ? `${section}.${key}` : key);
export const workspace = {
  getConfiguration: (section?: string) => ({
    get: <T>(key: string, fallback?: T): T | undefined =>
      ((workspaceWins.has(fullKey(section, key)) ? workspaceSettings[fullKey(section, key)] : undefined) as T | undefined) ??
      (settings[fullKey(section, key)] as T | undefined) ??
      (registeredDefaults[fullKey(section, key)] as T | undefined) ??
      fallback,
    inspect: (key: string) => ({
      key: fullKey(section, key),
      defaultValue: registeredDefaults[fullKey(section, key)],
      globalValue: settings[fullKey(section, key)],
      workspaceValue: workspaceSettings[fullKey(section, key)],
    }),
    update: (key: string, value: unknown, target: unknown) => {
      settings[fullKey(section, key)] = value;
      configUpdates.push({ key: fullKey(section, key), value, target });
      const changed = fullKey(section, key);
      configChanged.fire({ affectsConfiguration: (id: string) => changed === id || changed.startsWith(`${id}.`) });
      return Promise.resolve();
    },
  }),
  workspaceFolders: undefined,
  textDocuments: [],
  onDidChangeConfiguration: configChanged.event,
  onDidChangeWorkspaceFolders: noEvent,
  onDidOpenTextDocument: noEvent,
  onDidChangeTextDocument: noEvent,
  onWillSaveTextDocument: noEvent,
  onDidSaveTextDocument: noEvent,
  onDidCloseTextDocument: noEvent,
  onDidCreateFiles: noEvent,
  onDidRenameFiles: noEvent,
  onDidDeleteFiles: noEvent,
  onWillCreateFiles: noEvent,
  onWillRenameFiles: noEvent,
  onWillDeleteFiles: noEvent,
};
/** Enough of vscode.Uri for file paths. */
export class Uri {
  private constructor(readonly fsPath: string) {}
  static file(fsPath: string): Uri {
    return new Uri(fsPath);
  }
  static joinPath(base: Uri, ...parts: string[]): Uri {
    return new Uri([base.fsPath, ...parts].join('/'));
  }
  toString(): string {
    return `file://${this.fsPath}`;
  }
}
export const ViewColumn = { Active: -1 } as const;
/** What the extension wrote through vscode.workspace.fs, by path. */
export const writtenFiles = new Map<string, string>();
Object.assign(workspace, {
  fs: {
    writeFile: (uri: Uri, content: Uint8Array) => {
      writtenFiles.set(uri.fsPath, new TextDecoder().decode(content));
      return Promise.resolve();
    },
  },
});

/** A webview panel: what the extension posted, and a way to play the page's messages. */
export class WebviewPanel {
  readonly posted: unknown[] = [];
  private receive: (message: unknown) => void = () => undefined;
  readonly webview = {
    html: '',
    cspSource: 'https://stub.vscode-cdn.net',
    asWebviewUri: (uri: Uri) => uri,
    postMessage: (message: unknown) => (this.posted.push(message), Promise.resolve(true)),
    onDidReceiveMessage: (listener: (message: unknown) => void) => ((this.receive = listener), { dispose() {} }),
  };
  revealed = 0;
  constructor(
    readonly viewType: string,
    readonly title: string,
    readonly options: object,
  ) {}
  fromPage(message: unknown): void {
    this.receive(message);
  }
  reveal(): void {
    this.revealed++;
  }
  onDidDispose(_listener: () => void) {
    return { dispose() {} };
  }
}
export const webviewPanels: WebviewPanel[] = [];

export const extensionsChanged = new EventEmitter<void>();
export const extensions = { getExtension: (_id: string): undefined => undefined, onDidChange: extensionsChanged.event };

export class StatusBarItem {
  text = '';
  tooltip: string | undefined;
  backgroundColor: ThemeColor | undefined;
  name = '';
  command: string | undefined;
  visible = false;
  show(): void {
    this.visible = true;
  }
  dispose(): void {}
}
export const statusBarItems: StatusBarItem[] = [];

/** The level a new output channel starts at (VS Code's is the user's choice, e.g. Trace). */
export const channelDefaults = { logLevel: LogLevel.Info as number };

/** An output channel that keeps its lines, with the level each was logged at. */
export class LogOutputChannel {
  readonly lines: string[] = [];
  logLevel = channelDefaults.logLevel;
  onDidChangeLogLevel = noEvent;
  constructor(public name = 'stub') {}
  trace(message: string): void {
    this.lines.push(`trace ${message}`);
  }
  debug(message: string): void {
    this.lines.push(`debug ${message}`);
  }
  info(message: string): void {
    this.lines.push(`info ${message}`);
  }
  warn(message: string): void {
    this.lines.push(`warn ${message}`);
  }
  error(message: string | Error): void {
    this.lines.push(`error ${message instanceof Error ? message.message : message}`);
  }
  append(value: string): void {
    this.lines.push(value);
  }
  appendLine(value: string): void {
    this.lines.push(value);
  }
  replace(value: string): void {
    this.lines.splice(0, this.lines.length, value);
  }
  clear(): void {
    this.lines.length = 0;
  }
  show(): void {}
  hide(): void {}
  dispose(): void {}
}
export const outputChannels: LogOutputChannel[] = [];

/** A Memento (globalState) kept in memory. */
export class Memento {
  readonly values = new Map<string, unknown>();
  get<T>(key: string, fallback?: T): T | undefined {
    return (this.values.get(key) as T | undefined) ?? fallback;
  }
  update(key: string, value: unknown): Promise<void> {
    this.values.set(key, value);
    return Promise.resolve();
  }
  keys(): readonly string[] {
    return [...this.values.keys()];
  }
}

/** SecretStorage kept in memory. */
export class SecretStorage {
  readonly values = new Map<string, string>();
  private readonly changed = new EventEmitter<{ key: string }>();
  onDidChange = this.changed.event;
  get(key: string): Promise<string | undefined> {
    return Promise.resolve(this.values.get(key));
  }
  store(key: string, value: string): Promise<void> {
    this.values.set(key, value);
    this.changed.fire({ key });
    return Promise.resolve();
  }
  delete(key: string): Promise<void> {
    this.values.delete(key);
    this.changed.fire({ key });
    return Promise.resolve();
  }
  keys(): Promise<string[]> {
    return Promise.resolve([...this.values.keys()]);
  }
}

/** What the user answers next: tests push the answers, the stub takes them in order (for an error
 * notification, the title of the button clicked). */
export const answers = {
  inputBox: [] as (string | undefined)[],
  quickPick: [] as (string | undefined)[],
  /** The labels picked in the next multi-select quick pick (undefined: dismissed). */
  quickPickMany: [] as (string[] | undefined)[],
  /** The title buttons (by tooltip) clicked in the next quick pick made by createQuickPick, in
   * order, before its answer (quickPick or quickPickMany). */
  quickPickButtons: [] as string[][],
  errorButton: [] as (string | undefined)[],
  infoButton: [] as (string | undefined)[],
  /** The title of the button clicked in the next warning that offers buttons (the spend dialog). */
  warningButton: [] as (string | undefined)[],
  saveDialog: [] as (Uri | undefined)[],
  /** The files picked in the next open dialog (undefined: cancelled). */
  openDialog: [] as (Uri[] | undefined)[],
};
/** A quick pick made by createQuickPick: shown, it clicks the buttons the test asked for, records
 * its items as they are then (in quickPicks), and takes the next answer as showQuickPick does. */
class QuickPick<T extends { label: string }> {
  items: readonly T[] = [];
  selectedItems: readonly T[] = [];
  buttons: readonly { tooltip?: string }[] = [];
  title: string | undefined;
  placeholder: string | undefined;
  canSelectMany = false;
  matchOnDescription = false;
  private readonly accepted = new EventEmitter<void>();
  private readonly hidden = new EventEmitter<void>();
  private readonly triggered = new EventEmitter<{ tooltip?: string }>();
  private readonly selection = new EventEmitter<readonly T[]>();
  onDidAccept = this.accepted.event;
  onDidHide = this.hidden.event;
  onDidTriggerButton = this.triggered.event;
  onDidChangeSelection = this.selection.event;

  show(): void {
    queueMicrotask(() => {
      for (const tooltip of answers.quickPickButtons.shift() ?? []) {
        const button = this.buttons.find((b) => b.tooltip === tooltip);
        if (button) this.triggered.fire(button); // one not offered is not clicked: the test's assertions say so
      }
      const buttons = this.buttons.map((b) => b.tooltip);
      quickPicks.push({ items: [...this.items], options: { canPickMany: this.canSelectMany, title: this.title, buttons } });
      const answer = this.canSelectMany ? answers.quickPickMany.shift() : [answers.quickPick.shift()];
      if (answer === undefined || (!this.canSelectMany && answer[0] === undefined)) return this.hidden.fire();
      this.selectedItems = this.items.filter((item) => answer.includes(item.label));
      this.selection.fire(this.selectedItems);
      this.accepted.fire();
      this.hidden.fire();
    });
  }
  hide(): void {
    this.hidden.fire();
  }
  dispose(): void {}
}

/** The options of each open dialog shown. */
export const openDialogs: object[] = [];
/** The items of each quick pick shown; an answer picks the item with that label. */
export const quickPicks: { items: unknown[]; options?: object }[] = [];
export const shownInfos: { message: string; actions: string[] }[] = [];
export const shownWarnings: string[] = [];
/** The `detail` of each warning shown (a modal's second line), or undefined. */
export const warningDetails: (string | undefined)[] = [];
export const inputBoxOptions: { validateInput?: (value: string) => string | undefined; password?: boolean }[] = [];
export const shownErrors: { message: string; actions: string[] }[] = [];
export const window = {
  showErrorMessage: <T extends { title: string }>(message: string, ...items: T[]) => {
    shownErrors.push({ message, actions: items.map((item) => item.title) });
    const clicked = answers.errorButton.shift();
    return Promise.resolve(items.find((item) => item.title === clicked));
  },
  showWarningMessage: (message: string, ...rest: unknown[]) => {
    shownWarnings.push(message);
    const options = rest[0] as { detail?: unknown } | undefined;
    warningDetails.push(typeof options?.detail === 'string' ? options.detail : undefined);
    const items = rest.filter((item): item is { title: string } => typeof item === 'object' && item !== null && 'title' in item);
    if (!items.length) return Promise.resolve(undefined);
    const clicked = answers.warningButton.shift();
    return Promise.resolve(items.find((item) => item.title === clicked));
  },
  showInformationMessage: (message: string, ...actions: string[]) => {
    shownInfos.push({ message, actions });
    return Promise.resolve(actions.length ? answers.infoButton.shift() : undefined);
  },
  showInputBox: (options: (typeof inputBoxOptions)[number]) => {
    inputBoxOptions.push(options);
    return Promise.resolve(answers.inputBox.shift());
  },
  createQuickPick: <T extends { label: string }>() => new QuickPick<T>(),
  showQuickPick: (items: readonly (string | { label: string })[], options?: { canPickMany?: boolean }) => {
    quickPicks.push({ items: [...items], options });
    const label = (item: string | { label: string }) => (typeof item === 'string' ? item : item.label);
    if (options?.canPickMany) {
      const many = answers.quickPickMany.shift();
      return Promise.resolve(many && items.filter((item) => many.includes(label(item))));
    }
    const answer = answers.quickPick.shift();
    return Promise.resolve(items.find((item) => (typeof item === 'string' ? item : item.label) === answer));
  },
  createOutputChannel: (name: string, _options?: { log: true }) => {
    const channel = new LogOutputChannel(name);
    outputChannels.push(channel);
    return channel;
  },
  withProgress: <R>(options: { title: string }, task: (progress: { report(value: unknown): void }) => Promise<R>): Promise<R> => {
    progressTitles.push(options.title);
    return task({ report: () => undefined });
  },
  createWebviewPanel: (viewType: string, title: string, _column: number, options: object) => {
    const panel = new WebviewPanel(viewType, title, options);
    webviewPanels.push(panel);
    return panel;
  },
  showSaveDialog: (_options: object) => Promise.resolve(answers.saveDialog.shift()),
  showOpenDialog: (options: object) => (openDialogs.push(options), Promise.resolve(answers.openDialog.shift())),
  createStatusBarItem: () => {
    const item = new StatusBarItem();
    statusBarItems.push(item);
    return item;
  },
};

/** vscode.lm: the provider registered, and the tools Copilot would offer. */
export const registeredProviders = new Map<string, unknown>();
export const lm = {
  tools: [] as { name: string; description: string; inputSchema?: object }[],
  registerLanguageModelChatProvider: (vendor: string, provider: unknown) => {
    registeredProviders.set(vendor, provider);
    return { dispose: () => registeredProviders.delete(vendor) };
  },
};

export const registeredCommands = new Map<string, (...args: unknown[]) => unknown>();
export const commands = {
  registerCommand: (id: string, run: (...args: unknown[]) => unknown) => {
    registeredCommands.set(id, run);
    return { dispose: () => registeredCommands.delete(id) };
  },
  executeCommand: (id: string, ...args: unknown[]) => Promise.resolve(registeredCommands.get(id)?.(...args)),
};
