"""Syncing at the speed a real network allows: round trips, per-key rate limits, many accounts.

On loopback a sync is bound by CPU; against the real API it is bound by round trips and by each
key's rate limit, and the line to beat is what the network allows. Every benchmark here puts the
simulator 80 ms away (``--latency-ms``), some behind a per-key token bucket (``--rate-limit``),
and measures creditlens against that line in one run:

``rate-limited``  a backfill against its rate floor, requests needed / rate (the pages the raw
                  floor needs at pageSize 100), with dlt's rest_api syncing the same company AT
                  THE SAME TIME with another key (the limit is per key; both wait on the network),
                  bounded in time: stopped, its time so far is a lower bound.
``unlimited``     no limit: against the raw httpx floor at several concurrency levels.
``accounts``      N companies in one simulator, ONE `creditlens sync` of them all (an accounts
                  file), against the slowest account's rate floor; peak RSS of its process tree.
``daily``         an up-to-date warehouse (backfilled at loopback speed), the next day appears,
                  then the daily sync (7-day lookback) at 80 ms, end to end and phase by phase.

    python -m benchmarks.network rate-limited [--entries 1000000] [--skip-peer] [--out FILE]
    python -m benchmarks.network unlimited [--entries 1000000] [--floor-levels 4,16,...]
    python -m benchmarks.network accounts [--accounts 50] [--entries 20000]
    python -m benchmarks.network daily [--accounts 1] [--entries 1000000]

The simulator counts what it answered per key (benchmarks/peers/steered_simulator.py): every
request, 429 and error figure below is the server's, beside the client's own where it reports
one. Prints the machine, a markdown table, the ratios and targets, and the load average;
``--out`` writes JSON.

One module per benchmark (``rate_limited``, ``unlimited``, ``accounts``, ``daily``), the
network they run behind (``conditions``), the table they print (``report``), the phase stamps
of a daily sync (``phases``) and the command line (``cli``); the contenders run as every other
benchmark runs them (benchmarks/harness/).
"""
