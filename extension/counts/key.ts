// The profile's counts key: a random 256-bit key in SecretStorage (the OS keychain), which every
// window of the profile shares, made on first use. It seals message-counts.json (sealed.ts), and a
// key derived from it keys the hashes of token-counts.json, so that a prompt guessed by whoever reads
// that file cannot be confirmed from it (rfcs/0004, "Counting costs nothing"). The keychain answers
// off activation's and counting's path, and within a bound: one that never answers means the counts
// are not kept across restarts, never a wait.
import * as crypto from 'node:crypto';
import type * as vscode from 'vscode';
import { bounded } from '../bounded';
import { SECRET_COUNTS_KEY } from '../config';

const KEY_BYTES = 32;
/** A keychain that has not answered by then (a locked keyring's prompt left open) counts as failed:
 * the last save at shutdown, which VS Code awaits, must end. */
export const KEY_WAIT_MS = 5000;
const ID_CHARS = 16;
/** Bytes of a keyed hash kept: 160 bits, the length (and the file's shape) of the SHA-1 before it. */
const DIGEST_BYTES = 20;

export class CountsKey {
  private key: Promise<Buffer | undefined> | undefined;
  private failed = false; // the keychain's failure is said once

  constructor(
    private readonly secrets: vscode.SecretStorage,
    private readonly log: (message: string) => void,
    private readonly waitMs = KEY_WAIT_MS,
  ) {}

  /** The profile's key, made on first use; undefined when the keychain failed or did not answer (asked
   * again at the next call). Never rejects. */
  get(): Promise<Buffer | undefined> {
    return (this.key ??= this.read());
  }

  /** Reads the stored key again at the next get(): another window may have stored its own. */
  forget(): void {
    this.key = undefined;
  }

  private async read(): Promise<Buffer | undefined> {
    try {
      let stored = asKey(await bounded(this.secrets.get(SECRET_COUNTS_KEY), this.waitMs));
      if (!stored) {
        await bounded(this.secrets.store(SECRET_COUNTS_KEY, crypto.randomBytes(KEY_BYTES).toString('base64')), this.waitMs);
        stored = asKey(await bounded(this.secrets.get(SECRET_COUNTS_KEY), this.waitMs)); // another window's, if it stored last
      }
      return stored;
    } catch (error) {
      this.key = undefined; // asked again at the next save
      if (!this.failed) this.log(`The secret storage failed (${(error as Error).message}); message counts are not kept across restarts.`);
      this.failed = true;
      return undefined;
    }
  }
}

function asKey(stored: string | undefined): Buffer | undefined {
  const key = typeof stored === 'string' ? Buffer.from(stored, 'base64') : undefined;
  return key?.length === KEY_BYTES ? key : undefined;
}

/** The key token-counts.json's hashes are made with, derived from the profile's key (its own use,
 * apart from sealing), and its id, which the file names (never the key). */
export interface HashKey {
  key: Buffer;
  id: string;
}

export function hashKeyOf(profileKey: Buffer): HashKey {
  const key = crypto.createHmac('sha256', profileKey).update('token-counts.json').digest();
  return { key, id: crypto.createHash('sha256').update('token-counts').update(key).digest('base64').slice(0, ID_CHARS) };
}

/** HMAC-SHA-256 of `entry` under `key`, its first 160 bits in base64 (28 characters). */
export function keyedDigest(key: Buffer, entry: string): string {
  return crypto.createHmac('sha256', key).update(entry).digest().toString('base64', 0, DIGEST_BYTES);
}
