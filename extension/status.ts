// The status bar item: the last request's usage against the model's context window, and its cost;
// the cost the gateway billed once its lookup lands (gateway/billed), and the credits left.
import * as vscode from 'vscode';
import { COMMANDS, STATUS_ITEM_ID } from './config';
import { MAX_USD, type ModelEntry, type UsagePart } from './contract';
import { groupLabel } from './shared/dashboardData';
import { plain } from './notify';
import { dollars } from './shared/money';
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
  record: UsageRecord | undefined;
  group: string | undefined;
}

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem(STATUS_ITEM_ID, vscode.StatusBarAlignment.Right, 100);
  private sessionCost = 0;
  private shown: Shown | undefined;
  private credits: number | null = null;
  private readonly estimates = new Map<string, number>(); // requestId → the estimate in sessionCost
  private readonly early = new Map<string, UsageRecord>(); // billed before its result was shown

  constructor() {
    this.item.name = 'Vercel AI Gateway usage';
    this.item.command = COMMANDS.showLogs;
  }

  /** `group`: the tag of the provider group whose key the request went out with (undefined: the default key).
   * `served`: the entry of the model that answered, when a team routing rule rewrote `model` to it
   * (usage.servedModel): the request is priced, and its window read, as that model's. */
  show(model: ModelEntry | undefined, usage: UsagePart, requestId?: string, group?: string, served?: ModelEntry): void {
    const answered = served ?? model;
    const estimate = answered ? requestCost(answered, usage) : undefined;
    if (estimate !== undefined) {
      this.sessionCost += estimate;
      if (requestId !== undefined) remember(this.estimates, requestId, estimate);
    }
    this.shown = { requestId, model, served, usage, estimate, record: undefined, group };
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
    if (isShown) this.shown!.record = record;
    this.render(); // the session total changed either way
  }

  /** USD left; null hides the line (a key that cannot read credits). */
  setCredits(balance: number | null): void {
    this.credits = balance;
    if (this.shown) this.render();
  }

  private render(): void {
    const { model, served, usage, estimate, record, group } = this.shown!;
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
      cost === undefined ? '' : `${costLabel(record)}: ${approx}${dollars(cost, 'bill')} · this session ${dollars(this.sessionCost, 'bill')}`,
      ...billedLines(record),
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

/** What the gateway told about the request: who served it, and the prompt cache's share. */
function billedLines(record: UsageRecord | undefined): string[] {
  if (!record) return [];
  const byok = record.byok === true ? ' (your own key, BYOK)' : '';
  return [
    record.provider ? `Provider: ${record.provider}${byok}` : '',
    `Prompt cache: ${record.cachedTokens} tokens read · ${record.cacheWriteTokens} written`,
  ];
}

function remember<T>(map: Map<string, T>, key: string, value: T): void {
  map.set(key, value);
  if (map.size > REMEMBERED) map.delete(map.keys().next().value!);
}

function requestCost(model: ModelEntry, usage: UsagePart): number | undefined {
  // The tier the request's input reached, as the gateway bills it (the sidecar's spend/prices.py
  // in_force): the chosen context size keeps Copilot's input below its tier.
  const tier = model.pricing.tiers.filter((t) => t.fromInputTokens <= usage.inputTokens).at(-1);
  const { input, output, cacheRead } = tier ?? model.pricing;
  if (input === null || output === null) return undefined;
  const fresh = usage.inputTokens - usage.cachedTokens;
  const cost = (fresh * input + usage.cachedTokens * (cacheRead ?? input) + usage.outputTokens * output) / 1_000_000;
  return cost <= MAX_USD ? cost : undefined; // past it, no cost: as the sidecar's record (usage.bounded_usd)
}

function short(n: number): string {
  return n >= 1000 ? `${(n / 1000).toFixed(1)}K` : String(n);
}
