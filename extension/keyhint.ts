// The one hint a new user gets. With no key anywhere (no provider group, no AI_GATEWAY_API_KEY or
// VERCEL_OIDC_TOKEN), the model picker has no gateway model and nothing says why; Add Models is
// two screens away. Said once per install, never to a user who has a key (rfcs/0007, "The hint").
import type * as vscode from 'vscode';
import { notify } from './notify';

/** The globalState key: set once the hint was shown, or once a key was found. */
export const HINT_DONE = 'keyHint.done';
/** How long after the keyless list to wait for VS Code to ask for a group's list (it asks for
 * every group in the same pass, in well under a second), before saying there is no key. */
export const HINT_SETTLE_MS = 3_000;
export const ADD_KEY = 'Add API Key';

export class KeyHint {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly state: vscode.Memento,
    private readonly addKey: () => Thenable<unknown>,
  ) {}

  /** VS Code asked for the default key's list and there is no default key. */
  nothingToServe(): void {
    if (this.timer || this.state.get<boolean>(HINT_DONE)) return;
    this.timer = setTimeout(() => void this.show(), HINT_SETTLE_MS);
  }

  /** A key was found (a group listed): this user never needs the hint. */
  keyFound(): void {
    this.dispose();
    if (!this.state.get<boolean>(HINT_DONE)) void this.state.update(HINT_DONE, true);
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private async show(): Promise<void> {
    this.timer = undefined;
    if (this.state.get<boolean>(HINT_DONE)) return; // another window of this install said it
    await this.state.update(HINT_DONE, true);
    const choice = await notify(
      'info',
      'Vercel AI Gateway: add your AI Gateway API key to see its models in Copilot Chat (Chat: Manage Language Models → Add Models → Vercel AI Gateway).',
      ADD_KEY,
    );
    if (choice === ADD_KEY) await this.addKey();
  }
}
