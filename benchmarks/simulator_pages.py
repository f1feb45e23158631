"""How many ledger pages of 100 entries a second the simulator serves, over loopback.

The server runs in its own process (`python -m simulator`); the load comes from separate client
processes, each one keep-alive httpx connection requesting random full pages of a 366-day window.
Concurrency = number of client processes. Each level is bounded in requests and in seconds.
Target: at least 2,000 pages/s on a 2-core machine (httpx itself costs more CPU per page than
the server, so one client process cannot show it alone).

    .venv/bin/python benchmarks/simulator_pages.py [--scenario default] [--levels 1,2,3]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import socket
import subprocess
import sys
import time
from multiprocessing.synchronize import Barrier
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
KEY = "bench-key"
NOW = "2025-03-15T12:00:00Z"
WINDOW = {"startDate": "2024-03-15", "endDate": "2025-03-15", "pageSize": "100"}
PATH = "/Consumption/transactions"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start_server(scenario: str, port: int) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "simulator", "--port", str(port), "--scenario", scenario]
    command += ["--seed", "0", "--key", KEY, "--now", NOW]
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(proc.stderr.read().decode() if proc.stderr else "server died")
        try:
            httpx.get(f"http://127.0.0.1:{port}/openapi.json", timeout=1)
            return proc
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("server did not start")


def _client(
    url: str, seed: int, requests: int, seconds: float, barrier: Barrier, out: multiprocessing.Queue
) -> None:
    with httpx.Client(base_url=url, headers={"X-Api-Key": KEY}) as client:
        pages = max(1, client.get(PATH, params=WINDOW).json()["total"] // 100)
        rng = random.Random(seed)
        # Built once: URL parsing would otherwise cost the client more than the server's page.
        prepared = [
            client.build_request("GET", PATH, params={**WINDOW, "pageNumber": page})
            for page in range(1, pages + 1)
        ]
        barrier.wait()
        done = entries = 0
        start = time.perf_counter()
        deadline = start + seconds
        while done < requests and time.perf_counter() < deadline:
            response = client.send(prepared[rng.randrange(pages)])
            response.raise_for_status()
            entries += response.content.count(b'"createdAt"')
            done += 1
        out.put((done, entries, start, time.perf_counter()))


def _level(url: str, clients: int, requests: int, seconds: float) -> tuple[int, float]:
    out: multiprocessing.Queue = multiprocessing.Queue()
    barrier = multiprocessing.Barrier(clients)
    procs = [
        multiprocessing.Process(
            target=_client, args=(url, seed, requests // clients, seconds, barrier, out)
        )
        for seed in range(clients)
    ]
    for proc in procs:
        proc.start()
    results = [out.get(timeout=seconds + 120) for _ in procs]
    for proc in procs:
        proc.join()
    done = sum(r[0] for r in results)
    entries = sum(r[1] for r in results)
    if entries < done * 100:
        raise AssertionError("some pages were not full")
    elapsed = max(r[3] for r in results) - min(r[2] for r in results)
    return done, elapsed


def _cpu_seconds(pid: int) -> float:
    """utime + stime of a process (Linux), to tell server cost from client cost."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--scenario", default="default")
    parser.add_argument("--requests", type=int, default=12000, help="per level, all clients")
    parser.add_argument("--seconds", type=float, default=8.0, help="per level")
    parser.add_argument("--levels", default="1,2,3", help="client processes per level")
    args = parser.parse_args()
    load_start = os.getloadavg()
    port = _free_port()
    server = _start_server(args.scenario, port)
    url = f"http://127.0.0.1:{port}"
    try:
        print(
            f"simulator ledger pages/s (100 entries each), scenario {args.scenario}, "
            f"{os.cpu_count()} cpus, server and clients on loopback"
        )
        best = 0.0
        for clients in (int(x) for x in args.levels.split(",")):
            cpu_before = _cpu_seconds(server.pid)
            done, elapsed = _level(url, clients, args.requests, args.seconds)
            server_cpu = _cpu_seconds(server.pid) - cpu_before
            rate = done / elapsed
            capacity = done / server_cpu if server_cpu > 0 else float("inf")
            best = max(best, rate)
            print(
                f"  {clients} client process(es): {done:>6} pages in {elapsed:5.2f}s "
                f"= {rate:6.0f} pages/s ({rate / 2000:.2f}x the 2,000 target); server CPU "
                f"{server_cpu * 1e6 / done:5.0f} us/page = {capacity:6.0f} pages per server "
                f"CPU-second ({capacity / 2000:.2f}x)"
            )
        print(f"best: {best:.0f} pages/s = {best / 2000:.2f}x target")
        # Run as a script (no package to import from), so the harness's load line is written out.
        start, end = (" ".join(f"{x:.2f}" for x in load) for load in (load_start, os.getloadavg()))
        print(f"load average (1, 5, 15 min): {start} at the start, {end} at the end")
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
