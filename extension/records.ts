// The sidecar's spend data, checked as it arrives: a record or an error's data that is not the
// seam's shape is dropped (the caller says so once) rather than drawn or summed. No vscode import:
// the dashboard's code shares extension/shared/dashboardData.ts, which builds on these.
import { GROUP_PATTERN, MAX_GROUP, MAX_ID, MAX_MODEL_ID, MAX_PROVIDER, MAX_TIME, MAX_TOKEN_COUNT, MAX_USD } from './contract';
import type { Credits, ErrorKind, SpendScope, UsageRecord } from './contract';

/** The fields a `spend_limit` error's `data` carries beside `kind` and `status` (optional in
 * ErrorData, which every error shares; `refusalOf` checks they are there). */
export type SpendLimitData = { estimate: number | null; limit: number; spentToday: number | null; scope: SpendScope };
/** A spend-guard refusal as the user is asked about it: its data and the sidecar's message. */
export type Refusal = SpendLimitData & { message: string };

const SPEND_LIMIT: ErrorKind = 'spend_limit';

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
// A record's bounds are the sidecar's (server/gateway_lm/stream/usage.py, through the contract): a record the
// history keeps is one the status bar, the dashboard and the CSV take, and no other.
const isCount = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 && value <= MAX_TOKEN_COUNT;
const isAmount = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value) && value >= 0;
const isCost = (value: unknown): value is number => isAmount(value) && value <= MAX_USD;
const isSaving = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value) && Math.abs(value) <= MAX_USD;
/** A bounded string: a record is drawn and exported, so a megabyte of model name is not one. */
const isText = (value: unknown, max: number): value is string => typeof value === 'string' && value.length > 0 && value.length <= max;
/** A provider group's tag (messages.GroupId): it is drawn in the dashboard and the CSV. */
const GROUP = new RegExp(GROUP_PATTERN);
const isGroup = (value: unknown): value is string => isText(value, MAX_GROUP) && GROUP.test(value);

/** One UsageRecord, or undefined when any field is not what the seam says. */
export function parseUsageRecord(value: unknown): UsageRecord | undefined {
  if (!isObject(value)) return undefined;
  const r = value;
  const counts = [r.inputTokens, r.outputTokens, r.cachedTokens, r.cacheWriteTokens, r.reasoningTokens];
  if (!isText(r.id, MAX_ID) || !isText(r.time, MAX_TIME) || Number.isNaN(Date.parse(r.time)) || !isText(r.model, MAX_MODEL_ID)) return undefined;
  if (!(r.provider === null || isText(r.provider, MAX_PROVIDER)) || !counts.every(isCount)) return undefined;
  if (!(r.cost === null || isCost(r.cost)) || typeof r.billed !== 'boolean' || !(r.byok === null || typeof r.byok === 'boolean')) return undefined;
  // A record from a sidecar before provider groups has none: the default key's.
  if (!(r.group === undefined || r.group === null || isGroup(r.group))) return undefined;
  // A record from a sidecar before routing rules has no requested model: the model answered as asked.
  if (!(r.requestedModel === undefined || r.requestedModel === null || isText(r.requestedModel, MAX_MODEL_ID))) return undefined;
  // What the cache saved may be negative (writes that have not paid off); one from before it was kept: unknown.
  if (!(r.cacheSaved === undefined || r.cacheSaved === null || isSaving(r.cacheSaved))) return undefined;
  return {
    id: r.id,
    time: r.time,
    model: r.model,
    provider: r.provider,
    inputTokens: r.inputTokens as number,
    outputTokens: r.outputTokens as number,
    cachedTokens: r.cachedTokens as number,
    cacheWriteTokens: r.cacheWriteTokens as number,
    reasoningTokens: r.reasoningTokens as number,
    cost: r.cost,
    billed: r.billed,
    byok: r.byok,
    group: isGroup(r.group) ? r.group : null,
    requestedModel: isText(r.requestedModel, MAX_MODEL_ID) ? r.requestedModel : null,
    cacheSaved: isSaving(r.cacheSaved) ? r.cacheSaved : null,
  };
}

/** The records that parse, and how many did not. */
export function parseUsageRecords(value: unknown): { records: UsageRecord[]; dropped: number } {
  const list = Array.isArray(value) ? value : [];
  const records = list.map(parseUsageRecord).filter((r): r is UsageRecord => r !== undefined);
  return { records, dropped: list.length - records.length };
}

/** A balance to show, or null (hidden) for anything but a finite amount. */
export function parseCredits(value: unknown): Credits {
  const r = isObject(value) ? value : {};
  const amount = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
  return { balance: amount(r.balance), totalUsed: amount(r.totalUsed) };
}

/** The spend guard's refusal, from a JSON-RPC error; undefined for any other error. */
export function spendLimitOf(error: unknown): Refusal | undefined {
  const e = isObject(error) ? error : undefined;
  const data = isObject(e?.data) ? e.data : undefined;
  if (data?.kind !== SPEND_LIMIT) return undefined;
  const { estimate, limit, scope, spentToday } = data;
  if (scope !== 'request' && scope !== 'day' && scope !== 'unpriced') return undefined;
  // Unknown (null) only where the sidecar cannot know it: no price, or today's spend unreadable.
  if (!(isAmount(estimate) || (estimate === null && scope === 'unpriced')) || !isAmount(limit)) return undefined;
  if (!(isAmount(spentToday) || (spentToday === null && scope !== 'request'))) return undefined;
  if (!isText(e?.message, 500)) return undefined; // the sidecar's sentence is what the user is asked
  return { estimate, limit, scope, spentToday, message: e.message };
}
