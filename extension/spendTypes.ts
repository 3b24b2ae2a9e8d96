// Issue 15's seam (/work/helper-briefs/spend-contract.md), written by hand until the sidecar side
// lands and `make contract` generates these shapes into extension/contract.ts; then this file keeps
// only the parsers below and imports the types from there.
import type { ChatParams, ChatResult } from './contract';

export interface UsageRecord {
  /** The response id, or a uuid where there was none. */
  id: string;
  /** ISO 8601, UTC. */
  time: string;
  model: string;
  provider: string | null;
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  cacheWriteTokens: number;
  reasoningTokens: number;
  /** USD; null when neither the gateway nor the price list gave one. */
  cost: number | null;
  /** true: the gateway's billed total_cost; false: the sidecar's price estimate. */
  billed: boolean;
  byok: boolean | null;
}

export interface CreditsParams {
  apiKey?: string | null;
}
/** USD; both null when the key cannot read credits. */
export interface CreditsResult {
  balance: number | null;
  totalUsed: number | null;
}

export interface UsageParams {
  /** YYYY-MM-DD, UTC, inclusive. */
  since?: string;
  until?: string;
  limit?: number;
}
export interface UsageResult {
  records: UsageRecord[];
  /** USD spent today (UTC), every model. */
  dayTotal: number;
}

export type SpendChatParams = ChatParams & { approvedCost?: number | null };

export interface SpendMethods {
  'gateway/credits': { params: CreditsParams; result: CreditsResult };
  'gateway/usage': { params: UsageParams; result: UsageResult };
  'gateway/chat': { params: SpendChatParams; result: ChatResult };
}

export interface BilledNotification {
  requestId: string | number;
  record: UsageRecord;
}
export interface SpendNotifications {
  'gateway/billed': BilledNotification;
}

/** The `data` of a `spend_limit` error, beside `kind` and `status`. */
export interface SpendLimitData {
  estimate: number;
  limit: number;
  scope: 'request' | 'day';
  spentToday: number;
}
export const SPEND_LIMIT = 'spend_limit';

/** The settings the sidecar reads for issue 15 (its Settings fields; the extension's names in config.ts). */
export interface SpendSettings {
  maxRequestCost?: number | null;
  maxDailyCost?: number | null;
  usageRetentionDays?: number;
  gatewaySort?: string;
  zeroDataRetention?: boolean;
  disallowPromptTraining?: boolean;
  serviceTier?: string;
  caching?: string;
  attributionUser?: string | null;
  attributionTags?: string[];
  tagWorkspace?: boolean;
}
