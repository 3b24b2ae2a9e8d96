// VS Code messages out to the sidecar, streamed parts back in, in the shapes of the contract
// (extension/contract.ts, rfcs/0003-rpc-contract.md). Serialisation is the only place that knows the
// shape of VS Code's parts.
import * as vscode from 'vscode';
import type { ChatResult, MessageIn, ReasoningItemPart, ReasoningStateIn, ReasoningStatePart, StreamPart, ToolResultIn, UsagePart } from './contract';

/** A part of a message, and of a tool result, as the sidecar reads them. */
type WirePart = NonNullable<MessageIn['content']>[number];
type ResultPart = NonNullable<ToolResultIn['content']>[number];

export type ThinkingMode = 'auto' | 'text' | 'hidden';

type Metadata = { readonly [key: string]: unknown };
type ThinkingCtor = new (value: string | string[], id?: string, metadata?: Metadata) => vscode.LanguageModelResponsePart;

/** Where a response's encrypted reasoning rides in a thinking part's metadata: Copilot Chat keeps a
 * thinking part's id and metadata and hands them back with the history of the next request, and it
 * drops data parts of a MIME type it does not know (rfcs/0002, "The reasoning round trip"). */
export const REASONING_METADATA_KEY = 'vercelAiGateway.reasoning';
/** Where the Copilot harness's bridge reads (and hands back) one reasoning item's encrypted content:
 * a string under `encrypted_content`, or `encrypted` (rfcs/0002, "The reasoning round trip"). */
const ITEM_KEYS = ['encrypted_content', 'encrypted'] as const;
/** A thinking part with this metadata closes a thinking block: the bridge skips it as content. */
const DONE_KEY = 'vscode_reasoning_done';

/** The proposed LanguageModelThinkingPart, when this VS Code has it at runtime. */
function thinkingClass(): ThinkingCtor | undefined {
  return (vscode as unknown as { LanguageModelThinkingPart?: ThinkingCtor }).LanguageModelThinkingPart;
}

export function serializeMessage(message: vscode.LanguageModelChatRequestMessage, withData = true): MessageIn {
  return {
    role: Number(message.role),
    name: message.name ?? null,
    content: serializeParts(message.content, withData),
  };
}

/** The text of a message that is one plain text part and has no name (most messages Copilot counts):
 * a memo key that costs nothing to build. */
export function soleText(message: vscode.LanguageModelChatRequestMessage): string | undefined {
  const parts = message.content;
  if (parts.length !== 1 || message.name) return undefined;
  const part = parts[0];
  return part instanceof vscode.LanguageModelTextPart ? part.value : undefined;
}

function serializeParts(parts: readonly unknown[], withData = true): WirePart[] {
  const out: WirePart[] = [];
  for (const part of parts) {
    const wire = serializePart(part, withData);
    if (wire) out.push(wire);
  }
  return out;
}

function serializePart(part: unknown, withData: boolean): WirePart | undefined {
  // Thinking first: its `value` would otherwise read as text.
  const Thinking = thinkingClass();
  if (Thinking && part instanceof Thinking) {
    const thinking = part as unknown as { value: string | string[]; id?: string; metadata?: Metadata };
    const wire: WirePart = { type: 'thinking', value: thinking.value, id: thinking.id ?? null };
    if (!withData) return wire; // counting tokens needs none of the reasoning
    // The sidecar validates both (untrusted, like all history).
    const state = thinking.metadata?.[REASONING_METADATA_KEY];
    const tagged = ITEM_KEYS.map((key) => thinking.metadata?.[key]).find((value) => typeof value === 'string');
    return {
      ...wire,
      ...(typeof state === 'object' && state !== null ? { state: state as ReasoningStateIn } : {}),
      ...(typeof tagged === 'string' ? { tagged } : {}),
    };
  }
  return serializeByShape(part, withData);
}

// Parts are recognised by shape rather than by class: the stable classes, and equally those we do
// not import (prompt-tsx parts, …Part2 subclasses from another copy of the API), so a newer
// Copilot never loses a tool result.
function serializeByShape(part: unknown, withData: boolean): WirePart | undefined {
  if (typeof part !== 'object' || part === null) return undefined;
  const p = part as Record<string, unknown>;
  if (typeof p.callId === 'string' && Array.isArray(p.content)) {
    return { type: 'toolResult', callId: p.callId, content: serializeParts(p.content, withData).filter(isResultPart) };
  }
  if (typeof p.callId === 'string' && typeof p.name === 'string') {
    return { type: 'toolCall', callId: p.callId, name: p.name, input: p.input ?? {} };
  }
  if (typeof p.mimeType === 'string' && p.data instanceof Uint8Array) {
    // Token counts only need to know an image is there, not its bytes.
    return { type: 'data', mimeType: p.mimeType, data: withData ? Buffer.from(p.data).toString('base64') : '' };
  }
  if (typeof p.value === 'string') return { type: 'text', value: p.value };
  if (p.value !== undefined && typeof p.value === 'object') return { type: 'text', value: JSON.stringify(p.value) };
  return undefined;
}

/** A tool result holds no tool result (the sidecar would drop it). */
function isResultPart(part: WirePart): part is ResultPart {
  return part.type !== 'toolResult';
}

/** A streamed part as VS Code's response part; usage and finish are handled by the caller. */
export function toResponsePart(part: StreamPart, thinking: ThinkingMode): vscode.LanguageModelResponsePart | undefined {
  switch (part.type) {
    case 'text':
      return new vscode.LanguageModelTextPart(part.value);
    case 'toolCall':
      return new vscode.LanguageModelToolCallPart(part.callId, part.name, part.input);
    case 'thinking': {
      if (thinking === 'hidden') return undefined;
      const Thinking = thinkingClass();
      if (Thinking) return new Thinking(part.value, part.id ?? undefined);
      return thinking === 'text' ? new vscode.LanguageModelTextPart(part.value) : undefined;
    }
    case 'reasoningItem':
      return reasoningItemPart(part);
    case 'reasoningState':
      return reasoningPart(part);
    default:
      return undefined;
  }
}

/** One reasoning item, as soon as it is done, as an empty thinking part with its id and its tagged
 * encrypted content where the Copilot harness's bridge reads it (rfcs/0002, "The reasoning round
 * trip"): the bridge keeps one Responses item per id, in the order reported. Whatever the thinking
 * setting says, it is never text: without the thinking class there is no round trip. */
function reasoningItemPart(part: ReasoningItemPart): vscode.LanguageModelResponsePart | undefined {
  const Thinking = thinkingClass();
  return Thinking ? new Thinking('', part.id, { encrypted_content: part.tagged }) : undefined;
}

/** A response's encrypted reasoning as an empty thinking part that carries it in its metadata, under
 * the id of the last reasoning item (the thinking block it belongs to), reported last: Copilot Chat's
 * editor path keeps a response's last metadata only. It closes the thinking block, so the harness's
 * bridge, which has each item already, skips it. */
function reasoningPart(part: ReasoningStatePart): vscode.LanguageModelResponsePart | undefined {
  const Thinking = thinkingClass();
  if (!Thinking || part.items.length === 0) return undefined;
  const state: ReasoningStateIn = { model: part.model, items: part.items };
  return new Thinking('', part.items[part.items.length - 1].id, { [REASONING_METADATA_KEY]: state, [DONE_KEY]: true });
}

/** The usage data part newer Copilot reads for its context-window indicator and its background
 * compaction, in the unit of the window it was given: the gateway's (real) tokens divided by the
 * factor that window was computed with (rfcs/0004-token-accounting.md, "One budget unit"), the
 * prompt's as `promptScale` says (promptScale below). */
export function usageDataPart(usage: UsagePart, factor = 1, promptScale?: number): vscode.LanguageModelDataPart {
  const scale = positive(factor) ? 1 / factor : 1;
  const inScale = positive(promptScale) ? promptScale : scale;
  const prompt = Math.round(usage.inputTokens * inScale);
  const completion = Math.round(usage.outputTokens * scale);
  const payload = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: Math.min(prompt, Math.round(usage.cachedTokens * inScale)) },
    // Read by the Copilot harness's bridge (rfcs/0004, "One budget unit": scaled like the rest).
    completion_tokens_details: { reasoning_tokens: Math.min(completion, Math.round(usage.reasoningTokens * scale)) },
  };
  return new vscode.LanguageModelDataPart(Buffer.from(JSON.stringify(payload)), 'usage');
}

/** Prompt tokens per real input token in the usage part: Copilot compacts a turn when the last
 * usage's prompt tokens pass a share of the window it budgets the turn with, so they say which share
 * of the real input limit the request took, in the unit of the window its next request is budgeted
 * with (rfcs/0004, "The rest of the turn"). An answer that calls tools goes on in the turn, budgeted
 * with `window` (what VS Code passed: the turn's, held for it), even when the request was fitted to a
 * lower limit learned in the turn; any other answer ends the turn, and the next one is budgeted with
 * the window listed from then on, `inputLimit / budgetFactor`. Undefined: the served entry's factor. */
export function promptScale(result: Pick<ChatResult, 'finishReason' | 'inputLimit' | 'budgetFactor'>, window: number | undefined): number | undefined {
  const { finishReason, inputLimit, budgetFactor } = result;
  if (finishReason === 'toolCalls' && positive(inputLimit) && positive(window)) return window / inputLimit;
  return positive(budgetFactor) ? 1 / budgetFactor : undefined;
}

function positive(value: number | null | undefined): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0;
}
