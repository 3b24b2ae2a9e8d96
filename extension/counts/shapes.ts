// The shapes of the two files the counts are kept in across restarts (token-counts.json,
// message-counts.json), and their checks. Every window of the profile shares them, and either may
// hold anything (another version's format, a truncated write, a hand edit): what is read back is
// checked entry by entry, a bad entry is dropped and counted (for one log line), and a start never
// fails because of it (rfcs/0001, "Files in global storage").
import { MAX_MODEL_ID } from '../contract';
import { isRecord, type Checked } from '../saved';

/** token-counts.json: tool strings as `model NUL text` keys, everything else under a keyed hash
 * (key.ts). */
export interface SavedCounts {
  /** The id of the key the hashed counts were made with; a file written before keys has none, and
   * its hashed counts are never trusted. */
  key?: string;
  plain: Record<string, number>;
  hashed: Record<string, number>;
}

/** A message of one text part and its count, as message-counts.json keeps it (sealed, see sealed.ts):
 * tokenizer (or model id, when the tokenizer is not known), the message's role, its text. */
export type MessageText = [tokenizer: string, role: number, text: string, count: number];

/** Longer texts are remembered in memory only: neither hashed into token-counts.json nor sealed. */
export const PERSIST_LIMIT = 1 << 16;

// No string Copilot asks about comes near this many tokens (the largest context windows are a few
// million): a bigger "count" would make every budget negative. The one bound of a count, read from
// disk here and from the sidecar in memo.ts.
export const MAX_COUNT = 100_000_000;
const DIGEST = /^[A-Za-z0-9+/]{27}=$/; // 160 bits in base64 (key.ts keyedDigest)
const KEY_ID = /^[A-Za-z0-9+/]{16}$/;

export function checkCounts(raw: unknown): Checked<SavedCounts> {
  if (raw === undefined) return { value: { plain: {}, hashed: {} }, dropped: 0 };
  if (!isRecord(raw)) return { value: { plain: {}, hashed: {} }, dropped: 1 };
  const plain = checkedEntries(raw.plain, (key) => key.indexOf('\u0000') > 0);
  const hashed = checkedEntries(raw.hashed, (key) => DIGEST.test(key));
  const value: SavedCounts = { plain: plain.value, hashed: hashed.value };
  const badKey = raw.key !== undefined && !(typeof raw.key === 'string' && KEY_ID.test(raw.key));
  if (typeof raw.key === 'string' && !badKey) value.key = raw.key;
  return { value, dropped: plain.dropped + hashed.dropped + (badKey ? 1 : 0) };
}

/** How many hashed counts a file read (unchecked) holds without naming a key: a file written before
 * keys (unsalted SHA-1s, which anyone could compute for a guessed prompt), never trusted. */
export function unkeyedCounts(raw: unknown): number {
  return isRecord(raw) && raw.key === undefined && isRecord(raw.hashed) ? Object.keys(raw.hashed).length : 0;
}

/** The opened contents of message-counts.json, checked: entries that are not a MessageText of at most
 * `maxText` characters are dropped, and so is what goes past `maxChars` characters in all. */
export function checkMessageTexts(raw: unknown, maxText: number, maxChars: number): Checked<MessageText[]> {
  if (!Array.isArray(raw)) return { value: [], dropped: 1 };
  const value: MessageText[] = [];
  let chars = 0;
  for (const entry of raw) {
    if (!isMessageText(entry, maxText) || chars + entry[2].length > maxChars) continue;
    chars += entry[2].length;
    value.push(entry);
  }
  return { value, dropped: raw.length - value.length };
}

function isMessageText(entry: unknown, maxText: number): entry is MessageText {
  if (!Array.isArray(entry) || entry.length !== 4) return false;
  const [tokenizer, role, text, count] = entry as unknown[];
  return (
    typeof tokenizer === 'string' &&
    tokenizer.length > 0 &&
    tokenizer.length <= MAX_MODEL_ID &&
    !tokenizer.includes('\u0000') &&
    Number.isSafeInteger(role) &&
    (role as number) >= 0 &&
    (role as number) <= 16 &&
    typeof text === 'string' &&
    text.length <= maxText &&
    isCount(count)
  );
}

/** What two windows learned, together: counts are deterministic, so a union loses nothing. Hashed
 * counts join only under one key: ours win over another key's (the stored key is ours, persistence.ts
 * made sure), the file's stay when we have none (no keychain here), and unkeyed ones go. */
export function mergeCounts(onDisk: SavedCounts, ours: SavedCounts): SavedCounts {
  const plain = { ...onDisk.plain, ...ours.plain };
  if (ours.key === undefined) return onDisk.key === undefined ? { plain, hashed: {} } : { key: onDisk.key, plain, hashed: onDisk.hashed };
  return { key: ours.key, plain, hashed: onDisk.key === ours.key ? { ...onDisk.hashed, ...ours.hashed } : ours.hashed };
}

function isCount(count: unknown): count is number {
  return Number.isSafeInteger(count) && (count as number) >= 0 && (count as number) <= MAX_COUNT;
}

function checkedEntries(raw: unknown, goodKey: (key: string) => boolean): Checked<Record<string, number>> {
  if (raw === undefined) return { value: {}, dropped: 0 };
  if (!isRecord(raw)) return { value: {}, dropped: 1 };
  const value: Record<string, number> = {};
  let dropped = 0;
  for (const [key, count] of Object.entries(raw)) {
    if (goodKey(key) && isCount(count)) value[key] = count;
    else dropped++;
  }
  return { value, dropped };
}
