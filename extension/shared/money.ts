// Dollar amounts as the extension and the dashboard's page write them: the one formatter of the
// TypeScript side (the sidecar's is server/gateway_lm/money.py). In extension/shared/ because the page
// uses it too.

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
