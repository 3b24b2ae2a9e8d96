// Copilot counts every key and string of every tool's schema before each agent request, one awaited
// provideTokenCount at a time (rfcs/0004-token-accounting.md). The tools are known before it asks:
// their strings are counted in the background once the model list has been served, looked at again
// when they may have changed, and on a miss. The work runs in timers, never in activation or under a
// stream, in bounded batches the sidecar counts once its tokenizer has loaded on its own.
import type { TokenCounter } from './memo';
import { PERSIST_LIMIT } from './shapes';

/** After the model list is served: activation and the list come first. */
export const PREFETCH_DELAY_MS = 200;
/** Looks again after the first prefetch, for tools registered later (extensions that activate late,
 * MCP servers that start): a read of vscode.lm.tools and a comparison of names, each. */
export const RECHECK_MS = [5_000, 30_000, 120_000];
// A batch stays under the sidecar's inline limit (64K characters), so it is counted at once.
const BATCH_CHARS = 32_768;
const BATCH_STRINGS = 1_000;
/** Real schemas are far smaller (~1,200 strings and 30K characters for 40 tools); what lies beyond is
 * counted if Copilot asks for it. */
export const PREFETCH_LIMITS: WalkLimits = {
  strings: 50_000,
  chars: 4 << 20,
  toolStrings: 5_000,
  toolChars: 256 << 10,
  depth: 64,
  longest: PERSIST_LIMIT,
};

export interface PrefetchHooks {
  /** vscode.lm.tools: a new array on every read, so read once per look. */
  tools(): readonly ToolInfo[];
  /** Model ids to count for, one per tokenizer wanted. */
  targets(): string[];
  /** A chat is streaming: background work waits for it to end. */
  busy(): boolean;
}

export class ToolPrefetch {
  private timer: NodeJS.Timeout | undefined;
  private timerDue = 0;
  private started = false;
  private rechecks = 0;
  private due = false; // a look is owed once no chat streams
  private running: Promise<void> | undefined;
  private disposed = false;
  private readonly counted = new Map<string, string>(); // tokenizer → names of the tools last counted for it
  private names = new Set<string>(); // of the tools last looked at

  constructor(
    private readonly tokens: TokenCounter,
    private readonly hooks: PrefetchHooks,
  ) {}

  /** The model list was served: the first look, then the rechecks. */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.schedule(PREFETCH_DELAY_MS);
  }

  /** The tools may have changed (an extension came or went, the model list changed): look again soon. */
  changed(): void {
    if (this.started) this.schedule(PREFETCH_DELAY_MS);
  }

  /** The tools of a chat request: a name not seen in the last look means the tools changed since. */
  offered(tools: readonly { name: string }[] | undefined): void {
    if (this.started && tools?.some((tool) => !this.names.has(tool.name))) this.due = true;
  }

  /** No chat streams any more: a look that waited for that runs now. */
  idle(): void {
    if (this.due) this.schedule(0);
  }

  /** A string Copilot asked for is not known: perhaps the tools changed. Counted at once, not in the
   * background: Copilot is waiting. */
  learn(model: string): Promise<void> {
    return this.look([model], false);
  }

  dispose(): void {
    this.disposed = true;
    clearTimeout(this.timer);
  }

  private schedule(delay: number): void {
    if (this.disposed) return;
    const due = Date.now() + delay;
    if (this.timer) {
      if (this.timerDue <= due) return; // one soon enough is set already
      clearTimeout(this.timer); // a later recheck: this look comes first, and the next recheck after it
    }
    this.timerDue = due;
    this.timer = setTimeout(() => this.fire(), delay);
    this.timer.unref?.(); // never what keeps a process alive
  }

  private fire(): void {
    this.timer = undefined;
    if (this.hooks.busy()) {
      this.due = true;
      return;
    }
    this.due = false;
    this.running ??= this.look(this.hooks.targets(), true).finally(() => (this.running = undefined));
    if (this.rechecks < RECHECK_MS.length) this.schedule(RECHECK_MS[this.rechecks++]);
  }

  private async look(models: readonly string[], background: boolean): Promise<void> {
    if (!models.length) return;
    let tools: readonly ToolInfo[];
    let signature: string;
    try {
      tools = this.hooks.tools();
      const names = tools.map((t) => t.name);
      signature = `${names.length}\u0000${names.join('\u0000')}`;
      this.names = new Set(names);
    } catch {
      return; // the host could not list its tools: the walk counts as it asks
    }
    const todo = models.filter((model) => this.counted.get(this.tokens.tokenizerOf(model)) !== signature);
    if (!todo.length) return; // the same tools: a string that is no tool's
    const strings = toolStrings(tools, PREFETCH_LIMITS);
    for (const model of todo) {
      const tokenizer = this.tokens.tokenizerOf(model);
      this.counted.set(tokenizer, signature);
      try {
        for (const batch of batches(this.tokens.unknown(model, strings))) {
          if (this.disposed || (background && this.hooks.busy())) throw new Deferred();
          await this.tokens.prefetch(model, batch, background);
        }
      } catch (error) {
        this.counted.delete(tokenizer); // one by one still works; the next look or miss tries again
        if (error instanceof Deferred) this.due = true;
      }
    }
  }
}

/** A chat began while the background batches were being sent: the rest go once it ends. */
class Deferred extends Error {}

function* batches(strings: readonly string[]): Generator<string[]> {
  let batch: string[] = [];
  let chars = 0;
  for (const text of strings) {
    if (batch.length && (batch.length >= BATCH_STRINGS || chars + text.length > BATCH_CHARS)) {
      yield batch;
      batch = [];
      chars = 0;
    }
    batch.push(text);
    chars += text.length;
  }
  if (batch.length) yield batch;
}

/** The strings Copilot asks counts for when it budgets tools, in the order it asks: every key and
 * truthy string value of `{name, description, parameters}`, walked recursively (array indices are
 * keys too; an empty key is never asked), as Copilot Chat's ExtensionContributedChatTokenizer walks
 * them. */
export interface ToolInfo {
  name: string;
  description: string;
  inputSchema?: object | undefined;
}

/** How much of the tools a walk takes. A tool's schema comes from any extension or MCP server: what
 * lies past these bounds is not prefetched, only counted if Copilot asks for it. */
export interface WalkLimits {
  /** Strings and characters in all. */
  strings: number;
  chars: number;
  /** Strings and characters of one tool: one huge schema does not crowd out the others. */
  toolStrings: number;
  toolChars: number;
  depth: number;
  /** A longer string is left out (it costs a request of its own whenever it is asked). */
  longest: number;
}

const UNBOUNDED: WalkLimits = { strings: Infinity, chars: Infinity, toolStrings: Infinity, toolChars: Infinity, depth: Infinity, longest: Infinity };

export function toolStrings(tools: readonly ToolInfo[], limits: WalkLimits = UNBOUNDED): string[] {
  const out: string[] = [];
  let chars = 0;
  let toolStart = 0;
  let toolChars = 0;
  const take = (text: string): boolean => {
    if (text.length > limits.longest) return true;
    if (out.length - toolStart >= limits.toolStrings || toolChars + text.length > limits.toolChars) return false;
    if (out.length >= limits.strings || chars + text.length > limits.chars) return false;
    out.push(text);
    chars += text.length;
    toolChars += text.length;
    return true;
  };
  // False once a limit is reached: the walk of this tool ends there.
  const walk = (object: object, depth: number): boolean => {
    if (depth > limits.depth) return true;
    for (const key of Object.keys(object)) {
      const value: unknown = (object as Record<string, unknown>)[key];
      if (!value) continue;
      if (key && !take(key)) return false;
      if (typeof value === 'string' ? !take(value) : typeof value === 'object' && !walk(value, depth + 1)) return false;
    }
    return true;
  };
  for (const tool of tools) {
    if (out.length >= limits.strings || chars >= limits.chars) break;
    toolStart = out.length;
    toolChars = 0;
    try {
      walk({ name: tool.name, description: tool.description, parameters: tool.inputSchema }, 0);
    } catch {
      // A schema that cannot be walked (a getter or proxy that throws): its strings are counted if asked.
    }
  }
  return out;
}
