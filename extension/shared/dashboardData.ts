// The usage dashboard's data, as pure functions shared by the extension (the range it asks the
// sidecar for, the CSV it saves) and the webview (what the charts draw). No vscode, no DOM.
import type { UsageParams, UsageRecord } from '../contract';

export type Range = { kind: 'last'; days: number } | { kind: 'custom'; from: string; until: string };

export const LAST_DAYS = [7, 30, 90] as const;
/** Records asked per range: the seam's maximum, so a busy quarter is not cut short. */
export const USAGE_LIMIT = 50_000;
/** Days a chart spans at most (the longest retention the settings allow). */
export const MAX_SPAN_DAYS = 3650;
/** Models drawn on their own in the spend chart; the rest are summed as "other models". */
export const MAX_MODELS = 7;
export const OTHER_MODELS = 'other models';

const DAY_MS = 86_400_000;

/** YYYY-MM-DD in UTC. */
export function isoDay(date: Date): string {
  return date.toISOString().slice(0, 10);
}

/** A real calendar day written YYYY-MM-DD (2025-02-30 is not one). */
export function isDay(value: unknown): value is string {
  return typeof value === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(value) && !Number.isNaN(Date.parse(value)) && isoDay(new Date(value)) === value;
}

/** A range from the webview, checked (its messages are input like any other). */
export function parseRange(value: unknown): Range | undefined {
  const r = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  if (r.kind === 'last' && LAST_DAYS.includes(r.days as (typeof LAST_DAYS)[number])) return { kind: 'last', days: r.days as number };
  if (r.kind === 'custom' && isDay(r.from) && isDay(r.until)) return { kind: 'custom', from: r.from, until: r.until };
  return undefined;
}

/** The days a range covers, first and last inclusive (UTC): "last 7 days" is today and the six
 * before it. A custom range given backwards is read forwards; a span is capped at MAX_SPAN_DAYS. */
export function rangeDays(range: Range, today: Date): { since: string; until: string } {
  if (range.kind === 'last') return { since: isoDay(new Date(today.getTime() - (range.days - 1) * DAY_MS)), until: isoDay(today) };
  const [since, until] = range.from <= range.until ? [range.from, range.until] : [range.until, range.from];
  const earliest = isoDay(new Date(Date.parse(until) - (MAX_SPAN_DAYS - 1) * DAY_MS));
  return { since: since < earliest ? earliest : since, until };
}

/** The `gateway/usage` params of a range. */
export function rangeParams(range: Range, today: Date): UsageParams {
  return { ...rangeDays(range, today), limit: USAGE_LIMIT };
}

/** Every day from since to until, inclusive. */
export function daysBetween(since: string, until: string): string[] {
  const days: string[] = [];
  for (let t = Date.parse(since); t <= Date.parse(until) && days.length < MAX_SPAN_DAYS; t += DAY_MS) days.push(isoDay(new Date(t)));
  return days;
}

/** How the status bar and the dashboard name a provider group: VS Code does not tell a provider the
 * name the user gave it, so the first digits of its tag (a hash of its key) stand for it. */
export function groupLabel(tag: string | null | undefined): string {
  return tag ? `key ${tag.slice(0, 6)}` : 'default key';
}

const CSV_COLUMNS = [
  'time',
  'model',
  'requested_model',
  'provider',
  'input_tokens',
  'output_tokens',
  'cached_tokens',
  'cache_write_tokens',
  'reasoning_tokens',
  'cost_usd',
  'cost_kind',
  'byok',
  'key_group',
  'id',
  'cache_saved_usd',
] as const;

/** RFC 4180: CRLF lines; a field with a comma, quote or line break is quoted, quotes doubled. A
 * text field a spreadsheet would run as a formula (=, +, -, @ first) gets a leading apostrophe. */
export function csvField(value: string | number | boolean | null): string {
  if (value === null) return '';
  let text = String(value);
  if (typeof value === 'string' && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export function toCsv(records: readonly UsageRecord[]): string {
  const rows = records.map((r) =>
    [
      r.time,
      r.model,
      r.requestedModel,
      r.provider,
      r.inputTokens,
      r.outputTokens,
      r.cachedTokens,
      r.cacheWriteTokens,
      r.reasoningTokens,
      r.cost,
      r.cost === null ? null : r.billed ? 'billed' : 'estimated',
      r.byok,
      r.group,
      r.id,
      r.cacheSaved,
    ]
      .map(csvField)
      .join(','),
  );
  return [CSV_COLUMNS.join(','), ...rows].join('\r\n') + '\r\n';
}

export interface DailySpend {
  days: string[];
  /** One series per model, most expensive first; the tail summed as OTHER_MODELS. */
  series: { model: string; values: number[] }[];
}

/** USD per day (UTC) stacked by model, every day of the range drawn (a day without spend is 0). */
export function spendByDay(records: readonly UsageRecord[], since: string, until: string): DailySpend {
  const days = daysBetween(since, until);
  const index = new Map(days.map((d, i) => [d, i]));
  const totals = new Map<string, number>();
  for (const r of records) totals.set(r.model, (totals.get(r.model) ?? 0) + (r.cost ?? 0));
  const ranked = [...totals.entries()].sort((a, b) => b[1] - a[1]).map(([model]) => model);
  const shown = new Set(ranked.slice(0, ranked.length > MAX_MODELS ? MAX_MODELS - 1 : MAX_MODELS));
  const series = new Map<string, number[]>();
  for (const r of records) {
    const i = index.get(isoDay(new Date(r.time)));
    if (i === undefined || r.cost === null) continue;
    const name = shown.has(r.model) ? r.model : OTHER_MODELS;
    if (!series.has(name)) series.set(name, new Array<number>(days.length).fill(0));
    series.get(name)![i] += r.cost;
  }
  const order = [...ranked.filter((m) => shown.has(m)), OTHER_MODELS];
  return { days, series: order.filter((m) => series.has(m)).map((model) => ({ model, values: series.get(model)! })) };
}

/** The costliest requests, dearest first (records without a cost are not ranked). */
export function mostExpensive(records: readonly UsageRecord[], count = 10): UsageRecord[] {
  return records
    .filter((r) => r.cost !== null)
    .sort((a, b) => b.cost! - a.cost!)
    .slice(0, count);
}

/** Input tokens read from the prompt cache, written to it, and the rest; and the USD the cache saved
 * by list prices (RFC 0006, "What the cache saved"; a record that does not know counts nothing). */
export function cacheShare(records: readonly UsageRecord[]): { cached: number; written: number; fresh: number; saved: number } {
  let cached = 0;
  let written = 0;
  let input = 0;
  let saved = 0;
  for (const r of records) {
    cached += r.cachedTokens;
    written += r.cacheWriteTokens;
    input += r.inputTokens;
    saved += r.cacheSaved ?? 0;
  }
  return { cached, written, fresh: Math.max(0, input - cached - written), saved };
}

/** USD the prompt cache saved per day (UTC), every day of the range drawn (a day without a saving
 * is 0; a day whose writes cost more than its reads saved is negative). */
export function savedByDay(records: readonly UsageRecord[], since: string, until: string): { days: string[]; values: number[] } {
  const days = daysBetween(since, until);
  const index = new Map(days.map((d, i) => [d, i]));
  const values = new Array<number>(days.length).fill(0);
  for (const r of records) {
    const i = index.get(isoDay(new Date(r.time)));
    if (i !== undefined && r.cacheSaved !== null) values[i] += r.cacheSaved;
  }
  return { days, values };
}

/** The last `count` requests in time order, for the tokens-per-request chart. */
export function latestRequests(records: readonly UsageRecord[], count = 200): UsageRecord[] {
  return [...records].sort((a, b) => Date.parse(a.time) - Date.parse(b.time)).slice(-count);
}

/** Extension → webview. */
export type ToWebview =
  | {
      type: 'data';
      since: string;
      until: string;
      records: UsageRecord[];
      /** Today's spend (UTC) by every window; null when the history cannot be read. */
      dayTotal: number | null;
      /** Why the usage history cannot be used now (the sidecar's words), shown above the charts. */
      problem: string | null;
      truncated: boolean;
    }
  | { type: 'error'; message: string };
/** Webview → extension: `range` asks for a range's records (the first one when the page loads). */
export type FromWebview = { type: 'range'; range: Range } | { type: 'export' };
