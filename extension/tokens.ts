// provideTokenCount is called thousands of times per agent iteration, one await at a time: answer
// repeats from memory (kept across restarts), learn the tool strings before Copilot asks, and send
// misses that arrive together as one gateway/countTokens call. Counts are exact tiktoken counts,
// scaled by the per-model calibration the sidecar learns (rfcs/0004-token-accounting.md).
import { createHash } from 'node:crypto';
import type { Rpc } from './rpc';
import { checkCounts, SavedCounts } from './saved';
import type { WireMessage } from './wire';

interface Pending {
  model: string;
  item: string | WireMessage;
  text: string;
  resolve: (count: number) => void;
  reject: (error: unknown) => void;
}

export class TokenCounter {
  // model → text → exact count. Two levels, not one `model + text` key: a string Copilot asks about
  // again is the same object, whose hash V8 keeps; a concatenated key is hashed afresh each time
  // (5× the cost of a warm walk).
  private readonly memo = new Map<string, Map<string, number>>();
  private entries = 0;
  private persisted = new Map<string, number>(); // sha1 of `model NUL text` → exact count, from disk
  private readonly public = new Set<string>(); // `model NUL text` of tool strings: safe to keep as plain text
  private readonly factors = new Map<string, number>();
  // Copilot asks about the same message object up to three times per iteration: skip re-serialising.
  private readonly byObject = new WeakMap<object, Map<string, number>>();
  private pending: Pending[] = [];
  private dirty = false;

  constructor(
    private readonly rpc: Rpc,
    private readonly capacity = 100_000,
  ) {}

  count(model: string, item: string | WireMessage): Promise<number> {
    const exact = this.exact(model, item);
    return typeof exact === 'number' ? Promise.resolve(this.scaled(model, exact)) : exact.then((n) => this.scaled(model, n));
  }

  /** The exact count: from memory, from disk, or asked of the sidecar. */
  private exact(model: string, item: string | WireMessage): number | Promise<number> {
    const text = textOf(item);
    return this.memo.get(model)?.get(text) ?? this.fromDisk(model, text) ?? this.ask(model, item, text);
  }

  private ask(model: string, item: string | WireMessage, text: string): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      if (this.pending.push({ model, item, text, resolve, reject }) === 1) queueMicrotask(() => void this.flush());
    });
  }

  countObject(model: string, object: object, serialize: () => WireMessage): Promise<number> {
    const known = this.byObject.get(object)?.get(model);
    if (known !== undefined) return Promise.resolve(this.scaled(model, known));
    return Promise.resolve(this.exact(model, serialize())).then((count) => {
      const perModel = this.byObject.get(object) ?? new Map<string, number>();
      perModel.set(model, count);
      this.byObject.set(object, perModel);
      return this.scaled(model, count);
    });
  }

  /** Counts strings before they are asked for (the tools' names, descriptions and schemas). */
  async prefetch(model: string, texts: Iterable<string>): Promise<void> {
    const unique = [...new Set(texts)];
    unique.forEach((t) => this.public.add(keyOf(model, t)));
    const missing = unique.filter((t) => this.memo.get(model)?.has(t) !== true && this.fromDisk(model, t) === undefined);
    if (missing.length) await Promise.all(missing.map((t) => this.count(model, t)));
  }

  setFactor(model: string, factor: number): void {
    this.factors.set(model, factor);
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

  private scaled(model: string, exact: number): number {
    const factor = this.factors.get(model) ?? 1;
    return factor === 1 ? exact : Math.round(exact * factor);
  }

  private fromDisk(model: string, text: string): number | undefined {
    if (this.persisted.size === 0) return undefined;
    const count = this.persisted.get(hash(keyOf(model, text)));
    if (count !== undefined) this.remember(model, text, count, false);
    return count;
  }

  private async flush(): Promise<void> {
    const batch = this.pending;
    this.pending = [];
    for (const [model, group] of groupByModel(batch)) {
      try {
        const { counts } = await this.rpc.request<{ counts: number[] }>('gateway/countTokens', {
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
    if (!counts) this.memo.set(model, (counts = new Map()));
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

/** Messages are keyed by their JSON, marked so that no plain string can share a message's count. */
function textOf(item: string | WireMessage): string {
  return typeof item === 'string' ? item : `\u0001${JSON.stringify(item)}`;
}

function keyOf(model: string, text: string): string {
  return `${model}\u0000${text}`;
}

function hash(key: string): string {
  return createHash('sha1').update(key).digest('base64');
}

function groupByModel(batch: Pending[]): Map<string, Pending[]> {
  const groups = new Map<string, Pending[]>();
  for (const p of batch) groups.set(p.model, [...(groups.get(p.model) ?? []), p]);
  return groups;
}

/** The strings Copilot asks counts for when it budgets tools: name, description, and every key and
 * string value of the input schema, walked recursively. */
export function toolStrings(tools: readonly { name: string; description: string; inputSchema?: object | undefined }[]): string[] {
  const out: string[] = [];
  const walk = (value: unknown): void => {
    if (typeof value === 'string') out.push(value);
    else if (Array.isArray(value)) value.forEach(walk);
    else if (value && typeof value === 'object') {
      for (const [key, inner] of Object.entries(value)) {
        out.push(key);
        walk(inner);
      }
    }
  };
  for (const tool of tools) {
    out.push(tool.name, tool.description);
    walk(tool.inputSchema ?? {});
  }
  return out;
}
