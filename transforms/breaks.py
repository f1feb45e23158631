"""The `balance_breaks` table: one row per place where the ledger does not explain the balance.

Every check (continuity, summary, breakdown) reports in this one shape, so that the warehouse,
the asset checks and the reports read breaks from one table. `detail` is one sentence in the
spirit of Beancount's balance assertions: what was expected, what was found, the difference, where.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from decimal import Decimal

import polars as pl

from transforms.micros import MONEY

# The kinds of finding, each from its check: between two entries, the latest /Consumption balance
# against the last balanceAfter, a balance before the first entry, a breakdown item.
BREAK_KINDS = ("continuity", "summary", "opening", "breakdown")
UTC_MICROS = pl.Datetime("us", "UTC")

BREAKS_SCHEMA: dict[str, pl.DataType] = {
    "account": pl.Utf8(),
    "kind": pl.Utf8(),
    "break_start": UTC_MICROS,
    "break_end": UTC_MICROS,
    "expected_balance": MONEY,
    "observed_balance": MONEY,
    "gap": MONEY,
    "before_entry_id": pl.Utf8(),
    "after_entry_id": pl.Utf8(),
    "agent_id": pl.Utf8(),
    "campaign_id": pl.Utf8(),
    "channel": pl.Utf8(),
    "ambiguous": pl.Boolean(),
    "detail": pl.Utf8(),
    "break_id": pl.Utf8(),
    "placement": pl.Utf8(),
    "observed_on": pl.Date(),
}

# Where a movement sits relative to the entries, in the order the entries run.
PLACEMENTS = ("before_first", "between_entries", "within_tie", "after_last")
# The placement rule, the one source of the polars column (``placed``) and of the SQL that reads
# a warehouse stored before placements were (``placement_sql``): a kind's placement, None for a
# breakdown item (not a balance movement); a continuity break sits within a tie when its two
# sides share a createdAt (break_start = break_end), else between entries.
PLACEMENT_OF_KIND: dict[str, str | None] = {
    "opening": "before_first",
    "summary": "after_last",
    "breakdown": None,
}
WITHIN_TIE, BETWEEN_ENTRIES = "within_tie", "between_entries"
# The kind of finding each placement comes from, read back (the site names the kind beside it).
KIND_OF_PLACEMENT = {
    placement: next((k for k, p in PLACEMENT_OF_KIND.items() if p == placement), "continuity")
    for placement in PLACEMENTS
}


def empty_breaks() -> pl.DataFrame:
    """No breaks, in the table's shape. Cut from one frame made once: made from the schema each
    time, it cost a fifth of a millisecond, about five times per company and run."""
    return _NO_BREAKS.clear()


_NO_BREAKS = pl.DataFrame(schema=BREAKS_SCHEMA)


def conform_breaks(frame: pl.DataFrame) -> pl.DataFrame:
    """Fills absent columns with nulls and puts the columns in the table's order and types."""
    return frame.select(
        [
            (pl.col(name) if name in frame.columns else pl.lit(None)).cast(dtype).alias(name)
            for name, dtype in BREAKS_SCHEMA.items()
        ]
    )


def placed(breaks: pl.DataFrame) -> pl.DataFrame:
    """Every finding with its placement, the day that carries it, and its stable id.

    The id hashes what names the place (account, placement, the entries on each side; for a
    breakdown item its period and item), never the amounts, so a rerun finds the same id and an
    acknowledgement can tell the same break with another gap.
    """
    if not breaks.height:
        return breaks
    framed = breaks.with_columns(
        placement=_placement(),
        observed_on=pl.coalesce(pl.col("observed_on"), pl.col("break_end").dt.date()),
    )
    ids = [_break_id(row) for row in framed.iter_rows(named=True)]
    return framed.with_columns(break_id=pl.Series(ids, dtype=pl.Utf8))


def _placement() -> pl.Expr:
    """``PLACEMENT_OF_KIND``, then a continuity break's two sides, as a polars column."""
    (first, placement), *others = PLACEMENT_OF_KIND.items()
    chained = pl.when(pl.col("kind") == first).then(pl.lit(placement, dtype=pl.Utf8))
    for kind, placement in others:
        chained = chained.when(pl.col("kind") == kind).then(pl.lit(placement, dtype=pl.Utf8))
    return (
        chained.when(pl.col("break_start") == pl.col("break_end"))
        .then(pl.lit(WITHIN_TIE))
        .otherwise(pl.lit(BETWEEN_ENTRIES))
    )


def placement_sql() -> str:
    """The same rule as SQL over ``balance_breaks``' columns (kind, break_start, break_end)."""
    kinds = " ".join(
        f"WHEN '{kind}' THEN " + ("NULL" if placement is None else f"'{placement}'")
        for kind, placement in PLACEMENT_OF_KIND.items()
    )
    return (
        f"CASE kind {kinds} ELSE CASE WHEN break_start = break_end THEN '{WITHIN_TIE}' "
        f"ELSE '{BETWEEN_ENTRIES}' END END"
    )


def _break_id(row: dict[str, object]) -> str:
    if row["kind"] == "breakdown":
        start = row["break_start"]
        period = start.isoformat() if isinstance(start, datetime) else ""
        parts = ["breakdown", period, row["agent_id"], row["campaign_id"], row["channel"]]
        prefix = "bd"
    else:
        parts = [row["placement"], row["before_entry_id"], row["after_entry_id"]]
        prefix = "hm"
    text = "\x1f".join([str(row["account"]), *("" if p is None else str(p) for p in parts)])
    return f"{prefix}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def timestamp_text(expr: pl.Expr) -> pl.Expr:
    return expr.dt.to_string("%Y-%m-%dT%H:%M:%S%.6fZ")


def continuity_detail() -> pl.Expr:
    """Sentence for a continuity break row (needs the break columns already computed).

    Built with concat_str rather than pl.format: format panics on gathered string views in
    polars 2.1.
    """
    sentence = pl.concat_str(
        pl.lit("Balance break on account "),
        pl.col("account"),
        pl.lit(": expected "),
        pl.col("expected_balance").cast(pl.Utf8),
        pl.lit(", actual "),
        pl.col("observed_balance").cast(pl.Utf8),
        pl.lit(", difference "),
        pl.col("gap").cast(pl.Utf8),
        pl.lit(", between entry "),
        pl.col("before_entry_id"),
        pl.lit(" at "),
        timestamp_text(pl.col("break_start")),
        pl.lit(" and entry "),
        pl.col("after_entry_id"),
        pl.lit(" at "),
        timestamp_text(pl.col("break_end")),
        pl.lit("."),
    )
    ambiguity = pl.lit(
        " The entries sharing a timestamp here can be ordered in several ways that"
        " explain the balances differently."
    )
    return pl.when(pl.col("ambiguous")).then(pl.concat_str(sentence, ambiguity)).otherwise(sentence)


def money_text(value: Decimal) -> str:
    return str(value.quantize(Decimal("0.000001")))
