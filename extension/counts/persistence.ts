// The counts kept across restarts: token-counts.json (tool strings in plain, everything else under a
// keyed hash) and message-counts.json (the newest messages' texts, sealed), read back at activation
// and saved every 10 s and once more at exit (rfcs/0004, "Counting costs nothing"). Both files are
// shared by every window of the profile: a save merges what another window saved meanwhile. Both keys
// come from the profile's key (key.ts), which the keychain gives off activation's path: until then,
// and for good if it never answers, the hashed counts are neither read nor saved.
import * as path from 'node:path';
import type * as vscode from 'vscode';
import { readJson, writeJsonAtomic } from '../storage';
import { CountsKey, hashKeyOf, KEY_WAIT_MS } from './key';
import type { TokenCounter } from './memo';
import { SEALED_CHARS, SealedTexts } from './sealed';
import { checkCounts, mergeCounts, unkeyedCounts } from './shapes';

/** How often what was learned is saved while the window runs. */
const SAVE_EVERY_MS = 10_000;

export interface CountsLog {
  warn(message: string): void;
  info(message: string): void;
}

export class CountPersistence {
  private readonly saver: NodeJS.Timeout;
  private lastSave: Promise<void> | undefined;

  private constructor(
    private readonly countsFile: string,
    private readonly tokens: TokenCounter,
    private readonly keys: CountsKey,
    private readonly sealed: SealedTexts,
    private readonly sealedLoaded: Promise<void>,
    private readonly log: CountsLog,
  ) {
    this.saver = setInterval(() => void this.save(), SAVE_EVERY_MS);
  }

  /** Reads token-counts.json into `tokens` (awaited: activation's path; its hashed counts wait for
   * the key), and once the keychain answers, off that path, the key and message-counts.json; then
   * saves every SAVE_EVERY_MS. */
  static async start(folder: string, tokens: TokenCounter, secrets: vscode.SecretStorage, log: CountsLog, keyWaitMs = KEY_WAIT_MS): Promise<CountPersistence> {
    const warn = (message: string) => log.warn(message);
    const info = (message: string) => log.info(message);
    const countsFile = path.join(folder, 'token-counts.json');
    const raw = await readJson(countsFile, warn);
    const dropped = tokens.restore(raw);
    if (dropped) warn(`token-counts.json: ${dropped} invalid entries were dropped (the file is rewritten at the next save).`);
    const unkeyed = unkeyedCounts(raw);
    if (unkeyed) info(`token-counts.json: ${unkeyed} counts hashed without a key (an older version) were dropped; they are counted again.`);
    const keys = new CountsKey(secrets, info, keyWaitMs);
    const sealed = new SealedTexts(path.join(folder, 'message-counts.json'), secrets, info, keyWaitMs, keys);
    const persistence = new CountPersistence(
      countsFile,
      tokens,
      keys,
      sealed,
      sealed
        .load()
        .then((texts) => tokens.restoreMessageTexts(texts))
        .catch((error: Error) => warn(`Could not read message-counts.json: ${error.message}`)),
      log,
    );
    void persistence.keyed();
    return persistence;
  }

  /** The last save: runs once, whoever asks first (deactivate(), whose promise VS Code awaits at
   * shutdown, or the extension's disposal, whose it does not); the timer stops. */
  saveLast(): Promise<void> {
    return (this.lastSave ??= (clearInterval(this.saver), this.save()));
  }

  /** The profile's key in use for the hashed counts, once the keychain gives it. */
  private async keyed(): Promise<void> {
    const key = await this.keys.get();
    if (key) this.tokens.useKey(hashKeyOf(key));
  }

  private async save(): Promise<void> {
    const warn = (message: string) => this.log.warn(message);
    await Promise.all([
      this.saveCounts().catch((error: Error) => warn(`Could not save token counts: ${error.message}`)),
      this.sealedLoaded
        .then(() => this.sealed.save(this.tokens.textsToSeal(SEALED_CHARS)))
        .catch((error: Error) => warn(`Could not save message-counts.json: ${error.message}`)),
    ]);
  }

  /** Another window may have saved counts since we read the file: keep them too. */
  private async saveCounts(): Promise<void> {
    if (!this.tokens.keyId) await this.keyed(); // the keychain failed at activation: asked again
    let ours = this.tokens.snapshot();
    if (!ours) return;
    const onDisk = checkCounts(await readJson(this.countsFile, () => undefined)).value; // reported when it was loaded
    if (ours.key && onDisk.key && onDisk.key !== ours.key) {
      // Another window made the profile's key at the same moment as this one: the stored key wins.
      this.keys.forget();
      await this.keyed();
      ours = this.tokens.snapshot() ?? ours;
    }
    await writeJsonAtomic(this.countsFile, mergeCounts(onDisk, ours));
  }
}
