"""Money as the sidecar and the CLI write it: the one money formatter of the Python side, by the
rules extension/shared/money.ts follows for the same amounts."""

from __future__ import annotations

from decimal import Decimal


def usd(amount: float) -> str:
    """An amount as the sidecar and the CLI write it: cents where they matter, four places below a cent
    (as extension/shared/money.ts writes a request's cost); nothing, of either sign, as "$0.00". The
    rule of money.ts' request cost."""
    if amount == 0:
        return "$0.00"  # not "$0.0000", nor "$-0.0000" for -0.0
    if 0 < amount < 0.00005:
        return "<$0.0001"  # not "$0.0000" for a cost that is not nothing
    return f"${amount:.2f}" if amount >= 0.01 else f"${amount:.4f}"


# Below it a price per million tokens is shown as less than it: the catalogue rounds prices to it.
LEAST_PER_MILLION = 0.000001


def per_million(price: float) -> str:
    """A price per million tokens as the picker shows it, by the rule extension/shared/money.ts
    `perMillion` follows: two places from $0.10 up ($3.00, $0.50), else two significant digits
    ($0.075, $0.0013); a free model (and a price of -0, which a catalogue can list) "$0.00"."""
    if price == 0:
        return "$0.00"
    if price < LEAST_PER_MILLION:
        return f"<${LEAST_PER_MILLION:f}"
    return f"${price:.2f}" if price >= 0.1 else f"${Decimal(f'{price:.2g}'):f}"
