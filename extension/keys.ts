// The API key: VS Code's SecretStorage, else the environment. Never settings, logs or command lines.
import * as vscode from 'vscode';
import { SECRET_API_KEY } from './config';

export class KeyStore {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChange = this.changed.event;
  private readonly seen = new Set<string>();

  constructor(private readonly secrets: vscode.SecretStorage) {}

  async get(): Promise<string | undefined> {
    // Secret storage can fail (no keyring on a Linux desktop): the environment still counts then.
    const stored = await this.secrets.get(SECRET_API_KEY).then(
      (value) => value,
      () => undefined,
    );
    const key = stored || process.env.AI_GATEWAY_API_KEY || process.env.VERCEL_OIDC_TOKEN || undefined;
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
      prompt: "Create one at vercel.com → AI Gateway → API Keys. It is kept in VS Code's secret storage.",
      password: true,
      ignoreFocusOut: true,
      validateInput: (value) => (value.trim() ? undefined : 'Enter a key, or press Escape to cancel'),
    });
    if (!key?.trim()) return; // Escape
    await this.secrets.store(SECRET_API_KEY, key.trim());
    this.changed.fire();
  }

  async manage(): Promise<void> {
    const stored = await this.secrets.get(SECRET_API_KEY);
    const pick = stored ? await vscode.window.showQuickPick(['Replace API key', 'Remove API key'], { title: 'Vercel AI Gateway' }) : 'Replace API key';
    if (pick === 'Replace API key') await this.prompt();
    if (pick === 'Remove API key') {
      await this.secrets.delete(SECRET_API_KEY);
      this.changed.fire();
    }
  }
}
