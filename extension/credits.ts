// The credits left on the key: read after requests (at most once a minute, so an agent loop does
// not double its calls) and on the Show Credits command. A key that cannot read them (the sidecar
// answers null) hides the line quietly.
import * as vscode from 'vscode';
import { fromRpcError, MANAGE_KEY, showError } from './errors';
import { notify } from './notify';
import { parseCredits } from './records';
import type { Rpc } from './sidecar/rpc';
import type { Credits } from './contract';
import { dollars } from './shared/money';

export const CREDITS_INTERVAL_MS = 60_000;

export class CreditsReader {
  private fetchedAt = Number.NEGATIVE_INFINITY;
  private fetching: Promise<Credits> | undefined;

  constructor(
    private readonly rpc: Rpc,
    private readonly apiKey: () => Promise<string | undefined>,
    private readonly onBalance: (balance: number | null) => void,
    private readonly log: Pick<vscode.LogOutputChannel, 'warn'>,
    private readonly clock: () => number = Date.now,
  ) {}

  /** After a request: fetched unless it was within the last minute. Failures are only logged. */
  refreshSoon(): void {
    if (this.clock() - this.fetchedAt < CREDITS_INTERVAL_MS) return;
    this.fetch().catch((error: unknown) => this.log.warn(`Could not read the credits: ${fromRpcError(error).message}`));
  }

  /** Requests now go out with another key (another provider group): its balance is read at the next refresh. */
  keyChanged(): void {
    this.fetchedAt = Number.NEGATIVE_INFINITY;
  }

  /** Fetches now (one fetch at a time); the balance goes to the status bar too. */
  fetch(): Promise<Credits> {
    this.fetchedAt = this.clock(); // a failure also waits its minute
    this.fetching ??= this.read().finally(() => (this.fetching = undefined));
    return this.fetching;
  }

  /** The Show Credits command. */
  async show(): Promise<void> {
    if (!(await this.apiKey())) return showError('Set an API key to see its credits.', MANAGE_KEY);
    try {
      const { balance, totalUsed } = await this.fetch();
      const used = totalUsed === null ? '' : ` (${dollars(totalUsed, 'cents')} used so far)`;
      const text =
        balance === null
          ? 'This API key cannot read the team’s credit balance (the gateway refused it); requests still work.'
          : `Vercel AI Gateway credits: ${dollars(balance, 'cents')} left${used}.`;
      void notify('info', text);
    } catch (error) {
      showError(`Could not read the credits: ${fromRpcError(error).message}`);
    }
  }

  private async read(): Promise<Credits> {
    const result = parseCredits(await this.rpc.request('gateway/credits', { apiKey: await this.apiKey() }));
    this.onBalance(result.balance);
    return result;
  }
}
