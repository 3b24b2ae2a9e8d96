// The counts kept across restarts: token-counts.json (tool strings in plain, everything else hashed)
// and message-counts.json (the newest messages' texts, sealed), read back at activation and saved
// every 10 s and once more at exit (rfcs/0004, "Counting costs nothing"). Both files are shared by
// every window of the profile: a save merges what another window saved meanwhile.
import * as path from 'node:path';
import type * as vscode from 'vscode';
import { readJson, writeJsonAtomic } from '../storage';
import type { TokenCounter } from './memo';
import { SEALED_CHARS, SealedTexts } from './sealed';
import { checkCounts, mergeCounts, type SavedCounts } from './shapes';

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
    private readonly sealed: SealedTexts,
    private readonly sealedLoaded: Promise<void>,
    private readonly log: CountsLog,
  ) {
    this.saver = setInterval(() => void this.save(), SAVE_EVERY_MS);
  }

  /** Reads token-counts.json into `tokens` (awaited: activation's path), and message-counts.json once
   * the keychain answers, off that path (until then a message is found by its hash); then saves
   * every SAVE_EVERY_MS. */
  static async start(folder: string, tokens: TokenCounter, secrets: vscode.SecretStorage, log: CountsLog): Promise<CountPersistence> {
    const warn = (message: string) => log.warn(message);
    const countsFile = path.join(folder, 'token-counts.json');
    const dropped = tokens.restore(await readJson(countsFile, warn));
    if (dropped) warn(`token-counts.json: ${dropped} invalid entries were dropped (the file is rewritten at the next save).`);
    const sealed = new SealedTexts(path.join(folder, 'message-counts.json'), secrets, (message) => log.info(message));
    const sealedLoaded = sealed
      .load()
      .then((texts) => tokens.restoreMessageTexts(texts))
      .catch((error: Error) => warn(`Could not read message-counts.json: ${error.message}`));
    return new CountPersistence(countsFile, tokens, sealed, sealedLoaded, log);
  }

  /** The last save: runs once, whoever asks first (deactivate(), whose promise VS Code awaits at
   * shutdown, or the extension's disposal, whose it does not); the timer stops. */
  saveLast(): Promise<void> {
    return (this.lastSave ??= (clearInterval(this.saver), this.save()));
  }

  private async save(): Promise<void> {
    const warn = (message: string) => this.log.warn(message);
    await Promise.all([
      saveCountsMerged(this.countsFile, this.tokens.snapshot()).catch((error: Error) => warn(`Could not save token counts: ${error.message}`)),
      this.sealedLoaded
        .then(() => this.sealed.save(this.tokens.textsToSeal(SEALED_CHARS)))
        .catch((error: Error) => warn(`Could not save message-counts.json: ${error.message}`)),
    ]);
  }
}

/** Another window may have saved counts since we read the file: keep them too. */
async function saveCountsMerged(file: string, ours: SavedCounts | undefined): Promise<void> {
  if (!ours) return;
  const onDisk = checkCounts(await readJson(file, () => undefined)).value; // reported when it was loaded
  await writeJsonAtomic(file, mergeCounts(onDisk, ours));
}
