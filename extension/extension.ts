// Activation: the parts that need VS Code (secrets, settings, status bar, commands, output channel)
// and the sidecar's lifetime. Everything else happens in the Python sidecar.
import * as path from 'node:path';
import * as vscode from 'vscode';
import { COMMANDS, NETWORK_SECTION, NETWORK_SETTINGS, SECTION, setting, settingId, VENDOR } from './config';
import { CreditsReader } from './credits';
import { forgetShown } from './errors';
import { askToSend } from './guard';
import { KeyStore } from './keys';
import type { ModelEntry } from './contract';
import { HarnessNotice } from './harness';
import { notify } from './notify';
import { tellWorkspaceCostly } from './overrides';
import { GatewayChatProvider } from './provider';
import { checkModels } from './saved';
import { chooseInterpreter } from './sidecar/setup';
import { redacting, SidecarConnection, sidecarSecrets } from './sidecar/connection';
import { SmallTasks } from './smalltasks';
import { StatusBar } from './status';
import { readJson, writeJsonAtomic } from './storage';
import { CountPersistence } from './counts/persistence';
import { Dashboard } from './dashboard';
import { chooseModels, shownPatterns } from './curate';
import { addVirtualModel } from './virtual';
import type { ThinkingMode } from './wire';

/** The last counts' saves of the windows activated in this host (one, in VS Code). */
const finalSaves = new Set<() => Promise<void>>();

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscode.window.createOutputChannel('Vercel AI Gateway', { log: true });
  const status = new StatusBar();
  const keys = new KeyStore(context.secrets);
  let settingSecrets = sidecarSecrets(); // read again when a setting changes, not per log line
  const sidecar = new SidecarConnection(
    context,
    log,
    // Message tracing prints the settings the sidecar is given, the proxy's authorization among them.
    redacting(log, () => [...keys.known(), ...settingSecrets]),
  );
  const cacheFile = path.join(context.globalStorageUri.fsPath, 'models.json');
  const warn = (message: string) => log.warn(message);
  let cache: Promise<ModelEntry[]> | undefined; // read once: a bad file is reported once
  let lastGroup: string | undefined; // the provider group of the last request (undefined: the default key)
  const credits = new CreditsReader(
    sidecar,
    // The credits of the key the last request went out with: each group's team has its own.
    async () => (lastGroup === undefined ? keys.get() : keys.keyOf(lastGroup)),
    (balance) => status.setCredits(balance),
    log,
  );
  const provider = new GatewayChatProvider(sidecar, {
    apiKey: () => keys.get(),
    onGroup: (group) => keys.listed(group),
    groupKey: (tag) => keys.keyOf(tag),
    thinking: () => setting<ThinkingMode>('thinking') ?? 'auto',
    shown: shownPatterns,
    loadCache: () => (cache ??= loadModels(cacheFile, log)),
    saveCache: (models) => writeJsonAtomic(cacheFile, models).catch((error: Error) => warn(`Could not save the model list: ${error.message}`)),
    onUsage: (model, usage, requestId, group, served) => {
      if (group !== lastGroup) credits.keyChanged();
      lastGroup = group;
      status.show(model, usage, requestId, group, served); // the status bar shows real tokens
      credits.refreshSoon();
    },
    confirmSpend: askToSend,
    tools: () => vscode.lm.tools,
    onRequest: (initiator) => {
      smallTasks.onRequest(initiator); // requests come after activation
      harness.onRequest();
    },
    log,
  });
  const smallTasks = new SmallTasks({ catalogue: () => provider.catalogue(), state: context.globalState, log });
  // VS Code's id of this extension (the publisher is the release's: Makefile, PUBLISHER).
  const harness = new HarnessNotice((context as { extension?: { id?: string } }).extension?.id ?? '', context.globalState, log);
  sidecar.onBilled((requestId, record) => status.billed(requestId, record));
  sidecar.onCalibration(({ model }) => {
    // A window moved; the new one comes with the model list. A message that is not one is ignored.
    if (typeof model === 'string') provider.windowMoved();
  });
  sidecar.onMetrics(() => provider.metricsChanged()); // the list carries them: its entries are checked
  const counts = await CountPersistence.start(context.globalStorageUri.fsPath, provider.tokens, context.secrets, log);
  const saveLast = (): Promise<void> => (finalSaves.delete(saveLast), counts.saveLast());
  finalSaves.add(saveLast);
  // The user asked for a new start (Retry, Restart Server, another interpreter): its outcome is shown
  // even when it is the failure shown before, and a model list that failed is fetched again.
  const restart = async () => {
    forgetShown();
    if (await restartServer(sidecar)) await provider.refresh();
  };
  // A key stored by a release before groups becomes a provider group; off activation's path, since
  // VS Code's migration activates this very extension to list the group's models.
  void keys.moveStoredKey(log, profileGroupsFile(context)).catch((error: Error) => warn(`The stored API key was not moved: ${error.message}`));
  const tellCostly = () => void tellWorkspaceCostly(context.workspaceState).catch((error: Error) => warn(error.message));
  tellCostly();

  context.subscriptions.push(
    log,
    status,
    sidecar,
    vscode.lm.registerLanguageModelChatProvider(VENDOR, provider),
    provider,
    { dispose: () => void saveLast() },
    keys.onDidChange(() => provider.notifyChanged()),
    vscode.commands.registerCommand(COMMANDS.manage, () => keys.manage()),
    vscode.commands.registerCommand(COMMANDS.refreshModels, () => provider.refresh()),
    vscode.commands.registerCommand(COMMANDS.showLogs, () => log.show()),
    vscode.commands.registerCommand(COMMANDS.useForSmallTasks, () => smallTasks.choose()),
    vscode.commands.registerCommand(COMMANDS.chooseModels, () => chooseModels(() => provider.catalogue())),
    vscode.commands.registerCommand(COMMANDS.addVirtualModel, addVirtualModel),
    vscode.commands.registerCommand(COMMANDS.showCredits, () => credits.show()),
    vscode.commands.registerCommand(COMMANDS.showUsage, () => Dashboard.show(context.extensionUri, sidecar, log)),
    vscode.commands.registerCommand(COMMANDS.restartServer, restart),
    // A new pythonPath restarts the sidecar below; the same one picked again restarts it here.
    vscode.commands.registerCommand(COMMANDS.chooseInterpreter, async () => {
      const before = setting<string>('pythonPath');
      const chosen = await chooseInterpreter(log);
      if (chosen !== undefined && chosen === before) await restart();
    }),
    // attribution.tagWorkspace tags requests with the workspace's name, which a folder change can change.
    vscode.workspace.onDidChangeWorkspaceFolders(() => void sidecar.configure()),
    // Extensions bring tools (VS Code has no event for vscode.lm.tools itself, rfcs/0004).
    vscode.extensions.onDidChange(() => provider.toolsMayHaveChanged()),
    vscode.workspace.onDidChangeConfiguration((event) => {
      settingSecrets = [...new Set([...settingSecrets, ...sidecarSecrets()])]; // an old one may still be quoted
      if (event.affectsConfiguration(SECTION)) tellCostly();
      if (event.affectsConfiguration(settingId('picker.models'))) provider.notifyChanged(); // the same list, other rows offered
      if (event.affectsConfiguration(settingId('pythonPath'))) void restart();
      else if (event.affectsConfiguration(SECTION) || NETWORK_SETTINGS.some((name) => event.affectsConfiguration(`${NETWORK_SECTION}.${name}`)))
        void sidecar.configure().then(() => provider.refresh());
    }),
  );
}

export async function deactivate(): Promise<void> {
  await Promise.all([...finalSaves].map((save) => save()));
}

/** A restart the user sees: progress while the new sidecar starts (up to its start bound), then
 * that it restarted, or the failure's one error notification (shown by the connection). */
async function restartServer(sidecar: SidecarConnection): Promise<boolean> {
  const title = 'Vercel AI Gateway: restarting the sidecar…';
  const restarted = await Promise.resolve(vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title }, () => sidecar.restart())).catch(
    () => false,
  );
  if (restarted) void notify('info', 'Vercel AI Gateway: the sidecar restarted.');
  return restarted;
}

/** VS Code's chatLanguageModels.json of this profile, where the release before groups left the
 * Thinking Effort choices (rfcs/0010, "Upgrade from the release before groups"): beside the
 * profile's globalStorage folder, as VS Code lays out a profile (default or not). A window whose
 * extension host is remote reads no such file there: nothing is carried then. */
function profileGroupsFile(context: vscode.ExtensionContext): string {
  return path.join(path.dirname(path.dirname(context.globalStorageUri.fsPath)), 'chatLanguageModels.json');
}

async function loadModels(file: string, log: vscode.LogOutputChannel): Promise<ModelEntry[]> {
  const { value, dropped } = checkModels(await readJson(file, (message) => log.warn(message)));
  if (dropped) {
    log.warn(`models.json: ${dropped} invalid entries were dropped; the file is rewritten without them.`);
    await writeJsonAtomic(file, value).catch(() => undefined); // the next fetch saves it anyway
  }
  return value;
}
