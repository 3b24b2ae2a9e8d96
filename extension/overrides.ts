// What a workspace's own settings change that costs the user money. The settings that move the key,
// run a binary, lift a limit or delete the shared history are application- or machine-scoped in
// package.json, so VS Code ignores a workspace's value for them; the few that stay per workspace on
// purpose (WORKSPACE_COSTLY) are named to the user once per workspace and set of values (rfcs/0007).
import * as vscode from 'vscode';
import { SECTION, Setting, WORKSPACE_COSTLY } from './config';
import { notify } from './notify';

const TOLD_KEY = 'workspaceCostlySettingsTold';
const OPEN: vscode.MessageItem = { title: 'Open Workspace Settings' };

/** The costly settings this workspace (or one of its folders) sets, with their values. */
export function workspaceCostly(): { name: Setting; value: unknown }[] {
  const config = vscode.workspace.getConfiguration(SECTION);
  return WORKSPACE_COSTLY.flatMap((name) => {
    const found = config.inspect(name);
    const value = found?.workspaceFolderValue ?? found?.workspaceValue;
    return value === undefined ? [] : [{ name, value }];
  });
}

/** Tells the user which costly settings this workspace sets, unless these values were told before.
 * Names only: a value is the repository's text, and a notification renders links. */
export async function tellWorkspaceCostly(state: vscode.Memento): Promise<void> {
  const found = workspaceCostly();
  const signature = JSON.stringify(found);
  if (found.length === 0 || state.get<string>(TOLD_KEY) === signature) return;
  await state.update(TOLD_KEY, signature);
  const names = found.map((f) => f.name).join(', ');
  const picked = await notify(
    'info',
    `This workspace's settings change what your Vercel AI Gateway requests cost: ${names}. They apply to chats in this window; your own settings decide everything else.`,
    OPEN,
  );
  if (picked === OPEN) void vscode.commands.executeCommand('workbench.action.openWorkspaceSettings');
}
