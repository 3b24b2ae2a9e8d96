// Add Virtual Model… (issue 45 §3): a team's saved gateway configuration, addressed as `vmc/<slug>`,
// added by its id to `virtualModels` in the user's settings (application scope: a workspace cannot
// add models that bill the key). The settings change makes the sidecar list the models again, and it
// offers the new one with what the gateway says of it (server/gateway_lm/offer/virtual.py).
import * as vscode from 'vscode';
import { SECTION } from './config';
import { MAX_VIRTUAL_MODELS, VIRTUAL_ID_PATTERN } from './contract';
import { isShown, shownPatterns } from './curate';
import { notify } from './notify';

const VIRTUAL_ID = new RegExp(VIRTUAL_ID_PATTERN);
const PREFIX = 'vmc/';
const MAX_INPUT = 200; // what the box reads of a paste; an id is at most 104 characters

/** What the user typed as an id: trimmed, the prefix added when only the slug was typed. */
export function virtualId(typed: string): string {
  const text = typed.trim().slice(0, MAX_INPUT);
  return text.startsWith(PREFIX) || text.includes('/') ? text : PREFIX + text;
}

/** Why `typed` cannot be added to `current`, or undefined when it can. */
export function virtualIdProblem(typed: string, current: readonly string[]): string | undefined {
  const id = virtualId(typed);
  if (!VIRTUAL_ID.test(id)) return "A virtual model's id is vmc/ and its slug: letters, digits, '.', '_' and '-' (e.g. vmc/team-coder).";
  if (current.includes(id)) return `${id} is added already.`;
  if (current.length >= MAX_VIRTUAL_MODELS) return `At most ${MAX_VIRTUAL_MODELS} virtual models: remove one in the settings first.`;
  return undefined;
}

/** The ids in the user's settings: strings only (VS Code does not check a hand-edited value). */
function added(): string[] {
  const raw = vscode.workspace.getConfiguration(SECTION).inspect<unknown>('virtualModels')?.globalValue;
  return Array.isArray(raw) ? raw.filter((id): id is string => typeof id === 'string') : [];
}

export async function addVirtualModel(): Promise<string | undefined> {
  const current = added();
  const typed = await vscode.window.showInputBox({
    title: 'Add Virtual Model',
    prompt: "Your team's virtual model, as the gateway addresses it: vmc/ and its slug",
    placeHolder: 'vmc/team-coder',
    ignoreFocusOut: true,
    validateInput: (value) => (value.trim() ? virtualIdProblem(value, current) : undefined),
  });
  if (!typed?.trim() || virtualIdProblem(typed, current)) return undefined;
  const id = virtualId(typed);
  await vscode.workspace.getConfiguration(SECTION).update('virtualModels', [...current, id], vscode.ConfigurationTarget.Global);
  const hidden = !isShown(id, shownPatterns()) ? ' Your picker.models list leaves it out of the picker: add it with Choose Gateway Models….' : '';
  void notify('info', `Added ${id}: it is in the model picker once the list is read again (a few seconds).${hidden}`);
  return id;
}
