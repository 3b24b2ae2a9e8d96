// A stand-in for the `vscode` module with real classes and VS Code's exact enum values: the code
// under test uses `instanceof`, so plain objects would not do.
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
  ) {}
}
export const LanguageModelChatMessageRole = { User: 1, Assistant: 2 } as const;
export const LanguageModelChatToolMode = { Auto: 1, Required: 2 } as const;
export const StatusBarAlignment = { Left: 1, Right: 2 } as const;

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

export const ProgressLocation = { SourceControl: 1, Window: 10, Notification: 15 } as const;
export const progressTitles: string[] = [];
export const settings: Record<string, unknown> = {};
export const workspace = {
  getConfiguration: (section: string) => ({
    get: <T>(key: string, fallback?: T): T | undefined => (settings[`${section}.${key}`] as T | undefined) ?? fallback,
  }),
};
export const extensions = { getExtension: (_id: string): undefined => undefined };

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

export const shownErrors: { message: string; actions: string[] }[] = [];
export const window = {
  showErrorMessage: (message: string, ...actions: string[]) => {
    shownErrors.push({ message, actions });
    return Promise.resolve(undefined);
  },
  withProgress: <R>(options: { title: string }, task: (progress: { report(value: unknown): void }) => Promise<R>): Promise<R> => {
    progressTitles.push(options.title);
    return task({ report: () => undefined });
  },
  createStatusBarItem: () => {
    const item = new StatusBarItem();
    statusBarItems.push(item);
    return item;
  },
};
