// Dollar amounts as the extension and the dashboard's page write them: the one formatter of the
// TypeScript side (the sidecar's is spend/prices.py `usd`). In extension/shared/ because the page
// uses it too.

/** How exact an amount is shown:
 * - `cents`: a balance or a day's total, always to the cent;
 * - `request`: one request's cost, to the cent from a cent up, else four places (most requests);
 * - `bill`: a billed amount, exact to a hundredth of a cent, so four places below a dollar. */
export type Precision = 'cents' | 'request' | 'bill';

export function dollars(amount: number, precision: Precision = 'request'): string {
  const cents = precision === 'cents' || amount === 0 || amount >= (precision === 'bill' ? 1 : 0.01);
  return `$${amount.toFixed(cents ? 2 : 4)}`;
}

/** A price per million tokens as a model list shows it: two places from a dollar up, else two
 * significant digits ($0.15, $0.075). */
export function perMillion(price: number): string {
  return `$${price >= 1 ? price.toFixed(2) : String(Number(price.toPrecision(2)))}`;
}
