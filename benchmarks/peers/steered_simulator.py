"""A simulator process a benchmark can steer while it serves, and ask what it served.

`python -m simulator` serves until Ctrl-C and keeps its counters to itself. The network
benchmarks need three more things from the process they sync against: the server's own count of
requests and 429s per key (the honest one: a client may retry where the benchmark cannot see),
the clock moved a day on (a daily sync needs the day after the backfill, with the same history),
and the network changed on the running server (a backfill at loopback speed, the daily sync at
80 ms). This process builds the same ``Simulator`` from a scenario file, serves it with
``simulator.serve`` and answers one JSON command a line on stdin, one JSON line on stdout:

    {"op": "traffic"}                 -> {"keys": [{company, label, requests, rate_limited,
                                          statuses}], "requests": N, "rate_limited": N}
    {"op": "reset"}                   -> {"ok": true}   (zeroes the counters)
    {"op": "advance", "days": 1}      -> {"now": ISO}   (new days appear; old ones never change)
    {"op": "network", "spec": {...}}  -> {"network": "latency 80 ms, no rate limit"}

    python -m benchmarks.peers.steered_simulator --scenario FILE --seed 0 --now ISO

Prints ``listening on URL`` (as `python -m simulator` does) once it accepts connections; stops on
SIGINT or at the end of stdin.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from simulator import NetworkSpec, Scenario, Simulator, serve


def traffic(sim: Simulator) -> dict[str, Any]:
    """Per key (by company and label, never by its text) and in total."""
    keys = [
        {
            "company": key.company,
            "label": key.label,
            "requests": count.requests,
            "rate_limited": count.rate_limited,
            "statuses": {str(status): n for status, n in sorted(count.statuses.items())},
        }
        for key, count in sim.traffic.per_key().items()
    ]
    total = sim.traffic.total()
    return {"keys": keys, "requests": total.requests, "rate_limited": total.rate_limited}


def answer(sim: Simulator, command: dict[str, Any]) -> dict[str, Any]:
    op = command.get("op")
    if op == "traffic":
        return traffic(sim)
    if op == "reset":
        sim.traffic.reset()
        return {"ok": True}
    if op == "advance":
        sim.clock.advance(timedelta(days=float(command["days"])))
        return {"now": sim.clock.now.isoformat()}
    if op == "network":
        spec = NetworkSpec.model_validate(command["spec"])
        sim.network.configure(spec)
        return {"network": spec.describe()}
    raise ValueError(f"unknown op {op!r}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", required=True, type=Path, help="a YAML or JSON scenario")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--now", required=True, help="the simulated now (ISO 8601)")
    args = parser.parse_args(argv)
    now = datetime.fromisoformat(args.now)
    now = now if now.tzinfo else now.replace(tzinfo=UTC)
    sim = Simulator(Scenario.load(args.scenario), seed=args.seed, now=now, demo_key=None)
    with serve(sim, host="127.0.0.1", port=0) as server:
        print(f"network: {sim.network.spec.describe()}", flush=True)
        print(f"listening on {server.url}", flush=True)
        try:
            for line in sys.stdin:
                if not line.strip():
                    continue
                try:
                    reply = answer(sim, json.loads(line))
                except (ValueError, KeyError, TypeError, ValidationError) as error:
                    reply = {"error": f"{type(error).__name__}: {error}"}
                print(json.dumps(reply), flush=True)
        except KeyboardInterrupt:
            pass  # the benchmark's stop: the server stops as the block ends
    return 0


if __name__ == "__main__":
    sys.exit(main())
