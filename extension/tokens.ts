// provideTokenCount is called thousands of times per agent iteration, one await at a time: answer
// repeats from memory (kept across restarts), learn the tool strings before Copilot asks, and send
// misses that arrive together as one gateway/countTokens call. Counts are exact o200k (or cl100k)
// counts, unscaled: Copilot measures the messages with its own o200k tokenizer, and the model's window
// is advertised in the same unit (rfcs/0004-token-accounting.md, "One budget unit").
import * as crypto from 'node:crypto';
import type { Rpc } from './rpc';
import { checkCounts, SavedCounts } from './saved';
import type { MessageIn } from './contract';

interface Pending {
  model: string;
  item: string | MessageIn;
  text: string;
  resolve: (count: number) => void;
  reject: (error: unknown) => void;
}

const SLICE = 1 << 20; // characters per request for a huge text
const PERSIST_LIMIT = 1 << 16; // longer texts are remembered in memory only

export class TokenCounter {
  // model → text → exact count. Two levels, not one `model + text` key: a string Copilot asks about
  // again is the same object, whose hash V8 keeps; a concatenated key is hashed afresh each time
  // (5× the cost of a warm walk).
  private readonly memo = new Map<string, Map<string, number>>();
  // The model asked about last and its counts: a walk asks about one model thousands of times, and
  // comparing the id (the same string object each time) costs less than hashing it into `memo`.
  private lastModel = '';
  private lastCounts: Map<string, number> | undefined;
  private entries = 0;
  private persisted = new Map<string, number>(); // sha1 of `model NUL text` → exact count, from disk
  private readonly public = new Set<string>(); // `model NUL text` of tool strings: safe to keep as plain text
  // Messages by model → role → text of their one text part, or by object (rfcs/0004).
  private readonly messageTexts = new Map<string, Map<number, Map<string, number>>>();
  private readonly byObject = new WeakMap<object, Map<string, number>>();
  // The last huge text (Copilot asks again right away): kept out of the memo, which would hold it for good.
  private huge: { model: string; text: string; count: number } | undefined;
  private pending: Pending[] = [];
  private dirty = false;

  constructor(
    private readonly rpc: Rpc,
    private readonly capacity = 100_000,
  ) {}

  /** The count when it is known (memory or disk), without asking the sidecar. */
  known(model: string, text: string): number | undefined {
    return this.countsOf(model)?.get(text) ?? this.fromDisk(model, text);
  }

  private countsOf(model: string): Map<string, number> | undefined {
    if (model !== this.lastModel) {
      this.lastModel = model;
      this.lastCounts = this.memo.get(model);
    }
    return this.lastCounts;
  }

  count(model: string, item: string | MessageIn): Promise<number> {
    const exact = this.exact(model, item);
    return typeof exact === 'number' ? Promise.resolve(exact) : exact;
  }

  /** The exact count: from memory, from disk, or asked of the sidecar. */
  private exact(model: string, item: string | MessageIn): number | Promise<number> {
    if (typeof item === 'string' && item.length > SLICE) {
      return this.huge?.model === model && this.huge.text === item ? this.huge.count : this.askInSlices(model, item);
    }
    const text = textOf(item);
    return this.memo.get(model)?.get(text) ?? this.fromDisk(model, text) ?? this.ask(model, item, text);
  }

  /** A huge text crosses in slices, one request each: serialising it whole would hold the extension
   * host for ~0.1 s per 20 MB, and the sidecar's JSON parse as long (rfcs/0005-performance.md). */
  private async askInSlices(model: string, text: string): Promise<number> {
    let total = 0;
    for (const slice of slices(text, SLICE)) {
      const { counts } = await this.rpc.request('gateway/countTokens', { model, texts: [slice] });
      total += counts[0];
    }
    this.huge = { model, text, count: total };
    return total;
  }

  private ask(model: string, item: string | MessageIn, text: string): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      if (this.pending.push({ model, item, text, resolve, reject }) === 1) queueMicrotask(() => void this.flush());
    });
  }

  /** A message, which Copilot builds afresh for every call. A message that is one plain text part
   * (`soleText`, most of them) is found by role and that text: the same string object every time, whose
   * hash V8 keeps, where serialising it would cost a JSON string per call; on disk it is kept under
   * `role + text`, hashed. Other messages are found by object, then by their JSON. */
  countMessage(model: string, message: object, role: number, soleText: string | undefined, serialize: () => MessageIn): Promise<number> {
    if (soleText === undefined) return this.countOther(model, message, serialize);
    const byText = this.soleTexts(model, role);
    const known = byText.get(soleText);
    if (known !== undefined) return Promise.resolve(known);
    const key = `\u0002${role}\u0000${soleText}`;
    const exact = this.memo.get(model)?.get(key) ?? this.fromDisk(model, key) ?? this.ask(model, serialize(), key);
    const remember = (count: number): number => (byText.set(soleText, count), count);
    return settle(exact, remember);
  }

  private countOther(model: string, message: object, serialize: () => MessageIn): Promise<number> {
    const known = this.byObject.get(message)?.get(model);
    if (known !== undefined) return Promise.resolve(known);
    const remember = (count: number): number => {
      this.byObject.set(message, (this.byObject.get(message) ?? new Map<string, number>()).set(model, count));
      return count;
    };
    const exact = this.exact(model, serialize());
    return settle(exact, remember);
  }

  private soleTexts(model: string, role: number): Map<string, number> {
    let byRole = this.messageTexts.get(model);
    if (!byRole) this.messageTexts.set(model, (byRole = new Map<number, Map<string, number>>()));
    let byText = byRole.get(role);
    if (!byText) byRole.set(role, (byText = new Map<string, number>()));
    if (byText.size >= this.capacity) byText.clear(); // bounded like the memo; refilled from it
    return byText;
  }

  /** Counts strings before they are asked for (the tools' names, descriptions and schemas). */
  async prefetch(model: string, texts: Iterable<string>): Promise<void> {
    const unique = [...new Set(texts)];
    unique.forEach((t) => this.public.add(keyOf(model, t)));
    const missing = unique.filter((t) => this.memo.get(model)?.has(t) !== true && this.fromDisk(model, t) === undefined);
    if (missing.length) await Promise.all(missing.map((t) => this.count(model, t)));
  }

  /** What to write to disk: tool strings as they are (public, and read back without hashing),
   * everything else hashed, so no prompt text is stored. */
  snapshot(): SavedCounts | undefined {
    if (!this.dirty) return undefined;
    this.dirty = false;
    const plain: Record<string, number> = {};
    const hashed: Record<string, number> = Object.fromEntries(this.persisted);
    for (const [model, counts] of this.memo) {
      for (const [text, count] of counts) {
        if (text.length > PERSIST_LIMIT) continue; // hashing it would cost more than counting it again
        const key = keyOf(model, text);
        if (this.public.has(key)) plain[key] = count;
        else hashed[hash(key)] = count;
      }
    }
    return { plain, hashed };
  }

  /** Loads what snapshot() saved, checked entry by entry (see saved.ts); returns how many entries
   * were dropped. Dropped entries make the next snapshot rewrite the file without them. */
  restore(saved: unknown): number {
    const { value, dropped } = checkCounts(saved);
    for (const [key, count] of Object.entries(value.plain)) {
      const split = key.indexOf('\u0000');
      this.remember(key.slice(0, split), key.slice(split + 1), count, false);
      this.public.add(key);
    }
    this.persisted = new Map(Object.entries(value.hashed));
    this.dirty ||= dropped > 0;
    return dropped;
  }

  /** How many counts are held in memory. */
  get size(): number {
    return this.entries;
  }

  private fromDisk(model: string, text: string): number | undefined {
    if (this.persisted.size === 0 || text.length > PERSIST_LIMIT) return undefined;
    const count = this.persisted.get(hash(keyOf(model, text)));
    if (count !== undefined) this.remember(model, text, count, false);
    return count;
  }

  private async flush(): Promise<void> {
    const batch = this.pending;
    this.pending = [];
    for (const [model, group] of groupByModel(batch)) {
      try {
        const { counts } = await this.rpc.request('gateway/countTokens', {
          model,
          texts: group.map((p) => p.item),
        });
        group.forEach((p, i) => {
          this.remember(p.model, p.text, counts[i], true);
          p.resolve(counts[i]);
        });
      } catch (error) {
        group.forEach((p) => p.reject(error));
      }
    }
  }

  private remember(model: string, text: string, count: number, fresh: boolean): void {
    let counts = this.memo.get(model);
    if (!counts) {
      this.memo.set(model, (counts = new Map<string, number>()));
      if (model === this.lastModel) this.lastCounts = counts;
    }
    if (!counts.has(text)) {
      if (this.entries >= this.capacity) this.forgetOldest();
      this.entries++;
    }
    counts.set(text, count);
    this.dirty ||= fresh;
  }

  private forgetOldest(): void {
    for (const counts of this.memo.values()) {
      const oldest = counts.keys().next();
      if (!oldest.done) {
        counts.delete(oldest.value);
        this.entries--;
        return;
      }
    }
  }
}

/** A long text cut where no o200k or cl100k token can span the cut, so the slices' counts add up
 * exactly: before a space that follows a non-space, or after a newline that precedes a non-space other
 * than "/". The sidecar cuts by the same rule (`pieces` in tokens.py, whose tests check the sums).
 * Anything either language calls a space counts as one here, which only ever removes cut points. */
export function slices(text: string, size: number): string[] {
  const out: string[] = [];
  let start = 0;
  while (text.length - start > size) {
    const cut = cutPoint(text, start + size);
    if (cut < 0) break;
    out.push(text.slice(start, cut));
    start = cut;
  }
  out.push(text.slice(start));
  return out;
}

function cutPoint(text: string, from: number): number {
  for (let i = from; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const previous = text.charCodeAt(i - 1);
    if (c === 32 && !isSpace(previous)) return i;
    if (previous === 10 && c !== 47 && !isSpace(c)) return i;
  }
  return -1;
}

function isSpace(code: number): boolean {
  return (
    (code >= 9 && code <= 13) || (code >= 0x1c && code <= 0x20) || code === 0x85 || code === 0xa0 || (code >= 0x1680 && /\s/.test(String.fromCharCode(code)))
  );
}

/** Messages are keyed by their JSON (or role and text, behind \u0002), marked so that no plain string
 * can share a message's count. */
function textOf(item: string | MessageIn): string {
  return typeof item === 'string' ? item : `\u0001${JSON.stringify(item)}`;
}

/** `then` for a count known now or later: a known one resolves at once, without a promise chain. */
function settle(exact: number | Promise<number>, then: (count: number) => number): Promise<number> {
  return typeof exact === 'number' ? Promise.resolve(then(exact)) : exact.then(then);
}

function keyOf(model: string, text: string): string {
  return `${model}\u0000${text}`;
}

// One-shot hashing (Node ≥ 20.12, VS Code's Electron has it) is twice as fast as a Hash object.
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'base64') => string }).hash;

function hash(key: string): string {
  return oneShot ? oneShot('sha1', key, 'base64') : crypto.createHash('sha1').update(key).digest('base64');
}

function groupByModel(batch: Pending[]): Map<string, Pending[]> {
  const groups = new Map<string, Pending[]>();
  for (const p of batch) groups.set(p.model, [...(groups.get(p.model) ?? []), p]);
  return groups;
}

/** The strings Copilot asks counts for when it budgets tools, in the order it asks: every key and
 * truthy string value of `{name, description, parameters}`, walked recursively (array indices are
 * keys too), as Copilot Chat's ExtensionContributedChatTokenizer walks them. */
export interface ToolInfo {
  name: string;
  description: string;
  inputSchema?: object | undefined;
}

export function toolStrings(tools: readonly ToolInfo[]): string[] {
  const out: string[] = [];
  const walk = (object: object): void => {
    for (const [key, value] of Object.entries(object)) {
      if (!value) continue;
      out.push(key);
      if (typeof value === 'string') out.push(value);
      else if (typeof value === 'object') walk(value as object);
    }
  };
  for (const tool of tools) walk({ name: tool.name, description: tool.description, parameters: tool.inputSchema });
  return out;
}
