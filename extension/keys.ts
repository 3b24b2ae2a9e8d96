// The API keys: each provider group's (VS Code keeps it, from its Language Models editor), and the
// default key (the environment's, or one stored by a release before groups). Never settings, logs or
// command lines (rfcs/0007, "Several keys side by side").
import { createHash } from 'node:crypto';
import * as vscode from 'vscode';
import { GROUP_NAME, HOST_COMMANDS, SECRET_API_KEY, VENDOR } from './config';

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

export class KeyStore {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChange = this.changed.event;
  private readonly seen = new Set<string>();
  private readonly groups = new Map<string, string>(); // tag → key, of every group listed
  private moving: ((key: string) => void) | undefined; // the migration waits to see its key listed

  constructor(private readonly secrets: vscode.SecretStorage) {}

  /** The default key: one stored before groups (until it is moved into a group), else the environment's. */
  async get(): Promise<string | undefined> {
    // Secret storage can fail (no keyring on a Linux desktop): the environment still counts then.
    const stored = await this.stored();
    const key = stored || process.env.AI_GATEWAY_API_KEY || process.env.VERCEL_OIDC_TOKEN || undefined;
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
   * group; then our copy is deleted. A group of that name may exist already (VS Code makes one to hold
   * a model's Thinking Effort choice): the next name is tried. Fails quietly otherwise (a VS Code
   * without groups): the key stays the default key, served as before. Returns the group's name. */
  async moveStoredKey(log: Pick<vscode.LogOutputChannel, 'info' | 'warn'>): Promise<string | undefined> {
    const key = (await this.stored())?.trim();
    if (!key) return undefined;
    for (const name of [GROUP_NAME, `${GROUP_NAME} 2`, `${GROUP_NAME} 3`]) {
      let seen = false;
      this.moving = (listed) => (seen ||= listed === key);
      try {
        await vscode.commands.executeCommand(HOST_COMMANDS.migrateGroup, { vendor: VENDOR, name, apiKey: key });
      } catch (error) {
        // VS Code's own words (a group of that name exists, or no such command): no key in them.
        log.info(`The stored API key was not moved into the group '${name}': ${(error as Error).message}`);
        continue;
      } finally {
        this.moving = undefined;
      }
      if (!seen) break; // the command ran but never asked for the group: not VS Code's migration
      await this.secrets.delete(SECRET_API_KEY).then(undefined, () => undefined);
      log.info(`The stored API key is now the provider group '${name}' (Chat: Manage Language Models).`);
      this.changed.fire();
      return name;
    }
    log.warn('The stored API key stays the default key: this VS Code did not take it as a provider group.');
    return undefined;
  }

  private stored(): Promise<string | undefined> {
    return Promise.resolve(this.secrets.get(SECRET_API_KEY)).then(
      (value) => value,
      () => undefined,
    );
  }

  /** The Language Models editor, where groups are added (Add Models), renamed, given a new key and deleted. */
  async manage(): Promise<void> {
    await vscode.commands.executeCommand(HOST_COMMANDS.manageModels);
  }
}
