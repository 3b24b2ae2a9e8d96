// The status bar item: the last request's usage against the model's context window, and its cost;
// the cost the gateway billed once its lookup lands (gateway/billed), the credits left, and what the
// prompt cache saved on the request and today (RFC 0006, "What the cache saved").
import * as vscode from 'vscode';
import { COMMANDS, STATUS_ITEM_ID } from './config';
import type { ModelEntry, UsagePart } from './contract';
import { groupLabel, isoDay } from './shared/dashboardData';
import { plain } from './notify';
import { cacheSaved, dollars, requestCost, savedDollars } from './shared/money';
import type { UsageRecord } from './contract';

/** Requests whose estimate is remembered until their billed cost replaces it in the session total. */
const REMEMBERED = 50;

interface Shown {
  requestId: string | undefined;
  model: ModelEntry | undefined;
  /** The model that answered, when a team routing rule had another answer than `model`. */
  served: ModelEntry | undefined;
  usage: UsagePart;
  estimate: number | undefined;
  /** What the prompt cache saved on it by list prices (shared/money.ts cacheSaved); the record's once billed. */
  saved: number | undefined;
  record: UsageRecord | undefined;
  group: string | undefined;
}

/** Service tiers as the tooltip names what served a request, and what it is billed at. */
const SERVED: Record<Exclude<UsagePart['servedTier'], 'default'>, string> = {
  flex: "flex, billed at the provider's flex rate (the cost shown is the standard price, which bounds it)",
  priority: "priority, billed at the provider's priority rate (the model list gives no price for it)",
  ultrafast: "ultrafast, billed at OpenAI's ultrafast rate (the model list gives no price for it)",
};

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem(STATUS_ITEM_ID, vscode.StatusBarAlignment.Right, 100);
  private sessionCost = 0;
  private shown: Shown | undefined;
  private credits: number | null = null;
  private readonly estimates = new Map<string, number>(); // requestId → the estimate in sessionCost
  private readonly early = new Map<string, UsageRecord>(); // billed before its result was shown
  private readonly savings = new Map<string, number>(); // requestId → its saving in savedToday, until billed
  // What the prompt cache saved today (UTC) on this window's requests: [day, USD].
  private savedToday: [string, number] = ['', 0];

  constructor() {
    this.item.name = 'Vercel AI Gateway usage';
    this.item.command = COMMANDS.showLogs;
  }

  /** `group`: the tag of the provider group whose key the request went out with (undefined: the default key).
   * `served`: the entry of the model that answered, when a team routing rule rewrote `model` to it
   * (usage.servedModel): the request is priced, and its window read, as that model's. */
  show(model: ModelEntry | undefined, usage: UsagePart, requestId?: string, group?: string, served?: ModelEntry): void {
    const answered = served ?? model;
    const estimate = answered ? requestCost(answered.pricing, usage) : undefined;
    if (estimate !== undefined) {
      this.sessionCost += estimate;
      if (requestId !== undefined) remember(this.estimates, requestId, estimate);
    }
    const saved = answered ? cacheSaved(answered.pricing, usage) : undefined;
    if (saved !== undefined) {
      this.addSaved(saved);
      if (requestId !== undefined) remember(this.savings, requestId, saved);
    }
    this.shown = { requestId, model, served, usage, estimate, saved, record: undefined, group };
    const early = requestId === undefined ? undefined : this.early.get(requestId);
    if (!early) return this.render();
    this.early.delete(requestId!);
    this.billed(requestId!, early);
  }

  /** The gateway's cost of a request (or the sidecar's estimate when the lookup gave up). */
  billed(requestId: string, record: UsageRecord): void {
    const isShown = this.shown?.requestId === requestId;
    if (!isShown && !this.estimates.has(requestId)) {
      remember(this.early, requestId, record); // its result has not been shown yet
      return;
    }
    // The sidecar's cost replaces our price estimate in the session total.
    if (record.cost !== null) this.sessionCost += record.cost - (this.estimates.get(requestId) ?? 0);
    this.estimates.delete(requestId);
    // The lookup may count cache writes the stream did not: the record's saving replaces ours in
    // today's total, whether the request is still the one shown or an agent loop has moved on.
    const counted = this.savings.get(requestId);
    this.savings.delete(requestId);
    if (record.cacheSaved !== null && (isShown || counted !== undefined)) this.addSaved(record.cacheSaved - (counted ?? 0));
    if (isShown) {
      const shown = this.shown!;
      shown.record = record;
      if (record.cacheSaved !== null) shown.saved = record.cacheSaved;
    }
    this.render(); // the session total changed either way
  }

  private addSaved(amount: number): void {
    const today = isoDay(new Date());
    this.savedToday = [today, (this.savedToday[0] === today ? this.savedToday[1] : 0) + amount];
  }

  /** USD left; null hides the line (a key that cannot read credits). */
  setCredits(balance: number | null): void {
    this.credits = balance;
    if (this.shown) this.render();
  }

  private render(): void {
    const { model, served, usage, estimate, saved, record, group } = this.shown!;
    const window = (served ?? model)?.contextWindow;
    const share = window ? usage.inputTokens / window : undefined;
    const cost = record?.cost ?? estimate;
    const approx = record?.cost != null && !record.billed ? '≈ ' : '';
    const percent = share === undefined ? '' : ` · ${share > 0 && share < 0.01 ? '<1' : Math.round(share * 100)}% of context`;
    // The bar stays short: whether a cost is billed or estimated is the tooltip's to say.
    const price = cost === undefined ? '' : ` · ${dollars(cost)}`;
    // Which key paid, when it is a provider group's: several keys may be in use side by side.
    const paidBy = group === undefined ? '' : ` (${groupLabel(group)})`;
    this.item.text = `$(pulse) ${plain(model?.name ?? 'AI Gateway')}${paidBy}: ${short(usage.inputTokens)} in · ${short(usage.outputTokens)} out${percent}${price}`;
    this.item.backgroundColor =
      share !== undefined && share >= 0.9
        ? new vscode.ThemeColor('statusBarItem.errorBackground')
        : share !== undefined && share >= 0.75
          ? new vscode.ThemeColor('statusBarItem.warningBackground')
          : undefined;
    this.item.tooltip = [
      `Model: ${model?.id ?? 'unknown'}`,
      // The id is the list's (its safe characters, bounded: contract SAFE_ID_PATTERN), shown as text.
      served ? `Answered by: ${plain(served.id)} (a team routing rule)` : '',
      `Key: ${group === undefined ? 'the default key' : `${groupLabel(group)} (a provider group of Chat: Manage Language Models)`}`,
      `Input: ${usage.inputTokens} tokens (cached ${usage.cachedTokens})`,
      `Output: ${usage.outputTokens} tokens (reasoning ${usage.reasoningTokens})`,
      share === undefined ? '' : `Context window: ${(share * 100).toFixed(1)}% of ${window}`,
      usage.servedTier === 'default' ? '' : `Service tier: ${SERVED[usage.servedTier]}`,
      cost === undefined ? '' : `${costLabel(record)}: ${approx}${dollars(cost, 'bill')} · this session ${dollars(this.sessionCost, 'bill')}`,
      ...billedLines(record),
      cacheLine(usage, record, saved),
      this.savedToday[0] === isoDay(new Date()) ? `Saved by the prompt cache today: ${savedDollars(this.savedToday[1], 'bill')} (this window)` : '',
      this.credits === null ? '' : `Credits: ${dollars(this.credits, 'cents')} left on ${group === undefined ? 'the default key' : groupLabel(group)}`,
    ]
      .filter(Boolean)
      .join('\n');
    this.item.show();
  }

  dispose(): void {
    this.item.dispose();
  }
}

function costLabel(record: UsageRecord | undefined): string {
  return record?.cost != null && record.billed ? 'Billed' : 'Cost';
}

/** What the gateway told about the request: who served it. */
function billedLines(record: UsageRecord | undefined): string[] {
  if (!record) return [];
  const byok = record.byok === true ? ' (your own key, BYOK)' : '';
  return [record.provider ? `Provider: ${record.provider}${byok}` : ''];
}

/** The request's prompt cache: tokens read and written (the billed record's once it lands), and
 * what that saved by list prices. */
function cacheLine(usage: UsagePart, record: UsageRecord | undefined, saved: number | undefined): string {
  const [read, written] = record ? [record.cachedTokens, record.cacheWriteTokens] : [usage.cachedTokens, usage.cacheWriteTokens];
  const worth = saved === undefined ? '' : ` · saved ${savedDollars(saved, 'bill')}`;
  return `Prompt cache: ${read} tokens read · ${written} written${worth}`;
}

function remember<T>(map: Map<string, T>, key: string, value: T): void {
  map.set(key, value);
  if (map.size > REMEMBERED) map.delete(map.keys().next().value!);
}

function short(n: number): string {
  return n >= 1000 ? `${(n / 1000).toFixed(1)}K` : String(n);
}
