// Where else Copilot shows our models: the Copilot harness (the Copilot SDK in VS Code's agent host,
// the editor's chat harness from VS Code 1.141) and the Agents window, which reach extension models
// through VS Code's BYOK bridge. VS Code marks every model of an extension other than Copilot Chat
// `isBYOK`, so ours qualify; what hides them is two settings, off by default (read in the 1.139 host:
// rfcs/0009-copilot-harness.md). The user of a desktop VS Code is told once, and a click turns them
// on; nothing is written without it. A web workbench (code-server, vscode.dev) has no bridge: there
// the settings change nothing, and nothing is said.
import * as vscode from 'vscode';
import { notify } from './notify';

/** The bridge lists BYOK models to the agent host only with this on (an experiment; default false). */
export const BYOK_MODELS = 'chat.agentHost.byokModels.enabled';
/** `{ "publisher.name": true }`: the extensions the Agents window runs (application scope). */
export const AGENTS_WINDOW = 'extensions.supportAgentsWindow';
export const TOLD_KEY = 'vercelAiGateway.harness.told';
const TURN_ON = 'Turn On';

/** The settings that hide our models from the harness or the Agents window on this VS Code: only
 * those it registers (an older host has neither, and writing an unregistered setting fails). */
export function hidingSettings(config: vscode.WorkspaceConfiguration, extensionId: string): string[] {
  const hiding: string[] = [];
  const byok = config.inspect<boolean>(BYOK_MODELS);
  if (byok?.defaultValue !== undefined && config.get(BYOK_MODELS) !== true) hiding.push(BYOK_MODELS);
  const agents = config.inspect<Record<string, unknown>>(AGENTS_WINDOW);
  if (extensionId && agents?.defaultValue !== undefined && !allowed(config.get(AGENTS_WINDOW), extensionId)) hiding.push(AGENTS_WINDOW);
  return hiding;
}

/** VS Code compares extension ids without case. */
function allowed(map: unknown, extensionId: string): boolean {
  if (typeof map !== 'object' || map === null) return false;
  const wanted = extensionId.toLowerCase();
  return Object.entries(map).some(([id, on]) => id.toLowerCase() === wanted && on === true);
}

export class HarnessNotice {
  private checked = false; // once per window; told once for good

  constructor(
    private readonly extensionId: string,
    private readonly state: vscode.Memento,
    private readonly log: Pick<vscode.LogOutputChannel, 'info' | 'warn'>,
  ) {}

  /** A chat used one of our models: the user is one who would want them wherever Copilot runs. */
  onRequest(): void {
    if (this.checked) return;
    this.checked = true;
    void this.tell().catch((error: Error) => this.log.warn(`Could not offer the Copilot harness settings: ${error.message}`));
  }

  private async tell(): Promise<void> {
    if (this.state.get<boolean>(TOLD_KEY) || vscode.env.uiKind === vscode.UIKind.Web) return;
    const hiding = hidingSettings(vscode.workspace.getConfiguration(), this.extensionId);
    if (!hiding.length) return;
    await this.state.update(TOLD_KEY, true);
    const names = hiding.map((name) => `'${name}'`).join(' and ');
    const answer = await notify(
      'info',
      `Vercel AI Gateway models are hidden from Copilot's agent harness and the Agents window until ${names} ${hiding.length > 1 ? 'are' : 'is'} on. Turn ${hiding.length > 1 ? 'them' : 'it'} on in your user settings?`,
      TURN_ON,
    );
    if (answer !== TURN_ON) return;
    await turnOn(vscode.workspace.getConfiguration(), hiding, this.extensionId);
    this.log.info(`Turned on ${names} in the user settings: our models are offered to Copilot's agent harness and the Agents window.`);
  }
}

/** Writes the user's settings only (never a workspace's), keeping the other extensions' entries. */
export async function turnOn(config: vscode.WorkspaceConfiguration, hiding: readonly string[], extensionId: string): Promise<void> {
  if (hiding.includes(BYOK_MODELS)) await config.update(BYOK_MODELS, true, vscode.ConfigurationTarget.Global);
  if (hiding.includes(AGENTS_WINDOW)) {
    const current = config.inspect<Record<string, unknown>>(AGENTS_WINDOW)?.globalValue;
    const kept = typeof current === 'object' && current !== null ? current : {};
    await config.update(AGENTS_WINDOW, { ...kept, [extensionId]: true }, vscode.ConfigurationTarget.Global);
  }
}
