// A test double of VS Code's Copilot-harness BYOK bridge (the Copilot SDK in VS Code's agent host reaches
// an extension's models only through it), and of Copilot Chat's editor path, each running an agent
// session against a provider as VS Code hands it to them.
// - The renderer leg (agentHostByokLmHandler.ts in microsoft/vscode, read, not copied): request items →
//   LM messages, one message per item (`toMessages`), and the parts the provider reports → output items
//   (`fromParts`).
// - The node leg (the SDK over the agent host's Responses proxy): output items become Responses items
//   and come back as the next request's input; only what a Responses item carries survives (`nodeLeg`):
//   a reasoning item keeps its id (when it starts with `rs`; the proxy makes up another otherwise), its
//   summary texts and its encrypted content, never its metadata.
// - `BridgeSession`: an agent session as the SDK runs it (tool loop per user turn, canned tool results);
//   `EditorPathSession`: the same session as Copilot Chat's editor path (0.67) sends it.
// No node:test or assert here: the bench imports these too (bench/from-tests.cjs).
import type * as vscode from 'vscode';
import * as stub from './vscode-stub';

// ---- the bridge's DTOs (platform/agentHost/common/agentHostByokLm.ts, Responses-style version) ----

export type Text = { type: 'text'; text: string };
export type MessageItem = { type: 'message'; role: 'system' | 'developer' | 'user' | 'assistant'; content: Text[] };
export type ReasoningItem = { type: 'reasoning'; id?: string; summary: string[]; encryptedContent?: string; metadata?: Record<string, unknown> };
export type FunctionCallItem = { type: 'function_call'; callId: string; name: string; argumentsJson: string };
export type CustomToolCallItem = { type: 'custom_tool_call'; callId: string; name: string; input: string };
export type ToolOutputItem = { type: 'function_call_output' | 'custom_tool_call_output'; callId: string; output: string };
export type InputItem = MessageItem | ReasoningItem | FunctionCallItem | CustomToolCallItem | ToolOutputItem;
/** An output message has no role: the model's. */
export type OutputItem = { type: 'message'; content: Text[] } | ReasoningItem | FunctionCallItem | CustomToolCallItem;
export type BridgeTool =
  { type: 'function'; name: string; description?: string; parametersSchema?: object } | { type: 'custom'; name: string; description?: string };

export interface ByokRequest {
  vendor: string;
  modelId: string;
  instructions?: string;
  input: InputItem[];
  tools?: BridgeTool[];
  reasoningEffort?: string;
  previousResponseId?: string;
  modelOptions?: Record<string, unknown>;
}
export interface ByokUsage {
  inputTokens?: number;
  outputTokens?: number;
  reasoningTokens?: number;
}
export interface ByokResult {
  output: OutputItem[];
  responseId?: string;
  usage?: ByokUsage;
  error?: string;
}

const Role = { User: 1, Assistant: 2, System: 3 } as const; // System: the proposed member VS Code sends
const STATEFUL_MARKER = 'stateful_marker';
const USAGE = 'usage';
/** The schema the bridge gives a custom (freeform) tool. */
export const FREEFORM_SCHEMA = { type: 'object', properties: { input: { type: 'string' } }, required: ['input'] };

type Message = vscode.LanguageModelChatRequestMessage;
type Part = unknown;

function message(role: number, content: Part[]): Message {
  return { role, name: undefined, content };
}

// ---- the renderer leg ----

/** The LM messages the bridge sends for a request: a stateful marker (if any), the instructions as a
 * System message, then one message per input item; VS Code 1.139's handler (the host here) then
 * merges consecutive Assistant messages into one, the upstream one read at 020db717 does not
 * (`merge` false). */
export function toMessages(request: ByokRequest, merge = true): Message[] {
  const messages: Message[] = [];
  if (request.previousResponseId) {
    const marker = new TextEncoder().encode(`${request.modelId}\\${request.previousResponseId}`);
    messages.push(message(Role.Assistant, [new stub.LanguageModelDataPart(marker, STATEFUL_MARKER)]));
  }
  if (request.instructions) messages.push(message(Role.System, [new stub.LanguageModelTextPart(request.instructions)]));
  for (const item of request.input) {
    const next = toMessage(item);
    const last = messages.at(-1);
    if (merge && last && Number(last.role) === Role.Assistant && Number(next.role) === Role.Assistant) {
      messages[messages.length - 1] = message(Role.Assistant, [...last.content, ...next.content]);
    } else {
      messages.push(next);
    }
  }
  return messages;
}

function toMessage(item: InputItem): Message {
  switch (item.type) {
    case 'message': {
      const role = item.role === 'assistant' ? Role.Assistant : item.role === 'user' ? Role.User : Role.System;
      return message(
        role,
        item.content.map((part) => new stub.LanguageModelTextPart(part.text)),
      );
    }
    case 'reasoning': {
      const metadata = { ...item.metadata, ...(item.encryptedContent ? { encrypted_content: item.encryptedContent } : {}) };
      return message(Role.Assistant, [new stub.LanguageModelThinkingPart(item.summary, item.id, metadata)]);
    }
    case 'function_call':
      return message(Role.Assistant, [new stub.LanguageModelToolCallPart(item.callId, item.name, parseJson(item.argumentsJson) as object)]);
    case 'custom_tool_call':
      return message(Role.Assistant, [new stub.LanguageModelToolCallPart(item.callId, item.name, { input: item.input })]);
    case 'function_call_output':
    case 'custom_tool_call_output':
      return message(Role.User, [new stub.LanguageModelToolResultPart(item.callId, [new stub.LanguageModelTextPart(item.output)])]);
  }
}

function parseJson(json: string): unknown {
  try {
    return JSON.parse(json);
  } catch {
    return {};
  }
}

/** The model's configuration as VS Code's language-models service sends it with every request, the
 * bridge's included (the workbench bundle of VS Code 1.139.1: `sendChatRequest` merges `getModelConfiguration`, which is
 * `_resolveModelConfigurationWithDefaults`, under the caller's `configuration`): the defaults of the
 * model's `configurationSchema`, then what the user chose in the editor's chat input (`stored`, kept per
 * model), then the caller's effort; undefined when there is nothing to send. */
export function modelConfiguration(
  model: vscode.LanguageModelChatInformation,
  stored: Record<string, unknown> | undefined,
  reasoningEffort: string | undefined,
): Record<string, unknown> | undefined {
  const schema = (model as { configurationSchema?: { properties?: Record<string, { default?: unknown }> } }).configurationSchema;
  const defaults = Object.fromEntries(Object.entries(schema?.properties ?? {}).flatMap(([key, p]) => (p.default !== undefined ? [[key, p.default]] : [])));
  const caller = reasoningEffort ? { reasoningEffort } : undefined;
  return stored || Object.keys(defaults).length > 0 ? { ...defaults, ...stored, ...caller } : caller;
}

/** The options the bridge sends, as the provider receives them: `configuration` (the effort) arrives
 * as `modelConfiguration`, over the model's own (above). Assumed, not read in the host's source: the
 * tool mode (the bridge sets none; Auto here) and `requestInitiator` 'core' (the bridge calls without
 * an extension id). */
export function toOptions(
  request: ByokRequest,
  model: vscode.LanguageModelChatInformation,
  stored?: Record<string, unknown>,
): vscode.ProvideLanguageModelChatResponseOptions {
  const configuration = modelConfiguration(model, stored, request.reasoningEffort);
  const tools = request.tools?.length
    ? request.tools.map((tool) => ({
        name: tool.name,
        description: tool.description ?? '',
        inputSchema: tool.type === 'function' ? tool.parametersSchema : FREEFORM_SCHEMA,
      }))
    : undefined;
  return {
    modelOptions: request.modelOptions ?? {},
    includeEncryptedThinking: true,
    requestInitiator: 'core',
    toolMode: 1,
    ...(configuration ? { modelConfiguration: configuration } : {}),
    ...(tools ? { tools } : {}),
  } as unknown as vscode.ProvideLanguageModelChatResponseOptions;
}

/** What the bridge makes of the parts a provider reported. */
export function fromParts(parts: readonly Part[], customToolNames: ReadonlySet<string>, modelId?: string): ByokResult {
  const output: OutputItem[] = [];
  let responseId: string | undefined;
  let usage: ByokUsage | undefined;
  for (const part of parts) {
    const p = part as Record<string, unknown>;
    if (part instanceof stub.LanguageModelThinkingPart) {
      appendReasoning(output, part);
    } else if (part instanceof stub.LanguageModelTextPart) {
      const previous = output.at(-1);
      if (previous?.type === 'message') previous.content.push({ type: 'text', text: part.value });
      else output.push({ type: 'message', content: [{ type: 'text', text: part.value }] });
    } else if (typeof p.callId === 'string' && typeof p.name === 'string' && !Array.isArray(p.content)) {
      if (customToolNames.has(p.name)) output.push({ type: 'custom_tool_call', callId: p.callId, name: p.name, input: customInput(p.input) });
      else output.push({ type: 'function_call', callId: p.callId, name: p.name, argumentsJson: JSON.stringify(p.input ?? {}) });
    } else if (typeof p.mimeType === 'string' && p.data instanceof Uint8Array) {
      const text = new TextDecoder().decode(p.data);
      if (p.mimeType === STATEFUL_MARKER) responseId = decodeMarker(text, modelId);
      else if (p.mimeType === USAGE) usage = decodeUsage(text);
    }
  }
  return { output, responseId, usage };
}

function appendReasoning(output: OutputItem[], part: stub.LanguageModelThinkingPart): void {
  const metadata = part.metadata;
  if (metadata?.vscode_reasoning_done === true) return;
  const encrypted =
    typeof metadata?.encrypted_content === 'string' ? metadata.encrypted_content : typeof metadata?.encrypted === 'string' ? metadata.encrypted : undefined;
  const reasoning: ReasoningItem = {
    type: 'reasoning',
    id: part.id,
    summary: Array.isArray(part.value) ? [...part.value] : [part.value],
    encryptedContent: encrypted,
    metadata,
  };
  const previous = output.at(-1);
  if (previous?.type === 'reasoning' && previous.id === reasoning.id) {
    output[output.length - 1] = {
      ...previous,
      summary: [...previous.summary, ...reasoning.summary],
      encryptedContent: reasoning.encryptedContent ?? previous.encryptedContent,
      metadata: previous.metadata || reasoning.metadata ? { ...previous.metadata, ...reasoning.metadata } : undefined,
    };
  } else {
    output.push(reasoning);
  }
}

function customInput(parameters: unknown): string {
  if (typeof parameters === 'object' && parameters !== null) {
    const input = (parameters as Record<string, unknown>).input;
    if (typeof input === 'string') return input;
  }
  return typeof parameters === 'string' ? parameters : JSON.stringify(parameters ?? {});
}

function decodeMarker(text: string, modelId: string | undefined): string | undefined {
  const separator = text.indexOf('\\');
  if (separator === -1 || text.slice(0, separator) !== modelId) return undefined;
  return text.slice(separator + 1) || undefined;
}

function decodeUsage(text: string): ByokUsage | undefined {
  try {
    const value = JSON.parse(text) as Record<string, unknown>;
    const details =
      typeof value.completion_tokens_details === 'object' && value.completion_tokens_details !== null
        ? (value.completion_tokens_details as Record<string, unknown>)
        : undefined;
    const number = (from: Record<string, unknown>, key: string) => (typeof from[key] === 'number' ? from[key] : undefined);
    return {
      inputTokens: number(value, 'prompt_tokens'),
      outputTokens: number(value, 'completion_tokens'),
      reasoningTokens: details ? number(details, 'reasoning_tokens') : undefined,
    };
  } catch {
    return undefined;
  }
}

/** One request through the bridge: the provider called as the renderer calls it, the parts read as it
 * reads them; a thrown error is the result's `error`. `onPart` sees each part as it is reported. */
export async function bridgeChat(
  provider: vscode.LanguageModelChatProvider,
  model: vscode.LanguageModelChatInformation,
  request: ByokRequest,
  token: vscode.CancellationToken,
  onPart?: (part: Part, count: number) => void,
  merge = true,
  stored?: Record<string, unknown>,
): Promise<{ result: ByokResult; parts: Part[] }> {
  const parts: Part[] = [];
  const custom = new Set(request.tools?.filter((t) => t.type === 'custom').map((t) => t.name));
  const progress = {
    report: (part: Part) => {
      parts.push(part);
      onPart?.(part, parts.length);
    },
  };
  try {
    await provider.provideLanguageModelChatResponse(model, toMessages(request, merge), toOptions(request, model, stored), progress, token);
    return { result: fromParts(parts, custom, request.modelId), parts };
  } catch (error) {
    return { result: { output: [], error: error instanceof Error ? error.message : String(error) }, parts };
  }
}

// ---- the node leg ----

/** A Responses item as the proxy writes it and the SDK keeps it. */
export type ResponsesItem =
  | { type: 'message'; id?: string; role: string; content: { type: string; text: string }[] }
  | { type: 'reasoning'; id: string; summary: { type: 'summary_text'; text: string }[]; encrypted_content: string | null }
  | { type: 'function_call'; id?: string; call_id: string; name: string; arguments: string }
  | { type: 'custom_tool_call'; id?: string; call_id: string; name: string; input: string }
  | { type: 'function_call_output' | 'custom_tool_call_output'; call_id: string; output: string };

/** Ids the proxy makes up (`rs_byok_…`, `msg_byok_…`): one source per session. */
export class ProxyIds {
  private n = 0;
  next(prefix: string): string {
    return `${prefix}_byok_${++this.n}`;
  }
}

/** The bridge's output as the proxy hands it to the SDK. */
export function toResponses(output: readonly OutputItem[], ids = new ProxyIds()): ResponsesItem[] {
  return output.map((item): ResponsesItem => {
    switch (item.type) {
      case 'message':
        return { type: 'message', id: ids.next('msg'), role: 'assistant', content: item.content.map((c) => ({ type: 'output_text', text: c.text })) };
      case 'reasoning':
        return {
          type: 'reasoning',
          id: item.id?.startsWith('rs') ? item.id : ids.next('rs'),
          summary: item.summary.map((text) => ({ type: 'summary_text', text })),
          encrypted_content: item.encryptedContent ?? null,
        };
      case 'function_call':
        return { type: 'function_call', id: ids.next('fc'), call_id: item.callId, name: item.name, arguments: item.argumentsJson };
      case 'custom_tool_call':
        return { type: 'custom_tool_call', id: ids.next('ctc'), call_id: item.callId, name: item.name, input: item.input };
    }
  });
}

/** The SDK's Responses input as the proxy hands it to the bridge. */
export function fromResponses(items: readonly ResponsesItem[]): InputItem[] {
  return items.map((item): InputItem => {
    switch (item.type) {
      case 'message':
        return { type: 'message', role: item.role as MessageItem['role'], content: item.content.map((c) => ({ type: 'text', text: c.text })) };
      case 'reasoning':
        return { type: 'reasoning', id: item.id, summary: item.summary.map((s) => s.text), encryptedContent: item.encrypted_content ?? undefined };
      case 'function_call':
        return { type: 'function_call', callId: item.call_id, name: item.name, argumentsJson: item.arguments ?? '{}' };
      case 'custom_tool_call':
        return { type: 'custom_tool_call', callId: item.call_id, name: item.name, input: item.input };
      default:
        return { type: item.type, callId: item.call_id, output: item.output };
    }
  });
}

/** THE LOSS: what of a response's output comes back as the next request's input, after the proxy and
 * the SDK. `loseEncrypted`: an older bridge that drops the encrypted reasoning as well. */
export function nodeLeg(output: readonly OutputItem[], options: { ids?: ProxyIds; loseEncrypted?: boolean } = {}): InputItem[] {
  const items = fromResponses(toResponses(output, options.ids));
  return options.loseEncrypted ? items.map((item) => (item.type === 'reasoning' ? { ...item, encryptedContent: undefined } : item)) : items;
}

// ---- sessions ----

export interface SessionOptions {
  tools: BridgeTool[];
  instructions?: string;
  reasoningEffort?: string;
  vendor?: string;
  /** Requests per user turn at most (the tool loop's cap). */
  maxSteps?: number;
  /** The text a tool call returns. */
  toolOutput?: (name: string, callId: string, turn: number) => string;
  /** An older bridge that loses the encrypted reasoning (BridgeSession only). */
  loseEncrypted?: boolean;
  /** One message per item, never merged: the upstream handler at 020db717 (BridgeSession only). */
  unmerged?: boolean;
  /** What the user chose for the model in the editor's chat input (`{speed: 'fast'}`), which VS Code
   * keeps per model and sends with every request to it, the harness's too. */
  stored?: Record<string, unknown>;
}

export interface RequestRecord {
  turn: number;
  step: number;
  /** The messages the provider received. */
  messages: number;
  result: ByokResult;
  parts: number;
  ms: number;
  cancelled: boolean;
  /** From the cancellation to the provider's return, when cancelled. */
  msAfterCancel?: number;
}

export interface TurnRecord {
  turn: number;
  prompt: string;
  /** The model's text answer ('' when the turn ended without one). */
  answer: string;
  error?: string;
  cancelled: boolean;
  calls: number;
  requests: RequestRecord[];
}

export interface TurnControl {
  /** Cancel the turn's first request once this many parts have been reported. */
  cancelAfterParts?: number;
}

const DEFAULT_STEPS = 8;

function defaultOutput(name: string, callId: string, turn: number): string {
  return `[${name} ran for ${callId} in turn ${turn}] ok`;
}

function answerOf(output: readonly OutputItem[]): string {
  return output.flatMap((item) => (item.type === 'message' ? item.content.map((c) => c.text) : [])).join('');
}

function callsOf(output: readonly OutputItem[]): (FunctionCallItem | CustomToolCallItem)[] {
  return output.filter((item): item is FunctionCallItem | CustomToolCallItem => item.type === 'function_call' || item.type === 'custom_tool_call');
}

/** What the SDK counts as an answer: text that is not blank, a call, or a reasoning summary. */
function visible(output: readonly OutputItem[]): boolean {
  return output.some((item) =>
    item.type === 'message' ? answerOf([item]).trim() !== '' : item.type === 'reasoning' ? item.summary.some((s) => s.trim() !== '') : true,
  );
}

/** Runs `request` with a fresh token, cancelled after `cancelAfterParts` parts when asked. */
async function timed<T extends { parts: Part[] }>(
  cancelAfterParts: number | undefined,
  run: (token: vscode.CancellationToken, onPart: (part: Part, count: number) => void) => Promise<T>,
): Promise<T & { ms: number; cancelled: boolean; msAfterCancel?: number }> {
  const source = new stub.CancellationTokenSource();
  let cancelledAt: number | undefined;
  const started = Date.now();
  const done = await run(source.token, (_part, count) => {
    if (cancelAfterParts !== undefined && count >= cancelAfterParts && cancelledAt === undefined) {
      cancelledAt = Date.now();
      source.cancel();
    }
  });
  const ended = Date.now();
  source.dispose();
  return { ...done, ms: ended - started, cancelled: cancelledAt !== undefined, ...(cancelledAt !== undefined ? { msAfterCancel: ended - cancelledAt } : {}) };
}

/** An agent session as the Copilot SDK runs it through the bridge: it keeps the Responses input, and per
 * user turn sends requests in a tool loop (each call answered with a canned result) until the model
 * answers with text, a request fails, the turn is cancelled or the step cap is reached. */
/** What both sessions keep: the provider and model they run against, and each turn's record. */
abstract class AgentSession {
  readonly turns: TurnRecord[] = [];

  constructor(
    protected readonly provider: vscode.LanguageModelChatProvider,
    protected readonly model: vscode.LanguageModelChatInformation,
    protected readonly options: SessionOptions,
  ) {}

  get requests(): RequestRecord[] {
    return this.turns.flatMap((t) => t.requests);
  }

  /** A new turn's record, kept. */
  protected begin(prompt: string): TurnRecord {
    const record: TurnRecord = { turn: this.turns.length + 1, prompt, answer: '', cancelled: false, calls: 0, requests: [] };
    this.turns.push(record);
    return record;
  }

  abstract turn(prompt: string, control?: TurnControl): Promise<TurnRecord>;
}

export class BridgeSession extends AgentSession {
  readonly input: InputItem[] = [];
  private readonly ids = new ProxyIds();

  async turn(prompt: string, control: TurnControl = {}): Promise<TurnRecord> {
    const record = this.begin(prompt);
    this.input.push({ type: 'message', role: 'user', content: [{ type: 'text', text: prompt }] });
    const output = this.options.toolOutput ?? defaultOutput;
    for (let step = 1; step <= (this.options.maxSteps ?? DEFAULT_STEPS); step++) {
      const request: ByokRequest = {
        vendor: this.options.vendor ?? 'vercel-ai-gateway',
        modelId: this.model.id,
        ...(this.options.instructions ? { instructions: this.options.instructions } : {}),
        input: [...this.input],
        tools: this.options.tools,
        ...(this.options.reasoningEffort ? { reasoningEffort: this.options.reasoningEffort } : {}),
      };
      const sent = await timed(step === 1 ? control.cancelAfterParts : undefined, (token, onPart) =>
        bridgeChat(this.provider, this.model, request, token, onPart, !this.options.unmerged, this.options.stored),
      );
      const { result } = sent;
      record.requests.push({
        turn: record.turn,
        step,
        messages: toMessages(request, !this.options.unmerged).length,
        result,
        parts: sent.parts.length,
        ms: sent.ms,
        cancelled: sent.cancelled,
        msAfterCancel: sent.msAfterCancel,
      });
      if (sent.cancelled) {
        record.cancelled = true; // the SDK aborts the turn and keeps nothing of the response
        return record;
      }
      if (result.error !== undefined) {
        record.error = result.error;
        return record;
      }
      if (!visible(result.output)) {
        record.error = 'No response was returned'; // the SDK fails a turn whose response shows nothing
        return record;
      }
      this.input.push(...nodeLeg(result.output, { ids: this.ids, loseEncrypted: this.options.loseEncrypted }));
      const calls = callsOf(result.output);
      if (calls.length === 0) {
        record.answer = answerOf(result.output);
        return record;
      }
      for (const call of calls) {
        record.calls++;
        const type = call.type === 'custom_tool_call' ? 'custom_tool_call_output' : 'function_call_output';
        this.input.push({ type, callId: call.callId, output: output(call.name, call.callId, record.turn) });
      }
    }
    record.error = `no answer within ${this.options.maxSteps ?? DEFAULT_STEPS} requests`;
    return record;
  }
}

/** The same session as Copilot Chat's editor path sends it (0.67): per response one Assistant message
 * with the text, ONE thinking part (the response's thinking text joined, the last id and the last
 * metadata reported) and the calls; the results as one User message of result parts. A response's
 * thinking part is kept only within the current turn's tool loop. */
export class EditorPathSession extends AgentSession {
  /** The messages of turns that ended, without their thinking. */
  readonly history: Message[] = [];

  async turn(prompt: string, control: TurnControl = {}): Promise<TurnRecord> {
    const record = this.begin(prompt);
    const current: Message[] = [message(Role.User, [new stub.LanguageModelTextPart(prompt)])];
    const output = this.options.toolOutput ?? defaultOutput;
    const tools = this.options.tools.map((tool) => ({
      name: tool.name,
      description: tool.description ?? '',
      inputSchema: tool.type === 'function' ? tool.parametersSchema : FREEFORM_SCHEMA,
    }));
    const configuration = modelConfiguration(this.model, this.options.stored, this.options.reasoningEffort);
    const options = {
      tools,
      toolMode: 1,
      modelOptions: {},
      requestInitiator: 'github.copilot-chat',
      ...(configuration ? { modelConfiguration: configuration } : {}),
    } as unknown as vscode.ProvideLanguageModelChatResponseOptions;
    const end = () => this.history.push(...current.map(withoutThinking));
    for (let step = 1; step <= (this.options.maxSteps ?? DEFAULT_STEPS); step++) {
      const system = this.options.instructions ? [message(Role.System, [new stub.LanguageModelTextPart(this.options.instructions)])] : [];
      const messages = [...system, ...this.history, ...current];
      const sent = await timed(step === 1 ? control.cancelAfterParts : undefined, async (token, onPart) => {
        const parts: Part[] = [];
        const progress = { report: (part: Part) => (parts.push(part), onPart(part, parts.length)) };
        try {
          await this.provider.provideLanguageModelChatResponse(this.model, messages, options, progress, token);
          return { parts, error: undefined };
        } catch (error) {
          return { parts, error: error instanceof Error ? error.message : String(error) };
        }
      });
      const result: ByokResult = sent.error !== undefined ? { output: [], error: sent.error } : fromParts(sent.parts, new Set(), this.model.id);
      record.requests.push({
        turn: record.turn,
        step,
        messages: messages.length,
        result,
        parts: sent.parts.length,
        ms: sent.ms,
        cancelled: sent.cancelled,
        msAfterCancel: sent.msAfterCancel,
      });
      if (sent.cancelled || result.error !== undefined) {
        record.cancelled = sent.cancelled;
        if (result.error !== undefined) record.error = result.error;
        end();
        return record;
      }
      const round = roundOf(sent.parts);
      current.push(round.message);
      if (round.calls.length === 0) {
        record.answer = round.text;
        end();
        return record;
      }
      record.calls += round.calls.length;
      current.push(
        message(
          Role.User,
          round.calls.map(
            (call) => new stub.LanguageModelToolResultPart(call.callId, [new stub.LanguageModelTextPart(output(call.name, call.callId, record.turn))]),
          ),
        ),
      );
    }
    record.error = `no answer within ${this.options.maxSteps ?? DEFAULT_STEPS} requests`;
    end();
    return record;
  }
}

/** A response as Copilot Chat keeps it: the text, one thinking item (text joined, last non-empty id,
 * last metadata reported), the calls; rendered as one Assistant message. */
function roundOf(parts: readonly Part[]): { message: Message; text: string; calls: stub.LanguageModelToolCallPart[] } {
  let text = '';
  let thinking: string | string[] | undefined;
  let id: string | undefined;
  let metadata: { readonly [key: string]: unknown } | undefined;
  const calls: stub.LanguageModelToolCallPart[] = [];
  for (const part of parts) {
    if (part instanceof stub.LanguageModelThinkingPart) {
      if (Array.isArray(part.value)) thinking = [...(Array.isArray(thinking) ? thinking : thinking ? [thinking] : []), ...part.value];
      else thinking = Array.isArray(thinking) ? [...thinking, part.value] : (thinking ?? '') + part.value;
      if (part.id) id = part.id;
      if (part.metadata !== undefined) metadata = part.metadata;
    } else if (part instanceof stub.LanguageModelTextPart) {
      text += part.value;
    } else if (part instanceof stub.LanguageModelToolCallPart) {
      calls.push(new stub.LanguageModelToolCallPart(part.callId, part.name, part.input));
    }
  }
  const content: Part[] = [];
  if (text) content.push(new stub.LanguageModelTextPart(text));
  if (thinking !== undefined) content.push(new stub.LanguageModelThinkingPart(thinking, id, metadata));
  content.push(...calls);
  return { message: message(Role.Assistant, content), text, calls };
}

function withoutThinking(m: Message): Message {
  const content = m.content.filter((part) => !(part instanceof stub.LanguageModelThinkingPart));
  return message(Number(m.role), content);
}
