// The counts of recent messages, kept across restarts with their texts, sealed. After a restart
// Copilot's first walk asks about the messages of the chat the user goes on with; found by text, as
// the in-process floor finds them, they cost no per-message hashing (rfcs/0004, "Message texts,
// sealed"). The file holds no readable prompt text: AES-256-GCM under a random key kept in
// SecretStorage (the OS keychain), which every window of the profile shares. Without that key (no
// keychain, a key deleted) nothing is written and the hashed counts of token-counts.json still serve.
import * as crypto from 'node:crypto';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import type * as vscode from 'vscode';
import { SECRET_COUNTS_KEY } from './config';
import { checkMessageTexts, type MessageText } from './saved';
import { readJson, writeJsonAtomic } from './storage';

/** Characters of message text kept, the newest first: a long agent chat (~250K tokens). */
export const SEALED_CHARS = 1 << 20;
/** A sealed file larger than this was not written by us: SEALED_CHARS as JSON (at most 6 bytes a
 * character, a \uXXXX escape) and the counts, in base64. */
const MAX_SEALED = Math.ceil((SEALED_CHARS * 6 + (1 << 20)) / 3) * 4;
const KEY_BYTES = 32;
/** A keychain that has not answered by then (a locked keyring's prompt left open) counts as failed:
 * the last save at shutdown, which VS Code awaits, must end. */
const KEY_WAIT_MS = 5000;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** message-counts.json: the key's id (which key sealed it) and iv | tag | ciphertext, in base64. */
interface SealedFile {
  key: string;
  sealed: string;
}

/** What the file held when we last read or wrote it: unchanged, it is not read again. */
interface Seen {
  mtimeMs: number;
  size: number;
}

export class SealedTexts {
  private key: Promise<Buffer | undefined> | undefined;
  private seen: Seen | undefined;
  private onDisk: MessageText[] = [];
  private failed = false; // the keychain's failure is said once

  constructor(
    private readonly file: string,
    private readonly secrets: vscode.SecretStorage,
    private readonly maxText: number,
    private readonly log: (message: string) => void,
    private readonly keyWaitMs = KEY_WAIT_MS,
  ) {}

  /** The texts saved by this window or another, checked; [] when there are none we can open. */
  async load(): Promise<MessageText[]> {
    const key = await this.theKey();
    return key ? this.read(key, true) : [];
  }

  /** Saves `ours` (the newest last) with what another window saved meanwhile, SEALED_CHARS in all. */
  async save(ours: readonly MessageText[] | undefined): Promise<void> {
    if (!ours) return;
    const readWith = await this.theKey();
    if (!readWith) return;
    const theirs = await this.read(readWith, false);
    const key = (await this.theKey()) ?? readWith; // the stored key, if reading found another window's
    const ourKeys = new Set(ours.map(entryKey));
    const merged = [...theirs.filter((entry) => !ourKeys.has(entryKey(entry))), ...ours];
    let chars = merged.reduce((sum, entry) => sum + entry[2].length, 0);
    let first = 0;
    while (chars > SEALED_CHARS) chars -= merged[first++][2].length;
    const kept = merged.slice(first);
    const iv = crypto.randomBytes(IV_BYTES);
    const cipher = crypto.createCipheriv('aes-256-gcm', key, iv);
    const body = Buffer.concat([cipher.update(JSON.stringify(kept), 'utf8'), cipher.final()]);
    const sealed: SealedFile = { key: keyId(key), sealed: Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64') };
    await writeJsonAtomic(this.file, sealed);
    this.onDisk = kept;
    this.seen = await this.stat();
  }

  /** The file's texts; the last ones read when the file has not changed since. */
  private async read(key: Buffer, report: boolean): Promise<MessageText[]> {
    const now = await this.stat();
    if (!now) return (this.onDisk = []);
    if (this.seen && now.mtimeMs === this.seen.mtimeMs && now.size === this.seen.size) return this.onDisk;
    this.seen = now;
    const say = (message: string) => report && this.log(`${path.basename(this.file)}: ${message}`);
    const raw = await readJson(this.file, say);
    this.onDisk = [];
    if (raw === undefined) return this.onDisk;
    if (!isSealedFile(raw)) {
      say('not a file of ours; the messages are counted again (it is rewritten at the next save).');
      return this.onDisk;
    }
    let sealedBy = key;
    if (raw.key !== keyId(key)) {
      // Another window may have made the key at the same moment as we did; the stored one wins.
      this.key = undefined;
      const stored = await this.theKey();
      if (!stored || raw.key !== keyId(stored)) {
        say('sealed with a key this profile no longer has; the messages are counted again.');
        return this.onDisk;
      }
      sealedBy = stored;
    }
    const opened = open(sealedBy, raw.sealed);
    if (opened === undefined) {
      say('could not be opened (damaged); the messages are counted again.');
      return this.onDisk;
    }
    const { value, dropped } = checkMessageTexts(opened, this.maxText, SEALED_CHARS);
    if (dropped) say(`${dropped} invalid entries were dropped.`);
    return (this.onDisk = value);
  }

  private async stat(): Promise<Seen | undefined> {
    try {
      const { mtimeMs, size } = await fs.stat(this.file);
      return { mtimeMs, size };
    } catch {
      return undefined;
    }
  }

  /** The profile's key, made on first use. */
  private theKey(): Promise<Buffer | undefined> {
    return (this.key ??= this.readKey());
  }

  private async readKey(): Promise<Buffer | undefined> {
    try {
      let stored = asKey(await bounded(this.secrets.get(SECRET_COUNTS_KEY), this.keyWaitMs));
      if (!stored) {
        await bounded(this.secrets.store(SECRET_COUNTS_KEY, crypto.randomBytes(KEY_BYTES).toString('base64')), this.keyWaitMs);
        stored = asKey(await bounded(this.secrets.get(SECRET_COUNTS_KEY), this.keyWaitMs)); // another window's, if it stored last
      }
      return stored;
    } catch (error) {
      this.key = undefined; // asked again at the next save
      if (!this.failed) this.log(`The secret storage failed (${(error as Error).message}); message counts are kept hashed only.`);
      this.failed = true;
      return undefined;
    }
  }
}

function bounded<T>(answer: Thenable<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer in ${ms / 1000} s`)), ms);
  });
  return Promise.race([Promise.resolve(answer), late]).finally(() => clearTimeout(timer));
}

function asKey(stored: string | undefined): Buffer | undefined {
  const key = typeof stored === 'string' ? Buffer.from(stored, 'base64') : undefined;
  return key?.length === KEY_BYTES ? key : undefined;
}

/** Which key sealed a file, without revealing it. */
function keyId(key: Buffer): string {
  return crypto.createHash('sha256').update('message-counts').update(key).digest('base64').slice(0, 16);
}

function isSealedFile(raw: unknown): raw is SealedFile {
  if (typeof raw !== 'object' || raw === null) return false;
  const { key, sealed } = raw as Record<string, unknown>;
  return typeof key === 'string' && key.length === 16 && typeof sealed === 'string' && sealed.length <= MAX_SEALED;
}

/** The parsed plaintext, or undefined when it does not authenticate or is not JSON. */
function open(key: Buffer, sealed: string): unknown {
  const bytes = Buffer.from(sealed, 'base64');
  if (bytes.length < IV_BYTES + TAG_BYTES) return undefined;
  try {
    const decipher = crypto.createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES));
    decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    const plain = Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
    return JSON.parse(plain.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

function entryKey([tokenizer, role, text]: MessageText): string {
  return `${tokenizer}\u0000${role}\u0000${text}`;
}
