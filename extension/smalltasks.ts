// Copilot's small tasks (chat titles, progress messages, commit messages) on a gateway model: which
// model the rule picks, the settings Copilot Chat reads, and the one-time prompt. The settings and
// the notice's condition are Copilot Chat's, found in the 1.139 host: rfcs/0008-small-tasks.md.
import * as vscode from 'vscode';
import { VENDOR } from './config';
import type { ModelEntry } from './contract';

/** Copilot's "copilot-utility" and "copilot-utility-small" families; values are `vendor/id`. */
export const UTILITY_MODEL = 'chat.utilityModel';
export const UTILITY_SMALL_MODEL = 'chat.utilitySmallModel';
/** 'mainAgent' runs the small tasks on the chat's own model and hides Copilot's notice. */
export const BYOK_DEFAULT = 'chat.byokUtilityModelDefault';
/** VS Code passes the calling extension's id in lower case (ExtensionIdentifier.toKey). */
export const COPILOT_CHAT = 'github.copilot-chat';
export const DONT_ASK_KEY = 'vercelAiGateway.smallTasks.dontAsk';

// Words in a model's id, name or tags that mark the small, fast variant of a family.
const FAST_HINTS = new Set(['fast', 'mini', 'flash', 'haiku', 'nano', 'lite']);

/** A "fast" hint as a whole word: "gemini" is no "mini". */
export function hasFastHint(model: ModelEntry): boolean {
  const words = `${model.id} ${model.name} ${model.tags.join(' ')}`.toLowerCase().split(/[^a-z0-9]+/);
  return words.some((word) => FAST_HINTS.has(word));
}

function priced(model: ModelEntry): model is ModelEntry & { pricing: { input: number; output: number } } {
  const { input, output } = model.pricing;
  return typeof input === 'number' && typeof output === 'number' && Number.isFinite(input) && Number.isFinite(output) && input >= 0 && output >= 0;
}

/** The models Copilot's small tasks may run on, best first: tool-capable and priced; a fast hint
 * first, then the lowest output price, the lowest input price, the id. */
export function rankForSmallTasks(models: readonly ModelEntry[]): ModelEntry[] {
  const candidates = models.filter((m) => m.capabilities.toolCalling && priced(m));
  const key = (m: ModelEntry) => [hasFastHint(m) ? 0 : 1, m.pricing.output ?? 0, m.pricing.input ?? 0] as const;
  return candidates.sort((a, b) => {
    const [ka, kb] = [key(a), key(b)];
    return ka[0] - kb[0] || ka[1] - kb[1] || ka[2] - kb[2] || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  });
}

/** How Copilot names an extension's model in the utility settings (split at the first "/"). */
export function settingValue(model: ModelEntry): string {
  return `${VENDOR}/${model.id}`;
}

export function describePrice(model: ModelEntry): string {
  const { input, output } = model.pricing;
  if (input === null || output === null) return 'no price listed';
  return `$${usd(input)} in / $${usd(output)} out per million tokens`;
}

function usd(value: number): string {
  return value >= 1 ? value.toFixed(2) : String(Number(value.toPrecision(2)));
}

function isSet(value: unknown): boolean {
  return typeof value === 'string' && value.length > 0;
}

/** Copilot Chat 0.67's condition for "Set BYOK utility models" (less its GitHub sign-in check, which
 * an extension cannot read without asking): a utility setting empty and the default not 'mainAgent'.
 * False on a VS Code without the settings: writing an unregistered setting fails. */
export function needsUtilityModels(config: vscode.WorkspaceConfiguration): boolean {
  if (config.inspect(UTILITY_SMALL_MODEL)?.defaultValue === undefined) return false;
  if (config.get(BYOK_DEFAULT) === 'mainAgent') return false;
  return !isSet(config.get(UTILITY_MODEL)) || !isSet(config.get(UTILITY_SMALL_MODEL));
}

export interface SmallTasksDeps {
  /** The catalogue as the model picker has it (cached, or fetched when there is none yet). */
  catalogue(): Promise<ModelEntry[]>;
  state: vscode.Memento;
  log: Pick<vscode.LogOutputChannel, 'info' | 'warn'>;
}

interface ModelItem extends vscode.QuickPickItem {
  model: ModelEntry;
}

export class SmallTasks {
  private asked = false; // once per window; "Don't ask again" is for good

  constructor(private readonly deps: SmallTasksDeps) {}

  /** The command: the candidates with their prices, the rule's pick first; writes the chosen one. */
  async choose(): Promise<ModelEntry | undefined> {
    const config = vscode.workspace.getConfiguration();
    if (config.inspect(UTILITY_SMALL_MODEL)?.defaultValue === undefined) {
      void vscode.window.showWarningMessage(`This VS Code has no '${UTILITY_SMALL_MODEL}' setting: Copilot Chat chooses its small-task models itself here.`);
      return undefined;
    }
    const catalogue = await this.deps.catalogue();
    const ranked = rankForSmallTasks(catalogue);
    if (ranked.length === 0) {
      const why = catalogue.length ? 'no gateway model both calls tools and lists a price' : 'the model list is empty (is the API key set? see Show Logs)';
      void vscode.window.showWarningMessage(`Nothing to use for Copilot's small tasks: ${why}.`);
      return undefined;
    }
    const items: ModelItem[] = ranked.map((model, index) => ({
      label: model.name,
      description: index === 0 ? `${model.id} · recommended` : model.id,
      detail: describePrice(model),
      model,
    }));
    const picked = await vscode.window.showQuickPick(items, {
      title: "Gateway model for Copilot's small tasks",
      placeHolder: 'Chat titles, progress messages and commit messages run on this model',
      matchOnDescription: true,
    });
    if (!picked) return undefined;
    try {
      await this.use(picked.model);
    } catch (error) {
      void vscode.window.showErrorMessage(`Could not write ${UTILITY_SMALL_MODEL}: ${(error as Error).message}`);
      return undefined;
    }
    return picked.model;
  }

  /** Copilot sent us a request: when its small tasks have no model, offer one, once. */
  onRequest(initiator: string | undefined): void {
    if (initiator !== COPILOT_CHAT || this.asked || this.deps.state.get<boolean>(DONT_ASK_KEY) === true) return;
    if (!needsUtilityModels(vscode.workspace.getConfiguration())) return;
    this.asked = true;
    void this.prompt().catch((error: Error) => this.deps.log.warn(`Small-task prompt: ${error.message}`));
  }

  private async prompt(): Promise<void> {
    const best = rankForSmallTasks(await this.deps.catalogue())[0];
    if (!best) return; // nothing to offer; the command says why
    const use = `Use ${best.name}`;
    const answer = await vscode.window.showInformationMessage(
      `Copilot runs chat titles, progress messages and commit messages on a separate small model, and none is set. Use ${best.name} (${describePrice(best)}) from Vercel AI Gateway?`,
      use,
      'Choose…',
      "Don't ask again",
    );
    if (answer === use) await this.use(best);
    else if (answer === 'Choose…') await this.choose();
    else if (answer === "Don't ask again") await this.deps.state.update(DONT_ASK_KEY, true);
  }

  /** Both utility settings, for the user (global): Copilot's notice stays until both are set. */
  private async use(model: ModelEntry): Promise<void> {
    const config = vscode.workspace.getConfiguration();
    const value = settingValue(model);
    await config.update(UTILITY_SMALL_MODEL, value, vscode.ConfigurationTarget.Global);
    await config.update(UTILITY_MODEL, value, vscode.ConfigurationTarget.Global);
    this.deps.log.info(`Copilot's small tasks now use ${value} (${UTILITY_SMALL_MODEL}, ${UTILITY_MODEL}).`);
    const shadowed = [UTILITY_SMALL_MODEL, UTILITY_MODEL].filter((key) => vscode.workspace.getConfiguration().get(key) !== value);
    const note = shadowed.length ? ` A workspace setting overrides ${shadowed.join(' and ')} here.` : '';
    void vscode.window.showInformationMessage(`Copilot's chat titles, progress messages and commit messages now run on ${model.name}.${note}`);
  }
}
