// The status bar item: the last request's usage against the model's context window, and its cost.
import * as vscode from 'vscode';
import { COMMANDS, STATUS_ITEM_ID } from './config';
import type { ModelEntry, UsagePart } from './contract';

export class UsageStatus implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem(STATUS_ITEM_ID, vscode.StatusBarAlignment.Right, 100);
  private sessionCost = 0;

  constructor() {
    this.item.name = 'Vercel AI Gateway usage';
    this.item.command = COMMANDS.showLogs;
  }

  show(model: ModelEntry | undefined, usage: UsagePart): void {
    const share = model ? usage.inputTokens / model.contextWindow : undefined;
    const cost = model ? requestCost(model, usage) : undefined;
    if (cost !== undefined) this.sessionCost += cost;
    const percent = share === undefined ? '' : ` · ${share > 0 && share < 0.01 ? '<1' : Math.round(share * 100)}% of context`;
    const price = cost === undefined ? '' : ` · ${dollars(cost)}`;
    this.item.text = `$(pulse) ${model?.name ?? 'AI Gateway'}: ${short(usage.inputTokens)} in · ${short(usage.outputTokens)} out${percent}${price}`;
    this.item.backgroundColor =
      share !== undefined && share >= 0.9
        ? new vscode.ThemeColor('statusBarItem.errorBackground')
        : share !== undefined && share >= 0.75
          ? new vscode.ThemeColor('statusBarItem.warningBackground')
          : undefined;
    this.item.tooltip = [
      `Model: ${model?.id ?? 'unknown'}`,
      `Input: ${usage.inputTokens} tokens (cached ${usage.cachedTokens})`,
      `Output: ${usage.outputTokens} tokens (reasoning ${usage.reasoningTokens})`,
      share === undefined ? '' : `Context window: ${(share * 100).toFixed(1)}% of ${model?.contextWindow}`,
      cost === undefined ? '' : `Cost: ${dollars(cost)} · this session ${dollars(this.sessionCost)}`,
    ]
      .filter(Boolean)
      .join('\n');
    this.item.show();
  }

  dispose(): void {
    this.item.dispose();
  }
}

function requestCost(model: ModelEntry, usage: UsagePart): number | undefined {
  const { input, output, cacheRead } = model.pricing;
  if (input === null || output === null) return undefined;
  const fresh = usage.inputTokens - usage.cachedTokens;
  return (fresh * input + usage.cachedTokens * (cacheRead ?? input) + usage.outputTokens * output) / 1_000_000;
}

/** Cents where they matter, four places below a cent (most single requests). */
function dollars(amount: number): string {
  return `$${amount >= 0.01 ? amount.toFixed(2) : amount.toFixed(4)}`;
}

function short(n: number): string {
  return n >= 1000 ? `${(n / 1000).toFixed(1)}K` : String(n);
}
