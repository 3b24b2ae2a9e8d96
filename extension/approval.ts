// How a "Send" in the spend guard's dialog carries over (rfcs/0006-spend.md, "Approval"): an agent
// loop sends a request per step, each about as costly as the last, and asking at every step would
// make the guard unusable. So an approval covers the next APPROVAL_MS of requests up to
// APPROVAL_RATIO × the estimate the user saw. It lives in memory: a new window asks again.

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

/** The approval in force; a new Send replaces it (its window starts again). */
export class Approvals {
  private current: Approval | undefined;

  constructor(private readonly clock: () => number = Date.now) {}

  approve(estimate: number): void {
    this.current = { estimate, at: this.clock() };
  }

  carriedCost(): number | undefined {
    return carriedCost(this.current, this.clock());
  }
}
