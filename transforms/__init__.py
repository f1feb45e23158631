"""Pure polars transforms: no I/O, no Dagster, no DuckDB, no HTTP.

Reconciliation and aggregation, one rule per module; pipelines/reconciliation reads the warehouse
slice by slice and calls these rules, and nothing else calls them in its place:

- `entry_type`: category and direction of an entry type name (an open set).
- `normalize`: signed amounts under a sign convention; inference of the convention.
- `euler_trail`, `tie_order`: order of entries sharing a createdAt, decided by balances.
- `continuity`: the balance chain and its breaks (`balance_breaks` rows, see `breaks`);
  `tie_groups` searches the tie groups the chain pass cannot settle alone.
- `cross_checks`: the ledger against the stored consumption summary and breakdown;
  `opening`: the balance before the first entry; `breaks`: every finding's placement and id.
- `aggregate`: the daily statement and the burn rate; `forecast`: the balance projected with
  the plan's grants.
- `enrich`: entries joined as of their time with subscription snapshots and campaign names.
- `micros`: exact Decimal(18,6) <-> Int64 micro-credits conversions.
"""
