// The models Copilot's picker shows (issue 22 §3): `picker.models`, ids and glob patterns the user
// chose, and "Choose Gateway Models…", which writes it. A model left out stays registered, marked not
// user-selectable (VS Code hides it from the picker), so a setting or a small task that names it
// keeps working.
import * as vscode from 'vscode';
import { setting, settingId } from './config';
import type { ModelEntry } from './contract';
import { notify, plain } from './notify';

const MAX_PATTERNS = 500; // a hand-edited setting: more is no list of models
const MAX_PATTERN = 200;

/** The setting's patterns, checked: strings of at most MAX_PATTERN characters; anything else is skipped. */
export function shownPatterns(): string[] {
  const raw = setting<unknown>('picker.models');
  if (!Array.isArray(raw)) return [];
  return raw.filter((p): p is string => typeof p === 'string' && p.length > 0 && p.length <= MAX_PATTERN).slice(0, MAX_PATTERNS);
}

/** Whether the picker shows `id`: every model when no pattern is set. */
export function isShown(id: string, patterns: readonly string[]): boolean {
  return patterns.length === 0 || patterns.some((pattern) => matches(id, pattern));
}

/** `*` any run of characters, `?` one, `[…]` one of a set (`[!…]` none of it); case-sensitive, as
 * `modelOptions`' patterns are (rfcs/0007). */
export function matches(id: string, pattern: string): boolean {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '*') source += '.*';
    else if (c === '?') source += '.';
    else if (c === '[' && pattern.indexOf(']', i + 2) > 0) {
      const end = pattern.indexOf(']', i + 2);
      const set = pattern.slice(i + 1, end);
      const negated = set.startsWith('!');
      source += `[${negated ? '^' : ''}${(negated ? set.slice(1) : set).replace(/[\\\]^]/g, '\\$&')}]`;
      i = end;
    } else source += c.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
  }
  return new RegExp(`^${source}$`, 's').test(id);
}

interface ModelItem extends vscode.QuickPickItem {
  id: string;
}

/** The orders *Choose Gateway Models…* offers (rfcs/0003, "Model metrics"), each a title button;
 * models without the number come last, in the catalogue's order. */
export type ModelOrder = 'cost' | 'firstToken' | 'tokensPerSecond' | 'reliability';
const LAST = Number.POSITIVE_INFINITY;
const ORDERS: Record<ModelOrder, { name: string; icon: string; metric: boolean; key: (m: ModelEntry) => readonly number[] }> = {
  // As the small-task rule prices (smalltasks.ts): the output price, then the input price.
  cost: { name: 'cost', icon: 'credit-card', metric: false, key: (m) => [m.pricing.output ?? LAST, m.pricing.input ?? LAST] },
  firstToken: { name: 'first token', icon: 'watch', metric: true, key: (m) => [m.metrics?.firstTokenMs ?? LAST] },
  tokensPerSecond: { name: 'tokens per second', icon: 'dashboard', metric: true, key: (m) => [-(m.metrics?.tokensPerSecond ?? -LAST)] },
  // Uptime, then the quicker first token among equals.
  reliability: { name: 'reliability', icon: 'pulse', metric: true, key: (m) => [-(m.metrics?.uptimePercent ?? -LAST), m.metrics?.firstTokenMs ?? LAST] },
};

/** The title button of each order: its tooltip is what a screen reader and the e2e test read. */
export function sortButtonTooltip(order: ModelOrder): string {
  return `Sort by ${ORDERS[order].name}`;
}

/** `models` in `order`: ascending keys, ties (and models without the number) as listed. */
export function sortModels(models: readonly ModelEntry[], order: ModelOrder): ModelEntry[] {
  const key = ORDERS[order].key;
  const keyed = models.map((model, index) => ({ model, index, key: key(model) }));
  keyed.sort((a, b) => {
    for (let i = 0; i < a.key.length; i++) if (a.key[i] !== b.key[i]) return a.key[i] < b.key[i] ? -1 : 1;
    return a.index - b.index;
  });
  return keyed.map(({ model }) => model);
}

/** A row's second line: window · prices · no tools (picker.py), and what the gateway measured. */
export function rowDetail(model: ModelEntry): string {
  return model.metrics?.summary ? `${model.detail} · ${model.metrics.summary}` : model.detail;
}

/** A multi-select list of the catalogue with windows, prices and metrics, sortable by the title's
 * buttons; writes `picker.models` in the user's settings: the ids picked, or nothing (every model)
 * when all are. */
export async function chooseModels(catalogue: () => Promise<ModelEntry[]>): Promise<void> {
  const models = await catalogue();
  if (models.length === 0) {
    void notify('warning', 'The gateway model list is empty (is the API key set? see Show Logs).');
    return;
  }
  const patterns = shownPatterns();
  const measured = models.some((model) => model.metrics !== null);
  const orders = (Object.keys(ORDERS) as ModelOrder[]).filter((order) => measured || !ORDERS[order].metric);
  const buttons = orders.map((order) => ({ iconPath: new vscode.ThemeIcon(ORDERS[order].icon), tooltip: sortButtonTooltip(order), order }));
  const chosen = new Set(models.filter((model) => isShown(model.id, patterns)).map((model) => model.id));
  const title = 'Gateway models in the model picker';
  const pick = vscode.window.createQuickPick<ModelItem>();
  pick.title = title;
  pick.placeholder = 'The models Copilot offers; the others stay usable by settings and small tasks';
  pick.canSelectMany = true;
  pick.matchOnDescription = true;
  pick.buttons = buttons;
  const show = (listed: readonly ModelEntry[]) => {
    pick.items = listed.map((model) => ({
      label: plain(model.name),
      description: plain(model.id),
      detail: plain(rowDetail(model)),
      picked: chosen.has(model.id),
      id: model.id,
    }));
    pick.selectedItems = pick.items.filter((item) => chosen.has(item.id)); // a new order keeps the choice
  };
  show(models);
  const picked = await new Promise<readonly ModelItem[] | undefined>((resolve) => {
    pick.onDidChangeSelection((selected) => {
      chosen.clear();
      for (const item of selected) chosen.add(item.id);
    });
    pick.onDidTriggerButton((button) => {
      const order = (button as (typeof buttons)[number]).order;
      pick.title = `${title}, by ${ORDERS[order].name}`;
      show(sortModels(models, order));
    });
    pick.onDidAccept(() => resolve(pick.selectedItems));
    pick.onDidHide(() => resolve(undefined));
    pick.show();
  });
  pick.dispose();
  if (!picked) return;
  if (picked.length === 0) {
    void notify('warning', 'Pick at least one model: with none, the picker would offer no gateway model.');
    return;
  }
  const ids = picked.length === models.length ? [] : picked.map((item) => item.id);
  await vscode.workspace.getConfiguration().update(settingId('picker.models'), ids, vscode.ConfigurationTarget.Global);
}
