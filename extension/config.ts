// Every id the extension shares with package.json and VS Code, in one place: the settings' names, the
// command ids, the provider's vendor. package.json declares them; tests/ts/config.test.ts checks
// that both name the same ones.
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';

export const SECTION = 'vercelAiGateway';
export const VENDOR = 'vercel-ai-gateway';
/** Under SECTION: how much of each message to the sidecar and back the log traces while it is at
 * Trace ('messages', or 'verbose' with params), the setting a language client would read
 * (extension/sidecar/session.ts). Not in package.json: a developer's switch. */
export const TRACE_SERVER = 'trace.server';
/** Where a release before provider groups kept the API key in VS Code's secret storage; a key found
 * there is moved into a group (extension/keys.ts, rfcs/0010). */
export const SECRET_API_KEY = `${SECTION}.apiKey`;
/** The key that seals the texts of message-counts.json (extension/counts/sealed.ts), made on first use. */
export const SECRET_COUNTS_KEY = `${SECTION}.countsKey`;
/** The name of the group a stored key moves into: the provider's displayName in package.json, the
 * name VS Code's own "Add Models" offers first. */
export const GROUP_NAME = 'Vercel AI Gateway';
/** VS Code's commands the extension runs (its own, not declared in package.json). */
export const HOST_COMMANDS = {
  /** Chat: Manage Language Models, the editor of provider groups. */
  manageModels: 'workbench.action.chat.manage',
  /** Adds a group with the given settings after the provider listed its models (VS Code 1.133+). */
  migrateGroup: 'lm.migrateLanguageModelsProviderGroup',
} as const;
export const STATUS_ITEM_ID = `${SECTION}.usage`;

export const COMMANDS = {
  manage: `${SECTION}.manage`,
  refreshModels: `${SECTION}.refreshModels`,
  showLogs: `${SECTION}.showLogs`,
  restartServer: `${SECTION}.restartServer`,
  useForSmallTasks: `${SECTION}.useForSmallTasks`,
  showCredits: `${SECTION}.showCredits`,
  showUsage: `${SECTION}.showUsage`,
  chooseInterpreter: `${SECTION}.chooseInterpreter`,
  chooseModels: `${SECTION}.chooseModels`,
  addVirtualModel: `${SECTION}.addVirtualModel`,
} as const;

/** The settings, by their names under SECTION. */
export const SETTINGS = [
  'baseUrl',
  'reasoningEffort',
  'reasoningEffortByModel',
  'routing.order',
  'routing.only',
  'routing.fallbackModels',
  'outputReservation',
  'maxOutputTokens',
  'thinking',
  'pythonPath',
  'logLevel',
  'connectTimeout',
  'idleTimeout',
  'requestTimeout',
  'maxRetries',
  'caBundle',
  'modelOptions',
  'spend.maxRequestCost',
  'spend.maxDailyCost',
  'usage.retentionDays',
  'routing.sort',
  'routing.zeroDataRetention',
  'routing.disallowPromptTraining',
  'routing.serviceTier',
  'routing.caching',
  'attribution.user',
  'attribution.tags',
  'attribution.tagWorkspace',
  'picker.models',
  'virtualModels',
] as const;
export type Setting = (typeof SETTINGS)[number];

/** The settings a workspace may set (scope `window` in package.json) that change what requests
 * cost: a project's reasoning effort and output limit, its attribution (billed per unique value on
 * some plans). The user is told once when a workspace sets them (extension/overrides.ts). Every
 * setting that moves the key, runs a binary, lifts a limit or deletes history is `application` or
 * `machine` scoped instead, so VS Code ignores a workspace's value for it (rfcs/0007). */
export const WORKSPACE_COSTLY: readonly Setting[] = [
  'reasoningEffort',
  'reasoningEffortByModel',
  'maxOutputTokens',
  'attribution.user',
  'attribution.tags',
  'attribution.tagWorkspace',
];

/** The settings the gateway may bill beyond token prices: attribution per unique value, zero data
 * retention and a provider allow-list on some plans (rfcs/0006, "What the estimate leaves out"). The
 * spend guard's estimate is token prices only; its dialog names those of them that are on. */
export const BILLED_BEYOND_TOKENS: readonly Setting[] = [
  'attribution.user',
  'attribution.tags',
  'attribution.tagWorkspace',
  'routing.zeroDataRetention',
  'routing.only',
];

/** The full id of a setting, as the Settings editor and `affectsConfiguration` name it. */
export function settingId(name: Setting): string {
  return `${SECTION}.${name}`;
}

/** A setting's value now (VS Code's default when unset). VS Code does not check its type. */
export function setting<T>(name: Setting): T | undefined {
  return vscode.workspace.getConfiguration(SECTION).get<T>(name);
}

/** VS Code's own network settings (section `http`), which the sidecar honours too (rfcs/0007). */
export const NETWORK_SECTION = 'http';
export const NETWORK_SETTINGS = ['proxy', 'proxyStrictSSL', 'noProxy', 'proxyAuthorization', 'systemCertificates'] as const;
export type NetworkSetting = (typeof NETWORK_SETTINGS)[number];

/** One of VS Code's network settings now (VS Code's default when unset). */
export function networkSetting<T>(name: NetworkSetting): T | undefined {
  return vscode.workspace.getConfiguration(NETWORK_SECTION).get<T>(name);
}

/** A path setting (pythonPath, caBundle) as the user's shell would read it: `~` and `~/…` start at
 * the home folder, and on Windows `~\…` too (what Windows users write; elsewhere `\` is a character
 * of a name). Anything else as written. */
export function expandHome(file: string, platform: NodeJS.Platform = process.platform, home = os.homedir()): string {
  const sep = platform === 'win32' ? /^~[/\\]/ : /^~\//;
  if (file !== '~' && !sep.test(file)) return file;
  return (platform === 'win32' ? path.win32 : path.posix).join(home, file.slice(2));
}
