// How a "Send" in the spend guard's dialog carries over (rfcs/0006-spend.md, "Approval"): an agent
// loop sends a request per step, each about as costly as the last, and asking at every step would
// make the guard unusable. So an approval covers the next APPROVAL_MS of requests up to
// APPROVAL_RATIO × the estimate the user saw. It lives in memory: a new window asks again. Each
// approval is the consent to spend one key's money, so it covers that key's requests only: a Send
// on the team's key lets nothing through on the personal one (rfcs/0006-spend.md, "Approval").
import type { ChatParams } from './contract';
import type { Refusal } from './records';

export const APPROVAL_MS = 10 * 60_000;
export const APPROVAL_RATIO = 2;

export interface Approval {
  /** The estimate (USD) the user approved. */
  estimate: number;
  /** Date.now() when they did. */
  at: number;
}

/** The approvedCost to send with a request at `now` (the sidecar lets a request through when its
 * estimate is at most this), or undefined once the approval has lapsed. */
export function carriedCost(approval: Approval | undefined, now: number): number | undefined {
  if (!approval || now < approval.at || now - approval.at > APPROVAL_MS) return undefined;
  return approval.estimate * APPROVAL_RATIO;
}

/** Whose money a request spends: its provider group's tag (`ChatParams.group`), or null for the
 * default key (the environment's, or one stored before groups). */
export type KeyGroup = string | null;

/** The approvals in force, per key group. A Send on the request limit carries over (above); one on
 * a model without a price carries over for that model for APPROVAL_MS; one on the day limit covers
 * that request only, since the day limit bounds the total (rfcs/0006-spend.md, "Approval"). */
export class Approvals {
  private readonly current = new Map<KeyGroup, Approval>();
  private readonly unpriced = new Map<KeyGroup, Map<string, number>>(); // model → Date.now() when approved

  constructor(private readonly clock: () => number = Date.now) {}

  /** What the chat carries before anything was asked. */
  carried(model: string, group: KeyGroup): Pick<ChatParams, 'approvedCost' | 'approvedUnpriced'> {
    const at = this.unpriced.get(group)?.get(model);
    const now = this.clock();
    const unpriced = at !== undefined && now >= at && now - at <= APPROVAL_MS;
    return { approvedCost: carriedCost(this.current.get(group), now), approvedUnpriced: unpriced || undefined };
  }

  /** The user said Send to `refusal`: what the re-sent chat adds. A new request approval replaces
   * the group's old one (its window starts again). */
  approve(refusal: Refusal, model: string, group: KeyGroup): Pick<ChatParams, 'approvedCost' | 'approvedDay' | 'approvedUnpriced'> {
    const now = this.clock();
    if (refusal.scope === 'unpriced') {
      const models = this.unpriced.get(group) ?? new Map<string, number>();
      this.unpriced.set(group, models.set(model, now));
      return { approvedUnpriced: true };
    }
    if (refusal.scope === 'day') return { approvedDay: true };
    const estimate = refusal.estimate ?? 0; // a request refusal always carries its estimate (records.ts)
    this.current.set(group, { estimate, at: now });
    return { approvedCost: estimate };
  }
}
