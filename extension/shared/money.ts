// Dollar amounts as the extension and the dashboard's page write them: the one formatter of the
// TypeScript side (the sidecar's is server/gateway_lm/money.py), and what a request cost and what the
// prompt cache saved on it by list prices, by the rules of the sidecar's spend/prices.py. In
// extension/shared/ because the page uses it too.
import { MAX_USD, UNPRICED_TIERS, type Pricing, type UsagePart } from '../contract';

/** How exact an amount is shown:
 * - `cents`: a balance or a day's total, always to the cent;
 * - `request`: one request's cost, to the cent from a cent up, else four places (most requests);
 * - `bill`: a billed amount, exact to a hundredth of a cent, so four places below a dollar. */
export type Precision = 'cents' | 'request' | 'bill';

export function dollars(amount: number, precision: Precision = 'request'): string {
  if (amount === 0) return '$0.00'; // -0 too, which toFixed would keep for a bill's four places
  const cents = precision === 'cents' || amount >= (precision === 'bill' ? 1 : 0.01);
  return `$${amount.toFixed(cents ? 2 : 4)}`;
}

/** Below it a price per million tokens is shown as less than it: the catalogue rounds prices to it. */
const LEAST_PER_MILLION = 0.000001;

/** A price per million tokens as a model list shows it, by the rule the sidecar's `per_million`
 * (spend/prices.py) follows: two places from $0.10 up ($3.00, $0.50), else two significant digits
 * ($0.075, $0.0013); a free model (and a price of -0, which a catalogue can list) "$0.00". */
export function perMillion(price: number): string {
  if (price === 0) return '$0.00';
  if (price < LEAST_PER_MILLION) return `<$${LEAST_PER_MILLION.toFixed(6)}`;
  return `$${price >= 0.1 ? price.toFixed(2) : String(Number(price.toPrecision(2)))}`;
}

type Prices = { input: number; output: number; cacheRead: number; cacheWrite: number };

/** The list prices a finished request is priced at (spend/prices.py `_list_prices`): the context tier
 * its input reached, each cache price the input price where the model has none; undefined without an
 * input or output price, or for a tier the list gives no price. */
function listPrices(pricing: Pricing, usage: UsagePart): Prices | undefined {
  // Tiers the model list gives no price for (contract UNPRICED_TIERS, the sidecar's): a request they
  // served has no cost by list prices until the gateway's billed cost arrives.
  if ((UNPRICED_TIERS as readonly string[]).includes(usage.servedTier)) return undefined;
  const tier = pricing.tiers.filter((t) => t.fromInputTokens <= usage.inputTokens).at(-1);
  const { input, output, cacheRead, cacheWrite } = tier ?? pricing;
  if (input === null || output === null) return undefined;
  return { input, output, cacheRead: cacheRead ?? input, cacheWrite: cacheWrite ?? input };
}

/** Input read from the cache, written to it, and the rest (cached and written ⊆ input). */
function inputSplit(usage: UsagePart): { cached: number; written: number; fresh: number } {
  const cached = Math.min(usage.cachedTokens, usage.inputTokens);
  const written = Math.min(usage.cacheWriteTokens, usage.inputTokens - cached);
  return { cached, written, fresh: usage.inputTokens - cached - written };
}

/** USD a request cost by list prices (spend/prices.py `usage_cost`): cache reads and writes at their
 * own prices; undefined without a price, or past MAX_USD (as the sidecar's record). */
export function requestCost(pricing: Pricing, usage: UsagePart): number | undefined {
  const prices = listPrices(pricing, usage);
  if (!prices) return undefined;
  const { cached, written, fresh } = inputSplit(usage);
  const input = fresh * prices.input + cached * prices.cacheRead + written * prices.cacheWrite;
  const cost = (input + usage.outputTokens * prices.output) / 1_000_000;
  return cost <= MAX_USD ? cost : undefined;
}

/** USD the prompt cache saved on a request (spend/prices.py `cache_saved`; RFC 0006, "What the cache
 * saved"): its reads at the input price less at the read price, less its writes' premium over the
 * input price. Negative when the writes cost more than the reads saved. */
export function cacheSaved(pricing: Pricing, usage: UsagePart): number | undefined {
  const prices = listPrices(pricing, usage);
  if (!prices) return undefined;
  const { cached, written } = inputSplit(usage);
  const saved = (cached * (prices.input - prices.cacheRead) - written * (prices.cacheWrite - prices.input)) / 1_000_000;
  return Math.abs(saved) <= MAX_USD ? saved : undefined;
}

/** A saving as the tooltip and the dashboard write it: a negative one (writes that have not paid off
 * yet) with its sign before the dollar. */
export function savedDollars(amount: number, precision: Precision = 'request'): string {
  return amount < 0 ? `-${dollars(-amount, precision)}` : dollars(amount, precision);
}
