// Copilot's small tasks (chat titles, progress messages, commit messages) on a gateway model: which
// model the rule picks, the settings Copilot Chat reads, and the one-time prompt. The settings and
// the notice's condition are Copilot Chat's, found in the 1.139 host: rfcs/0008-small-tasks.md.
import * as vscode from 'vscode';
import { VENDOR } from './config';
import type { ModelEntry } from './contract';
import { notify, plain } from './notify';
import { perMillion } from './shared/money';

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

// A small task wants its first token soon (rfcs/0008, "The pick rule"): among the cheap candidates of
// a group, those within CHEAP_FACTOR of its lowest output price, the quickest first token the gateway
// measured comes first; a model up less than MIN_UPTIME percent of the time counts as unmeasured.
export const CHEAP_FACTOR = 2;
export const MIN_UPTIME = 95;

/** The models Copilot's small tasks may run on, best first: tool-capable and priced, and no model's
 * fast tier (`…-fast` beside its model: the same model at a higher price, whose "fast" is no small
 * model's hint); a fast hint first; then, within a group, the cheap ones (CHEAP_FACTOR) by the
 * gateway's measured first token where it has one; then the lowest output price, the lowest input
 * price, the id. Without metrics, the order is the prices'. */
export function rankForSmallTasks(models: readonly ModelEntry[]): ModelEntry[] {
  const candidates = models.filter((m) => m.capabilities.toolCalling && priced(m) && !m.fastTierOf);
  const cheapest = [Infinity, Infinity];
  for (const m of candidates) cheapest[hint(m)] = Math.min(cheapest[hint(m)], m.pricing.output ?? 0);
  const key = (m: ModelEntry) => {
    const cheap = (m.pricing.output ?? 0) <= CHEAP_FACTOR * cheapest[hint(m)];
    return [hint(m), cheap ? 0 : 1, cheap ? firstToken(m) : 0, m.pricing.output ?? 0, m.pricing.input ?? 0] as const;
  };
  return candidates.sort((a, b) => {
    const [ka, kb] = [key(a), key(b)];
    return ka[0] - kb[0] || ka[1] - kb[1] || ka[2] - kb[2] || ka[3] - kb[3] || ka[4] - kb[4] || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  });
}

function hint(model: ModelEntry): 0 | 1 {
  return hasFastHint(model) ? 0 : 1;
}

/** The measured median first token in ms, or a number past any (unmeasured, or too often down). */
function firstToken(model: ModelEntry): number {
  const metrics = model.metrics;
  if (metrics?.firstTokenMs == null || (metrics.uptimePercent !== null && metrics.uptimePercent < MIN_UPTIME)) return Number.MAX_SAFE_INTEGER;
  return metrics.firstTokenMs;
}

/** How Copilot names an extension's model in the utility settings (split at the first "/"). */
export function settingValue(model: ModelEntry): string {
  return `${VENDOR}/${model.id}`;
}

export function describePrice(model: ModelEntry): string {
  const { input, output } = model.pricing;
  if (input === null || output === null) return 'no price listed';
  return `${perMillion(input)} in / ${perMillion(output)} out per million tokens`;
}

/** A row's second line in the command: its prices, and what the gateway measured of it. */
export function describeCandidate(model: ModelEntry): string {
  return model.metrics?.summary ? `${describePrice(model)} · ${model.metrics.summary}` : describePrice(model);
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

  /** The command: the candidates with their prices, the rule's pick first; writes the chosen one,
   * and asks first when a setting holds another model (the user's, or another vendor's). */
  async choose(): Promise<ModelEntry | undefined> {
    const config = vscode.workspace.getConfiguration();
    if (config.inspect(UTILITY_SMALL_MODEL)?.defaultValue === undefined) {
      void notify('warning', `This VS Code has no '${UTILITY_SMALL_MODEL}' setting: Copilot Chat chooses its small-task models itself here.`);
      return undefined;
    }
    const catalogue = await this.deps.catalogue();
    const ranked = rankForSmallTasks(catalogue);
    if (ranked.length === 0) {
      const why = catalogue.length ? 'no gateway model both calls tools and lists a price' : 'the model list is empty (is the API key set? see Show Logs)';
      void notify('warning', `Nothing to use for Copilot's small tasks: ${why}.`);
      return undefined;
    }
    // The gateway's names, drawn by the quick pick with icons.
    const items: ModelItem[] = ranked.map((model, index) => ({
      label: plain(model.name),
      description: plain(index === 0 ? `${model.id} · recommended` : model.id),
      detail: describeCandidate(model),
      model,
    }));
    const picked = await vscode.window.showQuickPick(items, {
      title: "Gateway model for Copilot's small tasks",
      placeHolder: 'Chat titles, progress messages and commit messages run on this model',
      matchOnDescription: true,
    });
    if (!picked) return undefined;
    const keys = await this.keysToWrite(picked.model);
    if (keys.length === 0) return undefined;
    try {
      await this.use(picked.model, keys);
    } catch (error) {
      void notify('error', `Could not write ${UTILITY_SMALL_MODEL}: ${(error as Error).message}`);
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

  /** Offers the rule's pick for the settings that are empty; one that holds a model stays (the
   * message says which, and Choose… asks before replacing it). */
  private async prompt(): Promise<void> {
    const best = rankForSmallTasks(await this.deps.catalogue())[0];
    if (!best) return; // nothing to offer; the command says why
    const held = heldModels(vscode.workspace.getConfiguration());
    const empty = UTILITY_SETTINGS.filter((key) => !held.has(key));
    const use = `Use ${best.name}`;
    const offer = `${best.name} (${describePrice(best)}) from Vercel AI Gateway`;
    const message =
      held.size === 0
        ? `Copilot runs chat titles, progress messages and commit messages on a separate small model, and none is set. Use ${offer}?`
        : `Copilot runs chat titles, progress messages and commit messages on separate small models: ${describeHeld(held)}, and ${empty.join(' and ')} is not set. Use ${offer} for ${empty.join(' and ')}? ${describeKept(held)}.`;
    const answer = await notify('info', message, use, 'Choose…', "Don't ask again");
    if (answer === use) await this.use(best, empty);
    else if (answer === 'Choose…') await this.choose();
    else if (answer === "Don't ask again") await this.deps.state.update(DONT_ASK_KEY, true);
  }

  /** The settings to write for `model`: both, unless one holds another model and the user keeps it
   * (none when they close the question). */
  private async keysToWrite(model: ModelEntry): Promise<string[]> {
    const value = settingValue(model);
    const others = new Map([...heldModels(vscode.workspace.getConfiguration())].filter(([, held]) => held !== value));
    if (others.size === 0) return [...UTILITY_SETTINGS];
    const [them, keep] = others.size > 1 ? ['them', 'Keep Them'] : ['it', 'Keep It'];
    const free = UTILITY_SETTINGS.filter((key) => !others.has(key));
    const only = free.length ? ` ${keep} sets only ${free.join(' and ')}.` : '';
    const answer = await notify('info', `Copilot's small tasks: ${describeHeld(others)}. Replace ${them} with ${model.name}?${only}`, 'Replace', keep);
    if (answer === 'Replace') return [...UTILITY_SETTINGS];
    return answer === keep ? free : [];
  }

  /** `keys` (of the two utility settings) for the user (global): Copilot's notice stays until both are set. */
  private async use(model: ModelEntry, keys: readonly string[]): Promise<void> {
    const config = vscode.workspace.getConfiguration();
    const value = settingValue(model);
    for (const key of keys) await config.update(key, value, vscode.ConfigurationTarget.Global);
    this.deps.log.info(`Copilot's small tasks now use ${value} (${keys.join(', ')}).`);
    const now = vscode.workspace.getConfiguration();
    const shadowed = keys.filter((key) => now.get(key) !== value);
    const note = shadowed.length ? ` A workspace setting overrides ${shadowed.join(' and ')} here.` : '';
    const kept = [...heldModels(now)].filter(([key]) => !keys.includes(key)).map(([key, held]) => `; ${key} keeps '${held}'`);
    const what =
      keys.length === UTILITY_SETTINGS.length
        ? `Copilot's chat titles, progress messages and commit messages now run on ${model.name}.`
        : `${keys.join(' and ')} now uses ${model.name}${kept.join('')}.`;
    void notify('info', `${what}${note}`);
  }
}

const UTILITY_SETTINGS = [UTILITY_SMALL_MODEL, UTILITY_MODEL] as const;

/** The utility settings that name a model (any vendor's), with the model they name. */
function heldModels(config: vscode.WorkspaceConfiguration): Map<string, string> {
  const held = new Map<string, string>();
  for (const key of UTILITY_SETTINGS) {
    const value = config.get(key);
    if (typeof value === 'string' && isSet(value)) held.set(key, value);
  }
  return held;
}

/** "chat.utilitySmallModel is set to 'ollama/llama3'" (values as written: another vendor's may name any model). */
function describeHeld(held: ReadonlyMap<string, string>): string {
  return [...held].map(([key, value]) => `${key} is set to '${value}'`).join(' and ');
}

function describeKept(held: ReadonlyMap<string, string>): string {
  return held.size > 1 ? 'Those set stay as they are' : `${[...held.keys()][0]} stays as it is`;
}
