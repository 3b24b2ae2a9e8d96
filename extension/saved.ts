// The shapes of what the extension keeps in global storage, and their checks (the counts' files:
// counts/shapes.ts). A file there may hold anything (another version's format, a truncated write, a hand edit): what is read back is checked
// entry by entry, a bad entry is dropped and counted (for one log line), and a start never fails
// because of it.
import {
  MAX_MODEL_ID,
  SAFE_ID_PATTERN,
  type Capabilities,
  type EffortProperty,
  type HostPricing,
  type ModelEntry,
  type ModelMetrics,
  type PriceTier,
  type Pricing,
  type SpeedProperty,
} from './contract';

export interface Checked<T> {
  value: T;
  /** Entries (or whole files) that were not the right shape and were left out. */
  dropped: number;
}

/** models.json: the last model list the sidecar returned. Duplicated ids keep the first entry. */
export function checkModels(raw: unknown): Checked<ModelEntry[]> {
  if (raw === undefined) return { value: [], dropped: 0 };
  if (!Array.isArray(raw)) return { value: [], dropped: 1 };
  const seen = new Set<string>();
  const value = raw.map(upgraded).filter((entry): entry is ModelEntry => isModel(entry) && !seen.has(entry.id) && !!seen.add(entry.id));
  return { value, dropped: raw.length - value.length };
}

/** Entries saved by earlier versions, kept rather than dropped with a warning. One saved before the
 * budget unit (RFC 0004) has neither budget field: it was advertised in real tokens, as with a factor
 * of 1. One saved before `tokenizer` has none: '' (not known), so its counts are kept under its own
 * id until the list is fetched again, which happens at start. One saved before the effort menu
 * or the picker's warning (issue 22) has none until the next fetch brings them. */
function upgraded(entry: unknown): unknown {
  if (typeof entry !== 'object' || entry === null) return entry;
  let out = entry;
  if (!('budgetFactor' in out) && !('budgetInputTokens' in out)) {
    out = { ...out, budgetFactor: 1, budgetInputTokens: (out as { maxInputTokens?: unknown }).maxInputTokens };
  }
  if (!('tokenizer' in out)) out = { ...out, tokenizer: '' };
  if (!('configurationSchema' in out)) out = { ...out, configurationSchema: null };
  if (!('warning' in out)) out = { ...out, warning: null };
  // Saved before prices in tiers and VS Code's own price fields (issue 35): none until the next fetch.
  if (!('hostPricing' in out)) out = { ...out, hostPricing: null };
  // Saved before fast tiers were named (issue 35 §3): none until the next fetch.
  if (!('fastTierOf' in out)) out = { ...out, fastTierOf: null };
  // Saved before the models' metrics (issue 45 §2): none until the next fetch brings them.
  if (!('metrics' in out)) out = { ...out, metrics: null };
  const pricing = (out as { pricing?: unknown }).pricing;
  if (isRecord(pricing) && !('tiers' in pricing)) out = { ...out, pricing: { ...pricing, tiers: [] } };
  return out;
}

type Checks<T> = { [K in keyof T]-?: (value: unknown) => boolean };

// One check per field of the contract's ModelEntry: a field added there fails to compile here.
const CAPABILITIES: Checks<Capabilities> = { toolCalling: isBoolean, imageInput: isBoolean };
const TIER: Checks<PriceTier> = { fromInputTokens: isTokenLimit, input: isPrice, output: isPrice, cacheRead: isPrice, cacheWrite: isPrice };
const PRICING: Checks<Pricing> = {
  input: isPrice,
  output: isPrice,
  cacheRead: isPrice,
  cacheWrite: isPrice,
  tiers: (value) => Array.isArray(value) && value.length <= MAX_TIERS && value.every((tier) => isShaped(tier, TIER)),
};
const CREDITS: (value: unknown) => boolean = (value) => value === null || (typeof value === 'number' && Number.isFinite(value) && value >= 0);
const HOST_PRICING: Checks<HostPricing> = {
  pricing: (value) => isString(value) && value.length <= 500,
  inputCost: CREDITS,
  outputCost: CREDITS,
  cacheCost: CREDITS,
  cacheWriteCost: CREDITS,
  longContextInputCost: CREDITS,
  longContextOutputCost: CREDITS,
  longContextCacheCost: CREDITS,
  longContextCacheWriteCost: CREDITS,
  priceCategory: (value) => value === null || PRICE_CATEGORIES.includes(value),
};
// Shown as numbers and sorted by (curate.ts, smalltasks.ts): whole or null, never NaN; the sidecar
// bounds them (offer/metrics.py) and the summary is shown as plain text.
const isCount = (value: unknown) => value === null || (Number.isSafeInteger(value) && (value as number) >= 0);
const METRICS: Checks<ModelMetrics> = {
  provider: (value) => value === null || isSafeId(value),
  providers: (value) => Number.isSafeInteger(value) && (value as number) >= 1,
  firstTokenMs: isCount,
  firstTokenP95Ms: isCount,
  tokensPerSecond: isCount,
  uptimePercent: (value) => value === null || (typeof value === 'number' && value >= 0 && value <= 100),
  summary: (value) => isString(value) && value.length <= 500,
};
const MODEL: Checks<ModelEntry> = {
  id: isSafeId,
  name: isString,
  family: isSafeId,
  version: isSafeId,
  contextWindow: isTokenLimit,
  maxInputTokens: isTokenLimit,
  maxOutputTokens: isTokenLimit,
  capabilities: (value) => isShaped(value, CAPABILITIES),
  reasoning: isBoolean,
  pricing: (value) => isShaped(value, PRICING),
  tags: (value) => Array.isArray(value) && value.every(isString),
  ownedBy: isString,
  description: isString,
  fastTierOf: (value) => value === null || isSafeId(value),
  tooltip: isString,
  detail: isString,
  budgetFactor: (value) => typeof value === 'number' && value >= 0.5 && value <= 3,
  budgetInputTokens: isTokenLimit,
  // An encoding's name (it keys counts in memory and on disk), or '' when not known.
  tokenizer: (value) => typeof value === 'string' && /^[a-z0-9_]{0,64}$/.test(value),
  configurationSchema: (value) => value === null || isControls(value),
  hostPricing: (value) => value === null || isShaped(value, HOST_PRICING),
  warning: (value) => value === null || (isString(value) && value.length <= 500),
  metrics: (value) => value === null || isShaped(value, METRICS),
};
const EFFORTS: readonly unknown[] = ['default', 'none', 'minimal', 'low', 'medium', 'high', 'xhigh'] satisfies EffortProperty['enum'];
const PRICE_CATEGORIES: readonly unknown[] = ['low', 'medium', 'high', 'very_high'] satisfies NonNullable<HostPricing['priceCategory']>[];
const MAX_TIERS = 8; // as the sidecar's catalogue

const SPEEDS: readonly unknown[] = ['standard', 'fast', 'flex', 'priority', 'ultrafast'] satisfies SpeedProperty['enum'];

/** The model's menus: effort's, speed's and context size's, each one VS Code will render; at least one. */
function isControls(value: unknown): boolean {
  if (!isRecord(value) || !isRecord(value.properties)) return false;
  const { reasoningEffort, speed, contextSize } = value.properties;
  if (reasoningEffort == null && speed == null && contextSize == null) return false;
  return (
    (reasoningEffort == null || isMenu(reasoningEffort, 'string', 'navigation', (level) => EFFORTS.includes(level))) &&
    (speed == null || isMenu(speed, 'string', 'navigation', (value) => SPEEDS.includes(value))) &&
    (contextSize == null || isMenu(contextSize, 'number', 'tokens', isTokenLimit))
  );
}

/** A menu VS Code will render: values it takes, one label and description each, a default among them. */
function isMenu(menu: unknown, type: string, group: string, isValue: (value: unknown) => boolean): boolean {
  if (!isRecord(menu) || !Array.isArray(menu.enum) || !menu.enum.every(isValue)) return false;
  const listed = (list: unknown) => Array.isArray(list) && list.length === (menu.enum as unknown[]).length && list.every(isString);
  return (
    menu.type === type &&
    menu.group === group &&
    isString(menu.title) &&
    isString(menu.description) &&
    listed(menu.enumItemLabels) &&
    listed(menu.enumDescriptions) &&
    menu.enum.includes(menu.default)
  );
}

function isModel(entry: unknown): entry is ModelEntry {
  return isShaped(entry, MODEL);
}

function isShaped<T>(value: unknown, checks: Checks<T>): boolean {
  return isRecord(value) && Object.entries<(value: unknown) => boolean>(checks).every(([key, check]) => check(value[key]));
}

function isTokenLimit(value: unknown): boolean {
  return Number.isSafeInteger(value) && (value as number) > 0;
}

/** USD per million tokens, or null where the gateway gives none. */
function isPrice(value: unknown): boolean {
  return value === null || (typeof value === 'number' && Number.isFinite(value) && value >= 0);
}

function isString(value: unknown): value is string {
  return typeof value === 'string';
}

const SAFE_ID = new RegExp(SAFE_ID_PATTERN);

/** A model id, family or version as the sidecar's catalogue makes one (its twin: catalogue.py,
 * SAFE_ID, whose pattern contract.ts carries): at most MAX_MODEL_ID characters of those a model id
 * holds, so no markup (a link, an autolink, a line break) reaches VS Code's hover, which draws
 * `id@version` as trusted markdown, from a file that may hold anything. */
function isSafeId(value: unknown): value is string {
  return isString(value) && value.length <= MAX_MODEL_ID && SAFE_ID.test(value);
}

function isBoolean(value: unknown): boolean {
  return typeof value === 'boolean';
}

/** A JSON object (not null, not an array), as a file read back may or may not hold. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
