"""Entries joined as of their time with the subscription then, and with campaign names."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl

from tests.transforms.ledgers import Chain, ledger_frame, money, seconds, shuffled
from transforms.enrich import ledger_enriched

UTC_US = pl.Datetime("us", "UTC")


def _snapshots(rows: list[tuple[str, datetime, str, str]]) -> pl.DataFrame:
    return pl.DataFrame(
        rows,
        schema={"account": pl.Utf8, "fetched_at": UTC_US, "plan": pl.Utf8, "status": pl.Utf8},
        orient="row",
    )


def test_subscription_as_of_each_entry_with_backfill_flag() -> None:
    day = 86400
    ledger = shuffled(
        ledger_frame(
            Chain(money("-1", "-1", "-1", "-1"), seconds(0, day, 2 * day, 3 * day)),
            Chain(money("-1"), seconds(0), account="beta"),
        ),
        3,
    )
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    snapshots = _snapshots(
        [
            ("acme", t0 + timedelta(days=1), "Starter", "Active"),
            ("acme", t0 + timedelta(days=2, hours=1), "Growth", "Active"),
            ("other", t0, "Scale", "Active"),
        ]
    )
    campaigns = pl.DataFrame(
        {"account": ["acme", "acme"], "campaign_id": ["cmp_1", "cmp_1"], "name": ["Old", "New"]}
    )
    enriched = ledger_enriched(ledger, snapshots, campaigns)
    assert enriched["entry_id"].to_list() == ledger["entry_id"].to_list()
    rows = {r["entry_id"]: r for r in enriched.iter_rows(named=True)}
    expected = {
        "acme-00000": (None, True),  # before the first snapshot: unknown, not carried back
        "acme-00001": ("Starter", False),
        "acme-00002": ("Starter", False),
        "acme-00003": ("Growth", False),
        "beta-00000": (None, False),
    }
    assert {k: (r["plan"], r["subscription_backfilled"]) for k, r in rows.items()} == expected
    assert rows["acme-00000"]["campaign_name"] == "New"
    assert rows["beta-00000"]["campaign_name"] is None
    assert enriched.schema["subscription_backfilled"] == pl.Boolean
