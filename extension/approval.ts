// How a "Send" in the spend guard's dialog carries over (rfcs/0006-spend.md, "Approval"): an agent
// loop sends a request per step, each about as costly as the last, and asking at every step would
// make the guard unusable. So an approval covers the next APPROVAL_MS of requests up to
// APPROVAL_RATIO × the estimate the user saw. It lives in memory: a new window asks again.
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

/** The approvals in force. A Send on the request limit carries over (above); one on a model
 * without a price carries over for that model for APPROVAL_MS; one on the day limit covers that
 * request only, since the day limit bounds the total (rfcs/0006-spend.md, "Approval"). */
export class Approvals {
  private current: Approval | undefined;
  private readonly unpriced = new Map<string, number>(); // model → Date.now() when approved

  constructor(private readonly clock: () => number = Date.now) {}

  /** What the chat carries before anything was asked. */
  carried(model: string): Pick<ChatParams, 'approvedCost' | 'approvedUnpriced'> {
    const at = this.unpriced.get(model);
    const now = this.clock();
    const unpriced = at !== undefined && now >= at && now - at <= APPROVAL_MS;
    return { approvedCost: carriedCost(this.current, now), approvedUnpriced: unpriced || undefined };
  }

  /** The user said Send to `refusal`: what the re-sent chat adds. A new request approval replaces
   * the old one (its window starts again). */
  approve(refusal: Refusal, model: string): Pick<ChatParams, 'approvedCost' | 'approvedDay' | 'approvedUnpriced'> {
    if (refusal.scope === 'unpriced') {
      this.unpriced.set(model, this.clock());
      return { approvedUnpriced: true };
    }
    if (refusal.scope === 'day') return { approvedDay: true };
    const estimate = refusal.estimate ?? 0; // a request refusal always carries its estimate (records.ts)
    this.current = { estimate, at: this.clock() };
    return { approvedCost: estimate };
  }
}
