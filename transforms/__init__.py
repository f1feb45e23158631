"""Pure polars transforms: no I/O, no Dagster, no DuckDB, no HTTP.

Reconciliation and aggregation, one rule per module:

- `entry_type`: category and direction of an entry type name (an open set).
- `normalize`: signed amounts under a sign convention; inference of the convention.
- `euler_trail`, `tie_order`: order of entries sharing a createdAt, decided by balances.
- `continuity`: the balance chain and its breaks (`balance_breaks` rows, see `breaks`).
- `cross_checks`: the ledger against the consumption summary and breakdown.
- `reconcile`: the entry point (convention given or inferred, then continuity).
- `aggregate`: daily and monthly statements, consumption, burn rate, runway.
- `enrich`: entries joined as of their time with subscription snapshots and campaign names.
- `micros`: exact Decimal(18,6) <-> Int64 micro-credit conversions.
"""
