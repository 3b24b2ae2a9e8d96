// provideTokenCount is called thousands of times per agent iteration, one await at a time: answer
// repeats from memory (kept across restarts), learn the tool strings before Copilot asks, and send
// misses that arrive together as one gateway/countTokens call. Counts are exact o200k (or cl100k)
// counts, unscaled: Copilot measures the messages with its own o200k tokenizer, and the model's window
// is advertised in the same unit (rfcs/0004-token-accounting.md, "One budget unit").
import * as crypto from 'node:crypto';
import type { CancellationToken, Disposable } from 'vscode';
import type { MessageIn } from '../contract';
import type { Rpc } from '../sidecar/rpc';
import { keyedDigest, type HashKey } from './key';
import { checkCounts, MAX_COUNT, PERSIST_LIMIT, type MessageText, type SavedCounts } from './shapes';

interface Pending {
  model: string;
  item: string | MessageIn;
  resolve: (count: number) => void;
  reject: (error: unknown) => void;
  token: CancellationToken | undefined; // the caller's: a batch whose every count was cancelled is cancelled on the wire
}

/** A batch of counts on its way (a prefetch): what a count of one of its strings asked meanwhile waits
 * for. A background batch waits in the sidecar until its tokenizer has loaded on its own; the first
 * count that waits for one asks the sidecar to load it now (`urged`). */
interface Flight {
  model: string;
  counts: Promise<number[]>;
  background: boolean;
  urged: boolean;
}

const SLICE = 1 << 20; // characters per request for a huge text
/** Characters of the texts the memory holds, in all (as the sidecar's memo, tokenizer.py MEMO_CHARS):
 * an agent session's tool results would otherwise stay for good (rfcs/0005-performance.md, "The soak"). */
export const MEMO_CHARS = 8 << 20;
/** A message that is not one text part (a tool call, a tool result) is remembered under its JSON;
 * past this length, under a keyed hash of it (the one the saved counts use): its JSON is built afresh for
 * every call anyway, so hashing it costs about what looking the text up would, and the memory keeps
 * 28 characters instead of the message. */
export const HASH_MESSAGES_OVER = 256;

/** Counts by text, and how many characters their texts hold. */
interface Held {
  counts: Map<string, number>;
  chars: number;
}

export class TokenCounter {
  // tokenizer → text → exact count. Counts are per tokenizer, not per model: every model that counts
  // with o200k shares them, so the tool strings counted once serve whichever model Copilot asks about
  // (a model whose tokenizer is not known keeps counts of its own, under its id). Two levels, not one
  // `tokenizer + text` key: a string Copilot asks about again is the same object, whose hash V8 keeps;
  // a concatenated key is hashed afresh each time (5× the cost of a warm walk).
  private readonly memo = new Map<string, Held>();
  private tokenizers = new Map<string, string>(); // model id → tokenizer, from the model list
  private readonly askedModels = new Set<string>();
  // The model asked about last, its tokenizer and its counts: a walk asks about one model thousands of
  // times, and comparing the id (the same string object each time) costs less than hashing it.
  private lastModel: string | undefined;
  private lastKey = '';
  private lastCounts: Held | undefined;
  // Every Held of memo and messageTexts: entries and characters are bounded across all of them.
  private readonly held: Held[] = [];
  private entries = 0;
  private chars = 0;
  private plainChars = 0;
  // What is saved (token-counts.json): tool strings as `tokenizer NUL text` (public, and read back
  // into the memo without hashing), everything else under an HMAC of it (key.ts), so no prompt text is
  // stored there and none can be confirmed from it. A count is hashed once, when it is learned (after
  // a round trip), never per save or per call. Until the profile's key answers (useKey), the hashes
  // are made with a key of this session's, and nothing hashed is saved.
  // The newest messages' texts go to message-counts.json too, sealed (textsToSeal(), sealed.ts).
  private readonly plain = new Map<string, number>();
  private readonly hashed = new Map<string, number>();
  private hashKey: HashKey = { key: crypto.randomBytes(32), id: '' }; // id '' until useKey()
  // The hashed counts token-counts.json held under a key id, kept until the profile's key answers.
  private waiting: { id: string; hashed: Record<string, number> } | undefined;
  // Messages by tokenizer → role → text of their one text part, or by object (rfcs/0004).
  private readonly messageTexts = new Map<string, Map<number, Held>>();
  private readonly byObject = new WeakMap<object, Map<string, number>>();
  private readonly flights = new Map<string, Map<string, { flight: Flight; index: number }>>(); // tokenizer → text → its batch
  // The last huge text (Copilot asks again right away): kept out of the memo, which would hold it for good.
  private huge: { key: string; text: string; count: number } | undefined;
  private pending: Pending[] = [];
  private dirty = false;
  private textsDirty = false; // a message of one text part was counted since the last textsToSeal()

  /** What a count rejects with once its caller's token is cancelled: the provider makes it VS Code's
   * CancellationError (counts/ takes nothing of VS Code but its types). */
  cancelled: () => Error = () => new Error('Canceled');

  constructor(
    private readonly rpc: Rpc,
    private readonly capacity = 100_000,
    private readonly maxChars = MEMO_CHARS,
  ) {}

  /** Which tokenizer each model counts with (the model list's `tokenizer`, which the sidecar sets by
   * the same rule it counts by): models with the same one share their counts. */
  setTokenizers(models: readonly { id: string; tokenizer: string }[]): void {
    this.tokenizers = new Map(models.filter((m) => m.tokenizer).map((m) => [m.id, m.tokenizer]));
    this.lastModel = undefined;
  }

  /** The key a model's counts are kept under: its tokenizer, or its own id when that is not known. */
  tokenizerOf(model: string): string {
    return this.tokenizers.get(model) || model;
  }

  /** The models Copilot asked about since activation. */
  asked(): readonly string[] {
    return [...this.askedModels];
  }

  private keyFor(model: string): string {
    if (model !== this.lastModel) {
      this.lastModel = model;
      this.lastKey = this.tokenizerOf(model);
      this.lastCounts = this.memo.get(this.lastKey);
      this.askedModels.add(model);
    }
    return this.lastKey;
  }

  /** The count when it is known (memory or disk), without asking the sidecar. */
  known(model: string, text: string): number | undefined {
    const key = this.keyFor(model);
    return this.lastCounts?.counts.get(text) ?? this.fromDisk(key, text);
  }

  /** `token`: the caller's (Copilot's); once it is cancelled the count rejects at once with a
   * CancellationError, and its request to the sidecar is cancelled when no other count waits for it. */
  count(model: string, item: string | MessageIn, token?: CancellationToken): Promise<number> {
    const exact = this.exact(model, item, token);
    return typeof exact === 'number' ? Promise.resolve(exact) : exact;
  }

  /** The exact count: from memory, from disk, from a batch on its way, or asked of the sidecar. */
  private exact(model: string, item: string | MessageIn, token: CancellationToken | undefined): number | Promise<number> {
    const key = this.keyFor(model);
    if (typeof item === 'string' && item.length > SLICE) {
      if (this.huge?.key === key && this.huge.text === item) return this.huge.count;
      return unlessCancelled(this.askInSlices(model, key, item, token), token, this.cancelled);
    }
    const text = textOf(item);
    const known = this.lastCounts?.counts.get(text) ?? this.fromDisk(key, text);
    if (known !== undefined) return known;
    const learn = (count: number): number => (this.learned(key, text, count, false), count);
    return unlessCancelled(this.inFlight(key, text, token) ?? this.ask(model, item, token).then(learn), token, this.cancelled);
  }

  /** A huge text crosses in slices, one request each: serialising it whole would hold the extension
   * host, and the sidecar's JSON parse, for long (rfcs/0005-performance.md, "Huge counts"). Once
   * `token` is cancelled, the slice on its way is cancelled on the wire and no other is sent. */
  private async askInSlices(model: string, key: string, text: string, token: CancellationToken | undefined): Promise<number> {
    let total = 0;
    for (const slice of slices(text, SLICE)) {
      if (token?.isCancellationRequested) throw this.cancelled();
      const { counts } = await this.rpc.request('gateway/countTokens', { model, texts: [slice] }, token);
      total += checkedCounts(counts, 1)[0];
    }
    this.huge = { key, text, count: total };
    return total;
  }

  private ask(model: string, item: string | MessageIn, token: CancellationToken | undefined): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      if (token?.isCancellationRequested)
        reject(this.cancelled()); // given up on already: not asked
      else if (this.pending.push({ model, item, resolve, reject, token }) === 1) queueMicrotask(() => void this.flush());
    });
  }

  /** A message, which Copilot builds afresh for every call. A message that is one plain text part
   * (`soleText`, most of them) is found by role and that text: the same string object every time, whose
   * hash V8 keeps, where serialising it would cost a JSON string per call. After a restart it is found
   * on disk under one keyed hash of `tokenizer + role + text`, taken once per message (rfcs/0005,
   * "Keyed hashes in token-counts.json"). Other messages are found by object, then by their JSON. */
  countMessage(
    model: string,
    message: object,
    role: number,
    soleText: string | undefined,
    serialize: () => MessageIn,
    token?: CancellationToken,
  ): Promise<number> {
    const key = this.keyFor(model);
    if (soleText === undefined) return this.countOther(model, key, message, serialize, token);
    const byText = this.soleTexts(key, role);
    const known = byText.counts.get(soleText);
    if (known !== undefined) return Promise.resolve(known);
    const digest = soleText.length <= PERSIST_LIMIT && this.hash(`${key}\u0000\u0002${role}\u0000${soleText}`);
    const saved = digest ? this.hashed.get(digest) : undefined;
    if (saved !== undefined) {
      this.hold(byText, soleText, saved);
      return Promise.resolve(saved);
    }
    const asked = this.ask(model, serialize(), token).then((count) => {
      this.hold(byText, soleText, count);
      this.textsDirty ||= soleText.length <= PERSIST_LIMIT;
      if (digest) this.save(this.hashed, digest, count);
      return count;
    });
    return unlessCancelled(asked, token, this.cancelled);
  }

  private countOther(model: string, key: string, message: object, serialize: () => MessageIn, token: CancellationToken | undefined): Promise<number> {
    const known = this.byObject.get(message)?.get(key);
    if (known !== undefined) return Promise.resolve(known);
    const remember = (count: number): number => {
      this.byObject.set(message, (this.byObject.get(message) ?? new Map<string, number>()).set(key, count));
      return count;
    };
    const exact = this.exact(model, serialize(), token);
    return typeof exact === 'number' ? Promise.resolve(remember(exact)) : exact.then(remember);
  }

  private soleTexts(key: string, role: number): Held {
    let byRole = this.messageTexts.get(key);
    if (!byRole) this.messageTexts.set(key, (byRole = new Map<number, Held>()));
    let byText = byRole.get(role);
    if (!byText) byRole.set(role, (byText = this.newHeld()));
    return byText;
  }

  /** Of `texts`, those whose count is neither known nor on its way (in order, without repeats). */
  unknown(model: string, texts: Iterable<string>): string[] {
    const key = this.keyFor(model);
    const counts = this.lastCounts;
    const flying = this.flights.get(key);
    const seen = new Set<string>();
    const out: string[] = [];
    for (const text of texts) {
      if (seen.has(text)) continue;
      seen.add(text);
      if (counts?.counts.has(text) || flying?.has(text) || this.fromDisk(key, text) !== undefined) continue;
      out.push(text);
    }
    return out;
  }

  /** Counts tool strings before they are asked for, in one request, and keeps them as public text.
   * A `background` batch is counted once the sidecar's tokenizer has loaded on its own. */
  async prefetch(model: string, texts: Iterable<string>, background = false): Promise<void> {
    const missing = this.unknown(model, texts);
    if (!missing.length) return;
    const key = this.keyFor(model);
    const request = this.rpc.request('gateway/countTokens', background ? { model, texts: missing, background } : { model, texts: missing });
    const flight: Flight = { model, counts: request.then(({ counts }) => checkedCounts(counts, missing.length)), background, urged: false };
    let flying = this.flights.get(key);
    if (!flying) this.flights.set(key, (flying = new Map<string, { flight: Flight; index: number }>()));
    for (let index = 0; index < missing.length; index++) flying.set(missing[index], { flight, index });
    try {
      const counts = await flight.counts;
      missing.forEach((text, i) => this.learned(key, text, counts[i], true));
    } finally {
      for (const text of missing) if (flying.get(text)?.flight === flight) flying.delete(text);
    }
  }

  /** A count asked while a prefetch of the same string is on its way waits for that batch rather than
   * asking again; if the batch fails, it asks on its own. */
  private inFlight(key: string, text: string, token: CancellationToken | undefined): Promise<number> | undefined {
    const entry = this.flights.get(key)?.get(text);
    if (!entry) return undefined;
    const { flight, index } = entry;
    if (flight.background && !flight.urged) {
      // Copilot is waiting: an ordinary count (of nothing) makes the sidecar load its tokenizer now.
      flight.urged = true;
      this.rpc.request('gateway/countTokens', { model: flight.model, texts: [] }).catch(() => undefined);
    }
    return flight.counts.then(
      (counts) => counts[index],
      () => this.ask(flight.model, text, token).then((count) => (this.learned(key, text, count, false), count)),
    );
  }

  /** What to write to disk, when something was learned since the last time. */
  snapshot(): SavedCounts | undefined {
    if (!this.dirty) return undefined;
    this.dirty = false;
    const plain = Object.fromEntries(this.plain);
    return this.hashKey.id ? { key: this.hashKey.id, plain, hashed: Object.fromEntries(this.hashed) } : { plain, hashed: {} };
  }

  /** The key the hashed counts are made with from now on (the profile's, key.ts): what was hashed
   * with another (this session's, before the keychain answered) is found no more, and counted again
   * if asked; what token-counts.json held under this key is restored. */
  useKey(hashKey: HashKey): void {
    if (hashKey.id === this.hashKey.id) return;
    if (this.hashed.size) {
      this.hashed.clear();
      this.dirty = true;
    }
    this.hashKey = hashKey;
    if (this.waiting?.id === hashKey.id) for (const [digest, count] of Object.entries(this.waiting.hashed)) this.save(this.hashed, digest, count, false);
    else if (this.waiting && Object.keys(this.waiting.hashed).length) this.dirty = true; // another key's: the file is rewritten without them
    this.waiting = undefined;
  }

  /** The id of the key the hashed counts are made with; '' until useKey(). */
  get keyId(): string {
    return this.hashKey.id;
  }

  /** The messages of one text part held in memory, for message-counts.json (sealed.ts): the newest of
   * each tokenizer and role, `maxChars` characters in all, shared by their characters held. Undefined
   * when none was counted since the last time. */
  textsToSeal(maxChars: number): MessageText[] | undefined {
    if (!this.textsDirty) return undefined;
    this.textsDirty = false;
    let total = 0;
    for (const byRole of this.messageTexts.values()) for (const held of byRole.values()) total += held.chars;
    const out: MessageText[] = [];
    for (const [key, byRole] of this.messageTexts) {
      for (const [role, held] of byRole) {
        const texts = [...held.counts].filter(([text]) => text.length <= PERSIST_LIMIT);
        let share = total <= maxChars ? Infinity : Math.floor((maxChars * held.chars) / total);
        let first = texts.length;
        while (first > 0 && texts[first - 1][0].length <= share) share -= texts[--first][0].length;
        for (const [text, count] of texts.slice(first)) out.push([key, role, text, count]);
      }
    }
    return out;
  }

  /** Holds the messages message-counts.json kept (checked there): found by their text, as any message
   * counted in this session, without hashing one. */
  restoreMessageTexts(texts: readonly MessageText[]): void {
    for (const [key, role, text, count] of texts) this.hold(this.soleTexts(key, role), text, count);
  }

  /** Loads what snapshot() saved, checked entry by entry (see shapes.ts); returns how many entries
   * were dropped. Dropped entries make the next snapshot rewrite the file without them. Hashed counts
   * are trusted under the key they name only: at once when it is ours, once useKey() brings it
   * otherwise; those of a file without a key (before keys: unsalted) never, and the next snapshot
   * rewrites the file without them. */
  restore(saved: unknown): number {
    const { value, dropped } = checkCounts(saved);
    const entries = Object.entries(value.plain);
    // Tokenizer and text as flat strings of their own: slice() of a saved key gives a string that
    // points into the key, and a Map compares such a text with each text Copilot asks about more
    // slowly (rfcs/0005, "The first walk after a restart"). One JSON round trip copies
    // them all.
    const split = JSON.parse(JSON.stringify(entries.map(([entry]) => splitEntry(entry)))) as [string, string][];
    entries.forEach(([entry, count], i) => {
      this.remember(split[i][0], split[i][1], count);
      this.save(this.plain, entry, count, false);
    });
    if (value.key !== undefined && value.key === this.hashKey.id) {
      for (const [digest, count] of Object.entries(value.hashed)) this.save(this.hashed, digest, count, false);
    } else if (value.key !== undefined && !this.hashKey.id) {
      this.waiting = { id: value.key, hashed: value.hashed };
    } else if (Object.keys(value.hashed).length) {
      this.dirty = true;
    }
    this.dirty ||= dropped > 0;
    return dropped;
  }

  /** How many counts are held in memory by text. */
  get size(): number {
    return this.entries;
  }

  /** How many characters the texts held in memory have: those of the memo and of the saved tool
   * strings (what restore() reads and snapshot() writes) are each bounded by `maxChars`. */
  get heldChars(): { memo: number; saved: number } {
    return { memo: this.chars, saved: this.plainChars };
  }

  private fromDisk(key: string, text: string): number | undefined {
    if (this.hashed.size === 0 || text.length > PERSIST_LIMIT) return undefined;
    const count = this.hashed.get(this.hash(keyOf(key, text)));
    if (count !== undefined && !byHash(text)) this.remember(key, text, count);
    return count;
  }

  private async flush(): Promise<void> {
    const batch = this.pending;
    this.pending = [];
    for (const [model, asked] of groupByModel(batch)) {
      // A count given up on before its batch went is not asked.
      asked.filter((p) => p.token?.isCancellationRequested).forEach((p) => p.reject(this.cancelled()));
      const group = asked.filter((p) => !p.token?.isCancellationRequested);
      if (!group.length) continue;
      const wire = everyCancelled(group.map((p) => p.token));
      try {
        const { counts } = await this.rpc.request('gateway/countTokens', { model, texts: group.map((p) => p.item) }, wire?.token);
        const checked = checkedCounts(counts, group.length);
        group.forEach((p, i) => p.resolve(checked[i]));
      } catch (error) {
        group.forEach((p) => p.reject(error));
      } finally {
        wire?.dispose();
      }
    }
  }

  /** A count the sidecar gave: kept in memory, and saved as public text (a tool string) or hashed. */
  private learned(key: string, text: string, count: number, isPublic: boolean): void {
    if (text.length > PERSIST_LIMIT) return this.remember(key, text, count); // hashing it would cost more than counting it again
    if (isPublic || !byHash(text)) this.remember(key, text, count);
    const entry = keyOf(key, text);
    if (isPublic) this.save(this.plain, entry, count);
    else this.save(this.hashed, this.hash(entry), count);
  }

  private hash(entry: string): string {
    return keyedDigest(this.hashKey.key, entry);
  }

  /** Bounded like the memo: the oldest entries go first (a Map keeps insertion order); the public
   * texts by their characters too. */
  private save(saved: Map<string, number>, entry: string, count: number, fresh = true): void {
    const plain = saved === this.plain;
    if (!saved.has(entry)) {
      if (plain && entry.length > this.maxChars) return;
      while (saved.size && (saved.size >= this.capacity || (plain && this.plainChars + entry.length > this.maxChars))) {
        const oldest = saved.keys().next().value as string;
        saved.delete(oldest);
        if (plain) this.plainChars -= oldest.length;
      }
      if (plain) this.plainChars += entry.length;
    }
    saved.set(entry, count);
    this.dirty ||= fresh;
  }

  private remember(key: string, text: string, count: number): void {
    let counts = this.memo.get(key);
    if (!counts) {
      this.memo.set(key, (counts = this.newHeld()));
      if (key === this.lastKey) this.lastCounts = counts;
    }
    this.hold(counts, text, count);
  }

  private newHeld(): Held {
    const held: Held = { counts: new Map<string, number>(), chars: 0 };
    this.held.push(held);
    return held;
  }

  /** Keeps a count, within the bounds: the oldest texts of the fullest map go first. */
  private hold(held: Held, text: string, count: number): void {
    if (!held.counts.has(text)) {
      if (text.length > this.maxChars) return; // asked again, it is counted again
      while ((this.entries >= this.capacity || this.chars + text.length > this.maxChars) && this.forgetOldest());
      this.entries++;
      this.chars += text.length;
      held.chars += text.length;
    }
    held.counts.set(text, count);
  }

  /** False when nothing is held. */
  private forgetOldest(): boolean {
    let fullest: Held | undefined;
    for (const held of this.held) if (held.counts.size && (!fullest || held.chars > fullest.chars)) fullest = held;
    const oldest = fullest?.counts.keys().next();
    if (!fullest || !oldest || oldest.done) return false;
    fullest.counts.delete(oldest.value);
    fullest.chars -= oldest.value.length;
    this.chars -= oldest.value.length;
    this.entries--;
    return true;
  }
}

/** A message kept by the keyed hash of its JSON rather than by the JSON (HASH_MESSAGES_OVER). */
function byHash(text: string): boolean {
  return text.length > HASH_MESSAGES_OVER && text.length <= PERSIST_LIMIT && text.charCodeAt(0) === 1;
}

/** The sidecar's counts, checked: one integer within [0, MAX_COUNT] per text asked (bytes from another
 * process; a count past the bound the saved counts are read with is no count). */
function checkedCounts(counts: unknown, expected: number): number[] {
  if (
    !Array.isArray(counts) ||
    counts.length !== expected ||
    !counts.every((c) => Number.isSafeInteger(c) && (c as number) >= 0 && (c as number) <= MAX_COUNT)
  ) {
    throw new Error(`gateway/countTokens answered ${expected} texts with something other than ${expected} counts`);
  }
  return counts as number[];
}

/** A long text cut where no o200k or cl100k token can span the cut, so the slices' counts add up
 * exactly: before a space that follows a non-space, or after a newline that precedes a non-space other
 * than "/". The sidecar cuts by the same rule (`pieces` in tokenizer.py, whose tests check the sums).
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

function keyOf(model: string, text: string): string {
  return `${model}\u0000${text}`;
}

/** keyOf's parts back: tokenizer and text. */
function splitEntry(entry: string): [string, string] {
  const at = entry.indexOf('\u0000');
  return [entry.slice(0, at), entry.slice(at + 1)];
}

/** `counting`, or `cancelled()` as soon as `token` is cancelled: a count Copilot gave up on must not
 * hold it until the count timeout (30 s, sidecar/session.ts). What was asked is still kept when it
 * arrives. Only a count that waits for the sidecar gets here: the memory's answers stay synchronous. */
export function unlessCancelled(counting: Promise<number>, token: CancellationToken | undefined, cancelled: () => Error): Promise<number> {
  if (!token) return counting;
  if (token.isCancellationRequested) {
    counting.catch(() => undefined); // nobody waits for it any more
    return Promise.reject(cancelled());
  }
  return new Promise<number>((resolve, reject) => {
    const listener = token.onCancellationRequested(() => reject(cancelled()));
    void counting.then(resolve, reject).finally(() => {
      listener.dispose();
    });
  });
}

/** A token for one batch's request, cancelled once the token of every count in it is (so the
 * sidecar is sent `$/cancelRequest`); none when a count in it has no token. `dispose` lets go of the
 * counts' tokens. */
function everyCancelled(given: (CancellationToken | undefined)[]): { token: CancellationToken; dispose(): void } | undefined {
  const tokens = given.filter((t): t is CancellationToken => t !== undefined);
  if (tokens.length < given.length) return undefined;
  const listeners = new Set<(e: unknown) => void>();
  let cancelled = false;
  const check = (): void => {
    if (cancelled || !tokens.every((t) => t.isCancellationRequested)) return;
    cancelled = true;
    listeners.forEach((listener) => listener(undefined));
  };
  const watching = tokens.map((t) => t.onCancellationRequested(check));
  const token: CancellationToken = {
    get isCancellationRequested() {
      return cancelled;
    },
    onCancellationRequested: (listener: (e: unknown) => void): Disposable => {
      listeners.add(listener);
      return { dispose: () => void listeners.delete(listener) };
    },
  };
  const dispose = (): void => {
    watching.forEach((w) => void w.dispose());
    listeners.clear();
  };
  return { token, dispose };
}

function groupByModel(batch: Pending[]): Map<string, Pending[]> {
  const groups = new Map<string, Pending[]>();
  for (const p of batch) {
    const group = groups.get(p.model);
    if (group) group.push(p);
    else groups.set(p.model, [p]);
  }
  return groups;
}
