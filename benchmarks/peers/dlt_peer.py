"""The peer a user would pick instead: dlt's declarative `rest_api` source into DuckDB.

Runs under the benchmark's own dlt virtualenv, never creditlens's: it imports neither creditlens
nor the benchmarks package, only dlt and the standard library. One resource per window (the API
allows at most 366 days per request), all appended to one table, paginated by pageNumber at
pageSize 100 as creditlens does.

dlt's page-number paginator reads ``total_path`` as a number of *pages*; this API's ``total``
counts entries, so pointing it at ``total`` would be wrong. It is left out and the paginator
stops at the first empty page, the same one extra request creditlens makes to probe the end.

    BENCH_API_KEY=... /tmp/creditlens-bench-dlt/bin/python benchmarks/peers/dlt_peer.py \
        --base-url URL --window 2024-07-01..2025-07-01 --workdir DIR

Prints one JSON object: rows (counted in the DuckDB file after the load), seconds, dlt version.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

TABLE = "transactions"
DATASET = "ledger"


def rest_api_config(base_url: str, key: str, windows: list[str]) -> dict[str, Any]:
    resources = []
    for index, window in enumerate(windows):
        start, end = window.split("..")
        resources.append(
            {
                "name": f"transactions_window_{index + 1}",
                "table_name": TABLE,
                "endpoint": {
                    "path": "Consumption/transactions",
                    "params": {"startDate": start, "endDate": end},
                },
            }
        )
    return {
        "client": {
            "base_url": base_url.rstrip("/") + "/",
            "auth": {"type": "api_key", "name": "X-Api-Key", "api_key": key, "location": "header"},
            "paginator": {
                "type": "page_number",
                "page_param": "pageNumber",
                "base_page": 1,
                "total_path": None,
                "maximum_page": 200_000,  # bound on the request loop
            },
        },
        "resource_defaults": {
            "write_disposition": "append",
            "endpoint": {"data_selector": "data", "params": {"pageSize": 100}},
        },
        "resources": resources,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--window", action="append", required=True, help="FIRST..LAST, inclusive")
    parser.add_argument("--workdir", required=True, type=Path)
    args = parser.parse_args(argv)
    key = os.environ.get("BENCH_API_KEY")
    if not key:
        print("BENCH_API_KEY is not set", file=sys.stderr)
        return 2
    # Loopback only: no telemetry, and dlt's state stays in the benchmark's scratch directory.
    os.environ["RUNTIME__DLTHUB_TELEMETRY"] = "false"
    os.environ.setdefault("DLT_DATA_DIR", str(args.workdir / "dlt-data"))

    import dlt
    from dlt.sources.rest_api import rest_api_source

    started = time.perf_counter()
    database = args.workdir / "dlt.duckdb"
    pipeline = dlt.pipeline(
        pipeline_name="creditlens_bench_peer",
        destination=dlt.destinations.duckdb(str(database)),
        dataset_name=DATASET,
        pipelines_dir=str(args.workdir / "dlt-pipelines"),
    )
    pipeline.run(rest_api_source(rest_api_config(args.base_url, key, args.window)))
    seconds = time.perf_counter() - started

    import duckdb

    with duckdb.connect(str(database), read_only=True) as con:
        rows = con.execute(f"SELECT count(*) FROM {DATASET}.{TABLE}").fetchone()[0]
        amount_type = con.execute(
            "SELECT data_type FROM information_schema.columns "
            "WHERE table_schema = ? AND table_name = ? AND column_name = 'amount'",
            [DATASET, TABLE],
        ).fetchone()
    print(
        json.dumps(
            {
                "rows": rows,
                "seconds": seconds,
                "dlt_version": dlt.__version__,
                "amount_type": amount_type[0] if amount_type else None,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
