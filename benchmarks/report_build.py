"""How long the report site takes to build, and how big it is, as the ledger grows.

The warehouse rows are generated directly in DuckDB (no HTTP): one account, a year of days, 50
agents, 200 campaigns, 6 channels, N entries spread over the year, with the reconciliation
tables derived from the same rows. Site size and build time should follow days x agents x
campaigns, not entries: the sizes are printed side by side with their ratio to the smallest run.
Target: under 15 s at 1,000,000 entries.

    python -m benchmarks.report_build [--entries 100000,1000000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from datetime import date
from pathlib import Path

from benchmarks.harness.machine import load_line
from dashboards.site import build_site
from pipelines.warehouse.writer import Warehouse

TARGET_S = 15.0
DAYS = 365
AGENTS = 50
CAMPAIGNS = 200
CHANNELS = ("Phone", "Chat", "SMS", "WhatsApp", "Email", "Voice <beta>")
START = date(2025, 7, 1)
ACCOUNT = "bench"

# Entry i happens at START + i * DAYS / N days; every 500th is a refund, every 4000th an
# adjustment; a plan grant opens each month. Amounts in micro-credits, exact as DECIMAL.
_ENTRIES = f"""
CREATE TEMP TABLE gen AS
WITH usage AS (
  SELECT i,
    TIMESTAMPTZ '{START} 00:00:00+00'
      + to_microseconds(CAST(CAST(i AS HUGEINT) * {DAYS} * 86400000000 // $n AS BIGINT))
      AS created_at,
    CASE WHEN i % 4000 = 7 THEN 'Adjustment' WHEN i % 500 = 3 THEN 'Refund' ELSE 'Usage' END
      AS entry_type,
    CAST((1 + hash(i) % 40000) AS DECIMAL(18,6)) / 10000 AS magnitude,
    'agt_' || (hash(i * 7) % {AGENTS}) AS agent_id,
    'cmp_' || (hash(i * 13) % {CAMPAIGNS}) AS campaign_id,
    list_extract({list(CHANNELS)}, 1 + CAST(hash(i * 17) % {len(CHANNELS)} AS INTEGER))
      AS channel
  FROM range($n) t(i)
), grants AS (
  SELECT -1 - m AS i,
    CAST(date_trunc('month', TIMESTAMPTZ '{START} 00:00:00+00' + to_months(CAST(m AS INTEGER)))
      AS TIMESTAMPTZ) AS created_at,
    'PlanGrant' AS entry_type, CAST(250000 AS DECIMAL(18,6)) AS magnitude,
    NULL AS agent_id, NULL AS campaign_id, NULL AS channel
  FROM range(12) t(m)
), all_entries AS (
  SELECT * FROM usage UNION ALL SELECT * FROM grants
), signed AS (
  SELECT *,
    CASE entry_type WHEN 'Usage' THEN -magnitude WHEN 'Adjustment' THEN -magnitude / 10
      ELSE magnitude END AS amount,
    CASE entry_type WHEN 'Usage' THEN 'debit' WHEN 'Refund' THEN 'refund'
      WHEN 'Adjustment' THEN 'adjustment' ELSE 'credit' END AS category,
    CASE WHEN entry_type IN ('Adjustment', 'PlanGrant') THEN NULL ELSE agent_id END AS agent,
    row_number() OVER (ORDER BY created_at, i) - 1 AS chain_position
  FROM all_entries
)
SELECT *, CAST(100000 + sum(amount) OVER (ORDER BY chain_position) AS DECIMAL(18,6))
  AS balance_after
FROM signed
"""

_LEDGER = f"""
INSERT INTO ledger_entries
SELECT '{ACCOUNT}', 'e' || chain_position || '-1', created_at,
  CAST(timezone('UTC', created_at) AS DATE), entry_type, amount, 'Generated <entry>', true,
  CASE WHEN agent IS NULL THEN NULL ELSE channel END, agent,
  CASE WHEN agent IS NULL THEN NULL ELSE campaign_id END, balance_after, NULL,
  md5(CAST(chain_position AS VARCHAR)), 1, 'bench', now(),
  CAST(timezone('UTC', created_at) AS DATE), CAST(timezone('UTC', created_at) AS DATE), 1, 0
FROM gen
"""

_ENRICHED = f"""
INSERT INTO ledger_chain
SELECT '{ACCOUNT}', 'e' || chain_position || '-1', chain_position, created_at, entry_type,
  category, amount, amount, balance_after - amount, balance_after,
  CASE WHEN agent IS NULL THEN NULL ELSE channel END, agent,
  CASE WHEN agent IS NULL THEN NULL ELSE campaign_id END,
  CASE WHEN agent IS NULL THEN NULL ELSE 'Campaign ' || campaign_id END, 'Scale', 'Active', false,
  CAST(timezone('UTC', created_at) AS DATE),
  CAST(date_trunc('month', timezone('UTC', created_at)) AS DATE)
FROM gen
"""

_DAILY = f"""
INSERT INTO daily_balance
SELECT '{ACCOUNT}', day, arg_min(balance_after - amount, chain_position),
  coalesce(sum(amount) FILTER (WHERE category = 'debit'), 0),
  coalesce(sum(amount) FILTER (WHERE category = 'credit'), 0),
  coalesce(sum(amount) FILTER (WHERE category = 'refund'), 0),
  coalesce(sum(amount) FILTER (WHERE category = 'adjustment'), 0),
  0, 0, arg_max(balance_after, chain_position), count(*), 'bench'
FROM (SELECT *, CAST(timezone('UTC', created_at) AS DATE) AS day FROM gen) GROUP BY day
"""


def generate(path: Path, entries: int) -> None:
    warehouse = Warehouse(path, lock_timeout_s=60)
    warehouse.ensure()
    with warehouse.write() as con:
        con.execute(_ENTRIES, {"n": entries})
        for statement in (_LEDGER, _ENRICHED, _DAILY):
            con.execute(statement)
        con.execute(
            "INSERT INTO campaigns SELECT ?, now(), 'h', 'cmp_' || i, 'Campaign <' || i || '>', "
            "true, '[]', 'bench' FROM range(?) t(i)",
            [ACCOUNT, CAMPAIGNS],
        )
        con.execute(
            "INSERT INTO subscription_snapshots VALUES (?, now(), 'h', 'Scale', 'Active', "
            '\'["PhoneAgents"]\', \'{"monthlyCredits": 250000, "agents": 60, '
            "\"concurrentCalls\": 20}', TIMESTAMPTZ '2026-06-01 00:00:00+00', "
            "TIMESTAMPTZ '2026-07-01 00:00:00+00', true, '{}', 'bench')",
            [ACCOUNT],
        )
        con.execute(
            "INSERT INTO reconciliation_runs (account, run_id, checked_at, sign_convention, "
            "sign_inferred, pairs_explained_signed, pairs_explained_unsigned, tolerance, entries, "
            "continuity_breaks, ambiguous_ties, summary_status, summary_message, "
            "breakdown_status, breakdown_message, hidden_movements, hidden_gross, hidden_net, "
            "unacknowledged, opening_status, opening_message) SELECT ?, 'bench', now(), "
            "'signed', false, NULL, NULL, 0, count(*), 0, 0, 'ok', 'matches', 'ok', 'matches', "
            "0, 0, 0, 0, 'ok', 'opens at zero' FROM gen",
            [ACCOUNT],
        )
        con.execute("DROP TABLE gen")


def measure(entries: int, root: Path) -> tuple[float, int, int]:
    warehouse = root / f"w{entries}.duckdb"
    generate(warehouse, entries)
    started = time.perf_counter()
    site = build_site(warehouse, root / f"site{entries}", account=ACCOUNT, lock_timeout_s=60)
    elapsed = time.perf_counter() - started
    return elapsed, site.size_bytes, len(site.pages)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", default="100000,1000000")
    parser.add_argument("--keep", type=Path, help="keep warehouses and sites in this directory")
    args = parser.parse_args()
    sizes = [int(s) for s in args.entries.split(",")]
    load_start = os.getloadavg()
    root = args.keep or Path(tempfile.mkdtemp(prefix="creditlens-report-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        results = [(n, *measure(n, root)) for n in sizes]
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    base_time, base_size = results[0][1], results[0][2]
    print(
        f"report build: {DAYS} days, {AGENTS} agents, {CAMPAIGNS} campaigns, "
        f"{len(CHANNELS)} channels"
    )
    print(f"{'entries':>10} {'build s':>9} {'x time':>7} {'site MB':>9} {'x size':>7} {'pages':>6}")
    for entries, elapsed, size, pages in results:
        print(
            f"{entries:>10,} {elapsed:>9.2f} {elapsed / base_time:>7.2f} "
            f"{size / 1e6:>9.2f} {size / base_size:>7.2f} {pages:>6}"
        )
    largest = results[-1]
    verdict = "OK" if largest[1] < TARGET_S else "OVER"
    print(f"target: under {TARGET_S:.0f} s at {largest[0]:,} entries: {verdict}")
    print(load_line(load_start))


if __name__ == "__main__":
    main()
