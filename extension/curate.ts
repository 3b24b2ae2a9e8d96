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

/** A multi-select list of the catalogue with windows and prices; writes `picker.models` in the
 * user's settings: the ids picked, or nothing (every model) when all are. */
export async function chooseModels(catalogue: () => Promise<ModelEntry[]>): Promise<void> {
  const models = await catalogue();
  if (models.length === 0) {
    void notify('warning', 'The gateway model list is empty (is the API key set? see Show Logs).');
    return;
  }
  const patterns = shownPatterns();
  const items: ModelItem[] = models.map((model) => ({
    label: plain(model.name),
    description: plain(model.id),
    detail: plain(model.detail), // window · prices · no tools (picker.py)
    picked: isShown(model.id, patterns),
    id: model.id,
  }));
  const picked = await vscode.window.showQuickPick(items, {
    title: 'Gateway models in the model picker',
    placeHolder: 'The models Copilot offers; the others stay usable by settings and small tasks',
    canPickMany: true,
    matchOnDescription: true,
  });
  if (!picked) return;
  if (picked.length === 0) {
    void notify('warning', 'Pick at least one model: with none, the picker would offer no gateway model.');
    return;
  }
  const ids = picked.length === models.length ? [] : picked.map((item) => item.id);
  await vscode.workspace.getConfiguration().update(settingId('picker.models'), ids, vscode.ConfigurationTarget.Global);
}
