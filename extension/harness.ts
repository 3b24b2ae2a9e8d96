// Where else Copilot shows our models: the Copilot harness (the Copilot SDK in VS Code's agent host,
// the editor's chat harness from VS Code 1.141) and the Agents window, which reach extension models
// through VS Code's BYOK bridge. VS Code marks every model of an extension other than Copilot Chat
// `isBYOK`, so ours qualify; what hides them is two settings, off by default (read in the 1.139 host:
// rfcs/0009-copilot-harness.md). The user of a desktop VS Code is told once, and a click turns them
// on; nothing is written without it. A web workbench (code-server, vscode.dev) has no bridge: there
// the settings change nothing, and nothing is said.
import * as vscode from 'vscode';
import { notify } from './notify';
import { isRecord } from './saved';

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
  if (!isRecord(map)) return false;
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
    const names = quoted(hiding);
    const answer = await notify(
      'info',
      `Vercel AI Gateway models are hidden from Copilot's agent harness and the Agents window until ${names} ${hiding.length > 1 ? 'are' : 'is'} on. Turn ${hiding.length > 1 ? 'them' : 'it'} on in your user settings?`,
      TURN_ON,
    );
    if (answer !== TURN_ON) return;
    await turnOn(vscode.workspace.getConfiguration(), hiding, this.extensionId, this.log);
    // What VS Code reads now: a workspace's (or folder's) value of a setting of window scope wins over
    // the user's, and a workspace's settings are never written, so the click may change nothing there.
    const config = vscode.workspace.getConfiguration();
    const still = hidingSettings(config, this.extensionId).filter((name) => hiding.includes(name));
    const on = hiding.filter((name) => !still.includes(name));
    if (on.length) this.log.info(`Turned on ${quoted(on)} in the user settings: our models are offered to Copilot's agent harness and the Agents window.`);
    if (!still.length) return;
    const byWorkspace = still.every((name) => {
      const values = config.inspect(name);
      return values?.workspaceValue !== undefined || values?.workspaceFolderValue !== undefined;
    });
    const it = still.length > 1 ? 'them' : 'it';
    const why = byWorkspace
      ? `this workspace's settings turn ${it} off, and they win over your user settings. Remove ${it} from them (.vscode/settings.json, or the .code-workspace file)`
      : `VS Code still reads ${it} as off (a policy or another settings layer holds ${it}). Look for ${it} in the Settings editor`;
    const text = `${quoted(still)} ${still.length > 1 ? 'are' : 'is'} still off: ${why} to offer Vercel AI Gateway models to Copilot's agent harness.`;
    this.log.warn(text);
    void notify('warning', text);
  }
}

function quoted(names: readonly string[]): string {
  return names.map((name) => `'${name}'`).join(' and ');
}

/** Writes the user's settings only (never a workspace's), keeping the other extensions' entries. Our
 * id goes in as VS Code reads it: it keys such maps by the id without case (an ExtensionIdentifierMap,
 * a later entry replacing an earlier one, as it reads `extensions.supportVirtualWorkspaces`), so an
 * entry for it in another letter case is replaced, not left beside ours; a value that is no map (an
 * array: VS Code reads no id from it) becomes one, logged. */
export async function turnOn(
  config: vscode.WorkspaceConfiguration,
  hiding: readonly string[],
  extensionId: string,
  log: Pick<vscode.LogOutputChannel, 'warn'>,
): Promise<void> {
  if (hiding.includes(BYOK_MODELS)) await config.update(BYOK_MODELS, true, vscode.ConfigurationTarget.Global);
  if (hiding.includes(AGENTS_WINDOW)) {
    const current = config.inspect(AGENTS_WINDOW)?.globalValue;
    if (current !== undefined && !isRecord(current)) {
      log.warn(
        `'${AGENTS_WINDOW}' held no map of extension ids (${Array.isArray(current) ? 'a list' : typeof current}), which VS Code reads as none: it is now one.`,
      );
    }
    const wanted = extensionId.toLowerCase();
    const kept = Object.entries(isRecord(current) ? current : {}).filter(([id]) => id.toLowerCase() !== wanted);
    await config.update(AGENTS_WINDOW, { ...Object.fromEntries(kept), [extensionId]: true }, vscode.ConfigurationTarget.Global);
  }
}
