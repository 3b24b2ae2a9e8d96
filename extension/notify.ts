// Text from outside, shown where VS Code reads markup into it. A notification's text turns
// `[label](command:…)` into a link that runs the command when clicked, and `$(name)` into an icon;
// much of what we show comes from outside: a gateway's model names and error text, pip's last line,
// a setting's value, the sidecar's messages. Every notification the extension shows goes through
// `notify` (tests/ts/notify.test.ts checks that nothing calls VS Code's show…Message elsewhere), and
// every text from outside that VS Code draws with icons or markdown (the status bar, a quick pick,
// the model picker) through `plain`.
import * as vscode from 'vscode';

/** `text` as text, whatever markup it holds, in every renderer VS Code draws our text with: its
 * notifications' link parser (`[label](target)` only), icon labels (`$(name)`) and markdown (the
 * Language Models editor renders a model's hover as trusted markdown, where a link to `command:`
 * runs the command when clicked). Each form is broken by a space no parser reads across, or an
 * escape:
 * - an inline link or image `[label](target)` → `[label] (target)`;
 * - a reference link `[label][ref]` → `[label] [ref]`, and a definition `[ref]: target` →
 *   `[ref] : target`, so that no text of ours defines a reference (a shortcut `[ref]` is then text);
 * - an autolink `<scheme:…>`, and any HTML tag `<a …>`, → `< scheme:…>`, `< a …>`;
 * - a bare `command:x` → `command: x` (no scheme of a bare URI is read across the space);
 * - `$(name)` → `\$(name)`, which VS Code draws as the characters.
 * Idempotent: text passes through twice unchanged, and text without these forms is unchanged. */
export function plain(text: string): string {
  return text
    .replace(/\]([([:])/g, '] $1')
    .replace(/<(?=[A-Za-z/!?])/g, '< ')
    .replace(/(?<![A-Za-z0-9+.-])(command:)(?=\S)/gi, '$1 ')
    .replace(/(?<!\\)\$\(/g, '\\$(');
}

export type Level = 'info' | 'warning' | 'error';

/** A notification (or, with `{ modal: true }`, a dialog) whose message is `plain`. */
export function notify(level: Level, message: string, ...items: string[]): Thenable<string | undefined>;
export function notify<T extends vscode.MessageItem>(level: Level, message: string, ...items: T[]): Thenable<T | undefined>;
export function notify<T extends vscode.MessageItem>(level: Level, message: string, options: vscode.MessageOptions, ...items: T[]): Thenable<T | undefined>;
export function notify(level: Level, message: string, ...rest: unknown[]): Thenable<unknown> {
  // VS Code tells the options from the items at run time; the overloads above keep callers typed.
  const args = rest as string[];
  const text = plain(message);
  if (level === 'error') return vscode.window.showErrorMessage(text, ...args);
  if (level === 'warning') return vscode.window.showWarningMessage(text, ...args);
  return vscode.window.showInformationMessage(text, ...args);
}
