// The API keys: each provider group's (VS Code keeps it, from its Language Models editor), and the
// default key (the environment's, or one stored by a release before groups). Never settings, logs or
// command lines (rfcs/0010).
import { createHash } from 'node:crypto';
import * as vscode from 'vscode';
import { bounded } from './bounded';
import { GROUP_NAME, HOST_COMMANDS, SECRET_API_KEY, VENDOR } from './config';
import { isRecord } from './saved';
import { readBounded } from './storage';

/** A provider group as the provider is asked for its models: its key, and the tag that names it on
 * the wire and in usage records (a hash of the key, never the key). */
export interface Group {
  tag: string;
  key: string;
}

/** Characters of a group's tag: 12 hex digits of the key's SHA-256 (`messages.GroupId` allows them). */
const TAG_LENGTH = 12;

export function groupTag(key: string): string {
  return createHash('sha256').update(key).digest('hex').slice(0, TAG_LENGTH);
}

/** The group VS Code asks about: `configuration` is undefined for the provider's own list (the
 * default key's), an object for a group (the user's settings, its secret resolved); a group whose key
 * is missing or blank (a group written before the key was required, or its secret lost) is `keyless`. */
export function groupOf(configuration: unknown): Group | 'keyless' | undefined {
  if (configuration === undefined || configuration === null) return undefined;
  const key = typeof configuration === 'object' ? (configuration as { apiKey?: unknown }).apiKey : undefined;
  if (typeof key !== 'string' || !key.trim()) return 'keyless';
  return { tag: groupTag(key.trim()), key: key.trim() };
}

/** How long a read of the keychain is waited for (bounded.ts): a keychain that never answers (a
 * locked or hung keyring) must not hold up the model list and every chat for good. Beside a key in
 * the environment, only KEYCHAIN_BESIDE_ENV_MS: a keychain that answers does so within milliseconds.
 * The clock is the read's, not the caller's: while one read is under way every caller waits on it,
 * and once its time is up they go on at once. */
const KEYCHAIN_MS = 5000;
const KEYCHAIN_BESIDE_ENV_MS = 500;

export class KeyStore {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChange = this.changed.event;
  private readonly seen = new Set<string>();
  private readonly groups = new Map<string, string>(); // tag → key, of every group listed
  private moving: ((key: string) => void) | undefined; // the migration waits to see its key listed
  private reading: { answer: Promise<string | undefined>; since: number } | undefined; // the keychain's read under way

  constructor(
    private readonly secrets: vscode.SecretStorage,
    private readonly keychainMs = KEYCHAIN_MS,
  ) {}

  /** The default key: one stored before groups (until it is moved into a group), else the environment's. */
  async get(): Promise<string | undefined> {
    // Secret storage can fail (no keyring on a Linux desktop) or never answer: the environment still
    // counts then, and is not held up by it.
    const environment = process.env.AI_GATEWAY_API_KEY || process.env.VERCEL_OIDC_TOKEN || undefined;
    const stored = await this.stored(environment ? Math.min(this.keychainMs, KEYCHAIN_BESIDE_ENV_MS) : this.keychainMs);
    const key = stored || environment;
    if (key) this.seen.add(key);
    return key;
  }

  /** A group VS Code listed models for: its key is what that group's requests carry. */
  listed(group: Group): void {
    this.groups.set(group.tag, group.key);
    this.seen.add(group.key);
    this.moving?.(group.key);
  }

  /** The key of the group `tag`, if it was listed in this session. */
  keyOf(tag: string): string | undefined {
    return this.groups.get(tag);
  }

  /** Every key this session has handed out, for redaction. */
  known(): readonly string[] {
    return [...this.seen];
  }

  /** A key stored by a release before groups: moved into a group of the Language Models editor
   * (VS Code's `lm.migrateLanguageModelsProviderGroup`, which lists the group's models through this
   * provider, then keeps the key in VS Code's secret storage). Done when VS Code listed that key as a
   * group; then our copy is deleted. A group of that name may exist already: the keyless one VS Code
   * made to hold the Thinking Effort choices, which apply to no model once we declare a key. The
   * next name is tried, and those choices, read from `groupsFile` (the profile's
   * chatLanguageModels.json), go into the new group with the key. Fails quietly otherwise (a VS Code
   * without groups): the key stays the default key, served as before. Returns the group's name. */
  async moveStoredKey(log: Pick<vscode.LogOutputChannel, 'info' | 'warn'>, groupsFile?: string): Promise<string | undefined> {
    const key = (await this.stored(this.keychainMs))?.trim();
    if (!key) return undefined;
    const keyless = groupsFile ? await keylessChoices(groupsFile, log) : undefined;
    const settings = keyless && Object.keys(keyless.settings).length ? { settings: keyless.settings } : {};
    let taken: string | undefined; // a name VS Code refused: a group of that name exists
    for (const name of [GROUP_NAME, `${GROUP_NAME} 2`, `${GROUP_NAME} 3`]) {
      let seen = false;
      this.moving = (listed) => (seen ||= listed === key);
      try {
        // `settings` beside the key: VS Code copies every property given into the group it adds.
        await vscode.commands.executeCommand(HOST_COMMANDS.migrateGroup, { vendor: VENDOR, name, apiKey: key, ...settings });
      } catch (error) {
        // VS Code's own words (a group of that name exists, or no such command): no key in them.
        log.info(`The stored API key was not moved into the group '${name}': ${oneLine((error as Error).message)}`);
        taken ??= name;
        continue;
      } finally {
        this.moving = undefined;
      }
      if (!seen) break; // the command ran but never asked for the group: not VS Code's migration
      await bounded(this.secrets.delete(SECRET_API_KEY), this.keychainMs).then(undefined, () => undefined);
      log.info(`The stored API key is now the provider group '${name}' (Chat: Manage Language Models).`);
      // The file unread (a remote window), a name VS Code refused is most likely that keyless group.
      const old = keyless ? keyless.names : taken ? [taken] : [];
      if (old.length) log.warn(movedChoices(name, old, Object.keys(settings.settings ?? {}).length, !keyless));
      this.changed.fire();
      return name;
    }
    log.warn('The stored API key stays the default key: this VS Code did not take it as a provider group.');
    return undefined;
  }

  /** The key stored before groups, waited for at most `ms` since the keychain was asked; undefined
   * when it fails or has not answered by then (the read goes on, and the next caller waits on it). */
  private stored(ms: number): Promise<string | undefined> {
    if (!this.reading) {
      const answer: Promise<string | undefined> = Promise.resolve(this.secrets.get(SECRET_API_KEY))
        .then(
          (value) => value,
          () => undefined,
        )
        .finally(() => {
          if (this.reading?.answer === answer) this.reading = undefined;
        });
      this.reading = { answer, since: Date.now() };
    }
    return bounded(this.reading.answer, Math.max(0, this.reading.since + ms - Date.now())).catch(() => undefined);
  }

  /** The Language Models editor, where groups are added (Add Models), renamed, given a new key and deleted. */
  async manage(): Promise<void> {
    await vscode.commands.executeCommand(HOST_COMMANDS.manageModels);
  }
}

/** Bounds on what is read of VS Code's chatLanguageModels.json (a user's file: untrusted). */
const GROUPS_FILE_MAX_BYTES = 1 << 20;
const MAX_CHOICE_MODELS = 2_000;
const MAX_CHOICE_TEXT = 256;

type Choices = Record<string, Record<string, string | number | boolean>>;

/** The per-model choices (`settings`, e.g. `{"openai/gpt-5": {"reasoningEffort": "high"}}`) of our
 * vendor's groups without a key in VS Code's chatLanguageModels.json, and those groups' names. A later
 * group's choice for a model wins, as VS Code applied them before groups. Nothing on any doubt. */
export async function keylessChoices(file: string, log: Pick<vscode.LogOutputChannel, 'info'>): Promise<{ names: string[]; settings: Choices } | undefined> {
  let groups: unknown;
  try {
    groups = JSON.parse((await readBounded(file, GROUPS_FILE_MAX_BYTES)).toString('utf8'));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT') log.info(`The Language Models file was not read for Thinking Effort choices: ${code ?? (error as Error).message}`);
    return undefined;
  }
  if (!Array.isArray(groups)) return undefined;
  const names: string[] = [];
  const settings: Choices = {};
  for (const group of groups) {
    if (!isRecord(group) || group.vendor !== VENDOR || typeof group.name !== 'string') continue;
    if (typeof group.apiKey === 'string' && group.apiKey.trim()) continue; // a group with its key keeps its own choices
    names.push(oneLine(group.name.slice(0, MAX_CHOICE_TEXT))); // it goes into a log line
    if (!isRecord(group.settings)) continue;
    for (const [model, values] of Object.entries(group.settings)) {
      if (model.length > MAX_CHOICE_TEXT || !isRecord(values)) continue;
      if (!(model in settings) && Object.keys(settings).length >= MAX_CHOICE_MODELS) break;
      const kept = Object.entries(values).filter(
        ([name, value]) =>
          name.length <= MAX_CHOICE_TEXT &&
          ((typeof value === 'string' && value.length <= MAX_CHOICE_TEXT) ||
            typeof value === 'boolean' ||
            (typeof value === 'number' && Number.isFinite(value))),
      ) as [string, string | number | boolean][];
      if (kept.length) settings[model] = Object.fromEntries(kept);
    }
  }
  return { names, settings };
}

/** What the user does about the keyless group left behind: VS Code keeps a later choice for a model
 * in the first group that holds one for the same model id, so that group would swallow it. */
function movedChoices(group: string, old: readonly string[], carried: number, guessed: boolean): string {
  const names = old.map((name) => `'${name}'`).join(', ');
  const what = carried
    ? `The Thinking Effort choices of ${carried} model(s) were copied into '${group}' from ${names}, which has no API key and lists no models.`
    : guessed
      ? `${names} was there already: if it is the group without an API key that VS Code made to keep Thinking Effort choices, those apply to no model now; pick them again on the models of '${group}'.`
      : `${names} has no API key and lists no models: Thinking Effort choices it held apply to no model now; pick them again on the models of '${group}'.`;
  return `${what} Delete ${names} in the Language Models editor (Chat: Manage Language Models), or a choice made later for one of those models is kept there and lost at the next start.`;
}

/** `text` for one log line: a group's name is the user's (or a file's) text, and a line break in it
 * would start a line that looks like one of ours. Control characters and line separators become
 * `\uXXXX`. */
export function oneLine(text: string): string {
  // eslint-disable-next-line no-control-regex -- control characters are what it finds
  return text.replace(/[\u0000-\u001f\u007f\u2028\u2029]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
