// Activation: the parts that need VS Code (secrets, settings, status bar, commands, output channel)
// and the sidecar's lifetime. Everything else happens in the Python sidecar.
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { GatewayChatError, MANAGE_KEY, offerAction } from './errors';
import { KeyStore } from './keys';
import { GatewayChatProvider, ModelEntry } from './provider';
import { redacting, SECTION, SidecarConnection } from './sidecar';
import { UsageStatus } from './status';
import { SavedCounts, toolStrings } from './tokens';
import type { ThinkingMode } from './wire';

const VENDOR = 'vercel-ai-gateway';

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscode.window.createOutputChannel('Vercel AI Gateway', { log: true });
  const status = new UsageStatus();
  const keys = new KeyStore(context.secrets);
  const sidecar = new SidecarConnection(context, log, redacting(log, () => keys.known()));
  const cacheFile = path.join(context.globalStorageUri.fsPath, 'models.json');
  const countsFile = path.join(context.globalStorageUri.fsPath, 'token-counts.json');
  const provider = new GatewayChatProvider(sidecar, {
    apiKey: () => keys.get(),
    askForKey: () => keys.prompt(),
    thinking: () => vscode.workspace.getConfiguration(SECTION).get<ThinkingMode>('thinking', 'auto'),
    loadCache: () => readJson<ModelEntry[]>(cacheFile, []),
    saveCache: (models) => writeJson(cacheFile, models),
    onUsage: (model, usage) => status.show(model, usage),
    onError: (error) => offerAction(error, (action) => runAction(action, error)),
    toolStrings: () => toolStrings(vscode.lm.tools),
    log,
  });
  sidecar.onCalibration((calibration) => provider.tokens.setFactor(calibration.model, calibration.factor));
  provider.tokens.restore(await readJson<Partial<SavedCounts>>(countsFile, {}));
  const saveCounts = () => {
    const snapshot = provider.tokens.snapshot();
    return snapshot ? writeJson(countsFile, snapshot) : Promise.resolve();
  };
  const saver = setInterval(() => void saveCounts(), 10_000);
  const runAction = (action: string, _error: GatewayChatError) =>
    void vscode.commands.executeCommand(action === MANAGE_KEY ? 'vercelAiGateway.manage' : 'vercelAiGateway.showLogs');

  context.subscriptions.push(
    log,
    status,
    sidecar,
    vscode.lm.registerLanguageModelChatProvider(VENDOR, provider),
    { dispose: () => (clearInterval(saver), void saveCounts()) },
    keys.onDidChange(() => provider.notifyChanged()),
    vscode.commands.registerCommand('vercelAiGateway.manage', () => keys.manage()),
    vscode.commands.registerCommand('vercelAiGateway.refreshModels', () => provider.refresh()),
    vscode.commands.registerCommand('vercelAiGateway.showLogs', () => log.show()),
    vscode.commands.registerCommand('vercelAiGateway.restartServer', () => sidecar.restart()),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration(`${SECTION}.pythonPath`)) void sidecar.restart();
      else if (event.affectsConfiguration(SECTION)) void sidecar.configure().then(() => provider.refresh());
    }),
  );
}

export function deactivate(): void {}

async function readJson<T>(file: string, fallback: T): Promise<T> {
  try {
    return JSON.parse(await fs.readFile(file, 'utf8')) as T;
  } catch {
    return fallback;
  }
}

async function writeJson(file: string, value: unknown): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true });
  await fs.writeFile(file, JSON.stringify(value));
}
