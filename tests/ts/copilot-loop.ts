// A double of Copilot Chat's agent loop on an extension's model, written from its source (Copilot
// Chat 0.67, `extensions/copilot` in microsoft/vscode; rfcs/0004, "The rest of the turn"), driving the
// extension's provider as VS Code does. What it keeps of Copilot:
// - VS Code hands the provider the model as last listed, and lists again on the provider's change
//   event (`extHostLanguageModels`, `_localModels`); Copilot copies `maxInputTokens` into the turn's
//   endpoint once per user turn (`ExtensionContributedChatEndpoint`).
// - Each step (`AgentIntentInvocation.buildPrompt`): tool tokens from the provider's counts
//   (`ExtensionContributedChatTokenizer.countToolTokens`), the messages in o200k tokens, budgeted at
//   `floor((window − toolTokens) × 0.9)`; past it, a waiting background summary is applied, or one is
//   made in the foreground (the simple form). Before rendering, a finished background summary is
//   applied when `max(last render + toolTokens, last prompt_tokens) / window` is at least 0.65; after,
//   one is started (the inline form: the rendered messages and Copilot's compaction message) at 0.80
//   once the turn has a tool call, 0.90 before (`shouldKickOffBackgroundSummarization`, the jitter at
//   its middle). A summary replaces the history up to the round before the last.
// - `prompt_tokens` of the usage part after each request (`TurnTokenUsageMetadata`, from the last
//   turn that has one); the turn ends with an answer without tool calls, or at `chat.agent.maxRequests`.
// Its one liberty: a background summary started in a step is taken as finished by the next (Copilot
// does not wait for it there; the fake answers in milliseconds, and a tool runs in between).
import type * as vscode from 'vscode';
import type { GatewayChatProvider } from '../../extension/provider';
import * as stub from './vscode-stub';

export const MAX_REQUESTS = 50; // VS Code 1.139's `chat.agent.maxRequests`
const SUMMARY_APPLY_MIN = 0.65;
const KICK_OFF_WARM = 0.8;
const KICK_OFF_COLD = 0.9;
const BACKGROUND_MESSAGE = 'The conversation has grown too large for the context window and must be compacted now. Summarize it, keeping the task.';
const FOREGROUND_MESSAGE = 'Summarize the conversation history so far, paying special attention to the task and the tool results.';

type Entry =
  | { kind: 'user'; text: string }
  | { kind: 'round'; id: number; call: stub.LanguageModelToolCallPart; result: string }
  | { kind: 'answer'; text: string }
  | { kind: 'summary'; text: string };

export interface Tool {
  name: string;
  description: string;
  inputSchema: object;
}

/** What a turn did, as the test reads it. */
export interface TurnLog {
  requests: number; // the loop's own, summaries apart
  summaries: { form: 'background' | 'foreground'; promptTokens: number }[];
  answer: string | undefined; // undefined: stopped at the request limit
  promptTokens: number[]; // the usage part's, per request
  windows: number[]; // the window VS Code passed the provider, per request
  summarising: boolean[]; // per request: whether a background summary of the turn was under way
}

/** VS Code's list of the provider's models: asked at start and again on each change event. */
export class ListedModels {
  private models = new Map<string, vscode.LanguageModelChatInformation>();
  changes = 0;

  constructor(private readonly provider: GatewayChatProvider) {
    provider.onDidChangeLanguageModelChatInformation(() => {
      this.changes++;
      void this.list();
    });
  }

  async list(): Promise<void> {
    const listed = await this.provider.provideLanguageModelChatInformation({ silent: true }, new stub.CancellationTokenSource().token);
    this.models = new Map(listed.map((model) => [model.id, model]));
  }

  get(id: string): vscode.LanguageModelChatInformation {
    const model = this.models.get(id);
    if (!model) throw new Error(`VS Code has no model ${id}`);
    return model;
  }
}

type Background = { promise: Promise<{ text: string; anchor: number } | undefined>; result?: { text: string; anchor: number } };

/** One chat session of Copilot's agent on one model: its history across turns. */
export class CopilotAgent {
  private entries: Entry[] = [];
  private nextId = 0;
  private lastRender = 0;
  private lastPromptTokens: number | undefined;
  private background: Background | undefined;

  constructor(
    private readonly provider: GatewayChatProvider,
    private readonly vscodeModels: ListedModels,
    private readonly modelId: string,
    private readonly system: string,
    private readonly tools: Tool[],
    private readonly runTool: (call: stub.LanguageModelToolCallPart) => string,
  ) {}

  /** One user turn: steps until an answer without tool calls, or the request limit. */
  async turn(prompt: string): Promise<TurnLog> {
    const log: TurnLog = { requests: 0, summaries: [], answer: undefined, promptTokens: [], windows: [], summarising: [] };
    this.entries.push({ kind: 'user', text: prompt });
    const window = this.vscodeModels.get(this.modelId).maxInputTokens; // the turn's endpoint copies it
    let roundsThisTurn = 0;
    for (; log.requests < MAX_REQUESTS; log.requests++) {
      const messages = await this.buildPrompt(window, roundsThisTurn > 0, log);
      const model = this.vscodeModels.get(this.modelId); // as VS Code has it now
      log.windows.push(model.maxInputTokens);
      log.summarising.push(this.background !== undefined);
      const parts = await this.send(model, messages, true);
      const usage = usageOf(parts);
      if (usage !== undefined) {
        this.lastPromptTokens = usage;
        log.promptTokens.push(usage);
      }
      const calls = parts.filter((p): p is stub.LanguageModelToolCallPart => p instanceof stub.LanguageModelToolCallPart);
      if (calls.length === 0) {
        log.answer = textOf(parts);
        this.entries.push({ kind: 'answer', text: log.answer });
        log.requests++;
        break;
      }
      for (const call of calls) this.entries.push({ kind: 'round', id: this.nextId++, call, result: this.runTool(call) });
      roundsThisTurn++;
    }
    return log;
  }

  private async buildPrompt(window: number, warm: boolean, log: TurnLog): Promise<vscode.LanguageModelChatRequestMessage[]> {
    const model = this.vscodeModels.get(this.modelId);
    const toolTokens = await this.countToolTokens(model);
    const messageBudget = Math.max(1, Math.floor((window - toolTokens) * 0.9));
    const ratio = (render: number) => Math.max(render + toolTokens, this.lastPromptTokens ?? 0) / window;
    let summarised = false;
    if (this.background) {
      const done = await this.background.promise; // the liberty: finished by now
      if (done && ratio(this.lastRender) >= SUMMARY_APPLY_MIN) {
        this.apply(done);
        summarised = true;
      }
      this.background = undefined;
    }
    let messages = this.render();
    let render = await this.count(model, messages);
    if (render > messageBudget) {
      // Budget exceeded: Copilot summarises in the foreground (its simple form), or sends the prompt
      // as it is if that does not help ("rendering without summarization").
      const summary = await this.summarise(model, messages, 'foreground', log);
      if (summary) this.apply(summary);
      summarised = true;
      messages = this.render();
      render = await this.count(model, messages);
    }
    this.lastRender = render;
    if (!summarised && ratio(render) >= (warm ? KICK_OFF_WARM : KICK_OFF_COLD)) {
      const promise = this.summarise(model, messages, 'background', log);
      this.background = { promise };
    }
    return messages;
  }

  /** A summary request of `form` for `messages`; its text and the round it replaces the history to. */
  private async summarise(
    model: vscode.LanguageModelChatInformation,
    messages: vscode.LanguageModelChatRequestMessage[],
    form: 'background' | 'foreground',
    log: TurnLog,
  ) {
    const rounds = this.entries.filter((e): e is Extract<Entry, { kind: 'round' }> => e.kind === 'round');
    const sinceSummary = rounds.filter((r) => this.entries.indexOf(r) > this.lastSummaryIndex());
    const anchor = sinceSummary.length >= 2 ? sinceSummary.at(-2)! : sinceSummary.at(-1);
    if (!anchor) return undefined;
    const ask = userText(form === 'background' ? BACKGROUND_MESSAGE : FOREGROUND_MESSAGE);
    const parts = await this.send(model, [...messages, ask], form === 'background');
    log.summaries.push({ form, promptTokens: usageOf(parts) ?? 0 });
    const text = textOf(parts);
    return text ? { text, anchor: anchor.id } : undefined;
  }

  private lastSummaryIndex(): number {
    return this.entries.map((e) => e.kind).lastIndexOf('summary');
  }

  /** The summary replaces the history up to its round; the current turn's request stays before it. */
  private apply(summary: { text: string; anchor: number }): void {
    const at = this.entries.findIndex((e) => e.kind === 'round' && e.id === summary.anchor);
    if (at < 0) return;
    const request = this.entries
      .slice(0, at)
      .filter((e) => e.kind === 'user')
      .at(-1);
    const kept = this.entries.slice(at + 1);
    this.entries = [{ kind: 'summary', text: summary.text }, ...(request ? [request] : []), ...kept];
  }

  private render(): vscode.LanguageModelChatRequestMessage[] {
    const messages: vscode.LanguageModelChatRequestMessage[] = [message(3, [new stub.LanguageModelTextPart(this.system)])];
    for (const entry of this.entries) {
      if (entry.kind === 'user' || entry.kind === 'summary') messages.push(userText(entry.text));
      else if (entry.kind === 'answer') messages.push(message(2, [new stub.LanguageModelTextPart(entry.text)]));
      else {
        messages.push(message(2, [entry.call]));
        messages.push(message(1, [new stub.LanguageModelToolResultPart2(entry.call.callId, [new stub.LanguageModelTextPart(entry.result)])]));
      }
    }
    return messages;
  }

  /** Copilot's own count of the messages: 3 tokens a message and 3 more, around the o200k counts. */
  private async count(model: vscode.LanguageModelChatInformation, messages: vscode.LanguageModelChatRequestMessage[]): Promise<number> {
    let total = 3;
    for (const m of messages) total += 3 + (await this.provider.provideTokenCount(model, m, token()));
    return total;
  }

  /** `countToolTokens`: 16, then 8 a tool and every key and truthy string value of its name,
   * description and schema, counted one at a time, the sum with 10 % more. */
  private async countToolTokens(model: vscode.LanguageModelChatInformation): Promise<number> {
    const walk = async (value: Record<string, unknown>): Promise<number> => {
      let sum = 0;
      for (const [key, inner] of Object.entries(value)) {
        if (!inner) continue;
        sum += await this.provider.provideTokenCount(model, key, token());
        if (typeof inner === 'string') sum += await this.provider.provideTokenCount(model, inner, token());
        else if (typeof inner === 'object') sum += await walk(inner as Record<string, unknown>);
      }
      return sum;
    };
    let total = this.tools.length ? 16 : 0;
    for (const tool of this.tools) total += 8 + (await walk({ name: tool.name, description: tool.description, parameters: tool.inputSchema }));
    return Math.floor(total * 1.1);
  }

  private async send(model: vscode.LanguageModelChatInformation, messages: vscode.LanguageModelChatRequestMessage[], withTools: boolean): Promise<unknown[]> {
    const parts: unknown[] = [];
    const options = { toolMode: 1, tools: withTools ? this.tools : [] } as unknown as vscode.ProvideLanguageModelChatResponseOptions;
    await this.provider.provideLanguageModelChatResponse(model, messages, options, { report: (p) => parts.push(p) }, token());
    return parts;
  }
}

const token = () => new stub.CancellationTokenSource().token as unknown as vscode.CancellationToken;

function message(role: number, content: unknown[]): vscode.LanguageModelChatRequestMessage {
  return { role, name: undefined, content };
}

function userText(text: string): vscode.LanguageModelChatRequestMessage {
  return message(1, [new stub.LanguageModelTextPart(text)]);
}

function textOf(parts: unknown[]): string {
  return parts
    .filter((p): p is stub.LanguageModelTextPart => p instanceof stub.LanguageModelTextPart)
    .map((p) => p.value)
    .join('');
}

function usageOf(parts: unknown[]): number | undefined {
  const part = parts.find((p): p is stub.LanguageModelDataPart => p instanceof stub.LanguageModelDataPart && p.mimeType === 'usage');
  return part ? (JSON.parse(new TextDecoder().decode(part.data)) as { prompt_tokens: number }).prompt_tokens : undefined;
}
