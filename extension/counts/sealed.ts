// The counts of recent messages, kept across restarts with their texts, sealed. After a restart
// Copilot's first walk asks about the messages of the chat the user goes on with; found by text, as
// the in-process floor finds them, they cost no per-message hashing (rfcs/0004, "Message texts,
// sealed"). The file holds no readable prompt text: AES-256-GCM under a random key kept in
// SecretStorage (the OS keychain), which every window of the profile shares (key.ts). Without that
// key (no keychain, a key deleted) nothing is written.
import * as crypto from 'node:crypto';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import type * as vscode from 'vscode';
import { readBounded, writeFileAtomic } from '../storage';
import { CountsKey, KEY_WAIT_MS } from './key';
import { checkMessageTexts, PERSIST_LIMIT, type MessageText } from './shapes';

/** Characters of message text kept, the newest first: a long chat's messages (~128K tokens). A save
 * rewrites them all, every 10 s while messages are counted, so the bound is what one save may cost
 * the extension host's thread (rfcs/0005-performance.md, "Measured costs"). */
export const SEALED_CHARS = 1 << 19;
/** The file's first line, then the key's id and a newline, then iv | tag | ciphertext. */
const MAGIC = 'agl-sealed-1\n';
const KEY_ID_CHARS = 16;
const HEADER_BYTES = MAGIC.length + KEY_ID_CHARS + 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** A larger file was not written by us: SEALED_CHARS as JSON (at most 6 bytes a character, a \uXXXX
 * escape), the counts and the header. */
export const MAX_FILE = SEALED_CHARS * 6 + (1 << 20);

/** What the file held when we last read or wrote it: unchanged, it is not read again. */
interface Seen {
  mtimeMs: number;
  size: number;
}

export class SealedTexts {
  private seen: Seen | undefined;
  private onDisk: MessageText[] = [];
  private unsaved = false; // a save failed: said once, until one succeeds

  constructor(
    private readonly file: string,
    secrets: vscode.SecretStorage,
    private readonly log: (message: string) => void,
    keyWaitMs = KEY_WAIT_MS,
    private readonly keys = new CountsKey(secrets, log, keyWaitMs),
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
    // Ours are the memo's own strings, whose hash V8 keeps: a lookup by tokenizer, role and text costs
    // less than one concatenated key per entry (rfcs/0005, "Measured costs").
    const ourTexts = byTokenizerAndRole(ours);
    const merged = [...theirs.filter(([tokenizer, role, text]) => !ourTexts.get(tokenizer)?.get(role)?.has(text)), ...ours];
    let chars = merged.reduce((sum, entry) => sum + entry[2].length, 0);
    let first = 0;
    while (chars > SEALED_CHARS) chars -= merged[first++][2].length;
    const kept = merged.slice(first);
    try {
      await writeFileAtomic(this.file, sealedFile(key, JSON.stringify(kept)));
    } catch (error) {
      // Saves come every 10 s: a file that cannot be replaced (a folder there, a read-only disk) is
      // one line until a save succeeds, not one a save.
      if (!this.unsaved) this.log(`${path.basename(this.file)}: could not be saved (${(error as Error).message}); said once until a save succeeds.`);
      this.unsaved = true;
      return;
    }
    if (this.unsaved) this.log(`${path.basename(this.file)}: saved again.`);
    this.unsaved = false;
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
    this.onDisk = [];
    let bytes: Buffer;
    try {
      bytes = await readBounded(this.file, MAX_FILE);
    } catch (error) {
      say(`could not be read (${(error as Error).message}); the messages are counted again.`);
      return this.onDisk;
    }
    const raw = fromFile(bytes);
    if (!raw) {
      say('not a file of ours; the messages are counted again (it is rewritten at the next save).');
      return this.onDisk;
    }
    let sealedBy = key;
    if (raw.keyId !== keyId(key)) {
      // Another window may have made the key at the same moment as we did; the stored one wins.
      this.keys.forget();
      const stored = await this.theKey();
      if (!stored || raw.keyId !== keyId(stored)) {
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
    const { value, dropped } = checkMessageTexts(opened, PERSIST_LIMIT, SEALED_CHARS);
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
    return this.keys.get();
  }
}

/** Which key sealed a file, without revealing it. */
function keyId(key: Buffer): string {
  return crypto.createHash('sha256').update('message-counts').update(key).digest('base64').slice(0, KEY_ID_CHARS);
}

/** The file for `plaintext` sealed under `key`: MAGIC, the key's id, a newline, iv | tag | ciphertext. */
export function sealedFile(key: Buffer, plaintext: string): Buffer {
  const iv = crypto.randomBytes(IV_BYTES);
  const cipher = crypto.createCipheriv('aes-256-gcm', key, iv);
  const body = cipher.update(plaintext, 'utf8');
  const last = cipher.final();
  return Buffer.concat([Buffer.from(`${MAGIC}${keyId(key)}\n`, 'latin1'), iv, cipher.getAuthTag(), body, last]);
}

function fromFile(bytes: Buffer): { keyId: string; sealed: Buffer } | undefined {
  if (bytes.length < HEADER_BYTES + IV_BYTES + TAG_BYTES || bytes.toString('latin1', 0, MAGIC.length) !== MAGIC || bytes[HEADER_BYTES - 1] !== 10)
    return undefined;
  return { keyId: bytes.toString('latin1', MAGIC.length, MAGIC.length + KEY_ID_CHARS), sealed: bytes.subarray(HEADER_BYTES) };
}

/** The parsed plaintext, or undefined when it does not authenticate or is not JSON. */
function open(key: Buffer, sealed: Buffer): unknown {
  try {
    const decipher = crypto.createDecipheriv('aes-256-gcm', key, sealed.subarray(0, IV_BYTES));
    decipher.setAuthTag(sealed.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    const plain = Buffer.concat([decipher.update(sealed.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
    return JSON.parse(plain.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

function byTokenizerAndRole(entries: readonly MessageText[]): Map<string, Map<number, Set<string>>> {
  const out = new Map<string, Map<number, Set<string>>>();
  for (const [tokenizer, role, text] of entries) {
    let byRole = out.get(tokenizer);
    if (!byRole) out.set(tokenizer, (byRole = new Map<number, Set<string>>()));
    let texts = byRole.get(role);
    if (!texts) byRole.set(role, (texts = new Set<string>()));
    texts.add(text);
  }
  return out;
}
