// The spend shapes (rfcs/0006-spend.md) under the names the extension's spend modules use. Every
// shape is the generated contract's (extension/contract.ts); nothing here is written twice.
import type { ErrorKind, SpendScope } from './contract';

export type {
  BilledNotification,
  ChatParams as SpendChatParams,
  Credits as CreditsResult,
  CreditsParams,
  Settings as SpendSettings,
  UsageParams,
  UsageRecord,
  UsageResult,
} from './contract';

/** The fields a `spend_limit` error's `data` carries beside `kind` and `status` (optional in
 * ErrorData, which every error shares; records.ts checks they are there). */
export type SpendLimitData = { estimate: number | null; limit: number; spentToday: number | null; scope: SpendScope };
/** A spend-guard refusal as the user is asked about it: its data and the sidecar's message. */
export type Refusal = SpendLimitData & { message: string };

export const SPEND_LIMIT: ErrorKind = 'spend_limit';
