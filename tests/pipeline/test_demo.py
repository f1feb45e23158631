"""`creditlens demo`, as README's Quick start runs it: no configuration, everything where it says.

The demo is the first thing a new user runs, so what it prints is tested as a user reads it:
the files it names exist, the query it suggests runs on the analyst copy and lists the months
in order, and each sync's log names each ledger window once though windows are read side by side.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import duckdb
import pytest

from dashboards.pages.findings import placement_text
from tests import SUITE_VARIABLES

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_demo_lands_reports_and_suggests_a_query_that_runs(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CREDITLENS_", "DAGSTER_"))}
    env["CREDITLENS_AUDIT_STATE_DIR"] = str(tmp_path / "audit-state")
    env |= SUITE_VARIABLES
    done = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "demo", "--dir", str(tmp_path / "demo")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    demo = tmp_path / "demo"
    analyst = demo / "warehouse.analyst.duckdb"
    for path in (demo / "warehouse.duckdb", analyst, demo / "reports" / "index.html"):
        assert path.is_file(), path
        assert str(path) in done.stdout

    suggested = re.findall(r'duckdb -readonly \S+ "([^"]+)"', done.stdout)
    [statement] = [q for q in suggested if "FROM monthly_statement" in q]
    with duckdb.connect(str(analyst), read_only=True) as con:
        shown = con.execute(statement).fetchall()
        months = [row[0] for row in shown]
        # The demo's company hides movements of several placements: named, and queryable.
        [movements] = [q for q in suggested if "FROM hidden_movements" in q]
        placements = {row[1] for row in con.execute(movements).fetchall()}
    assert len(months) >= 12
    assert months == sorted(months)
    # What the suggested query shows ties out on screen: opening + every line shown = closing.
    for month, opening, *movements, closing in shown:
        assert opening + sum(movements) == closing, (month, opening, movements, closing)
    assert {"within_tie", "between_entries", "after_last"} <= placements
    _summary_matches_the_table(done.stdout, analyst, demo / "reports")
    # The demo runs the key audit too: its site has the audit page, linked from the index.
    assert "key audit: 1 key(s) probed" in done.stdout
    assert (demo / "reports" / "key-audit.html").is_file()
    assert 'href="key-audit.html"' in (demo / "reports" / "index.html").read_text()
    assert "breakdown mismatch bd-" in done.stdout
    assert "history: first entry" in done.stdout
    # Alerts fire with no setup: a balance, an anomaly and a hidden movement, and where they go.
    assert re.search(r"alerts \(\S+\): [3-9] firing", done.stdout), done.stdout
    for rule in ("ERROR low-balance:", "WARN agent-spike:", "WARN hidden-movement:"):
        assert rule in done.stdout
    assert (demo / "reports" / "alerts.html").is_file()
    assert "wait in the outbox for channel ops" in done.stdout
    # A closed month, and a restatement of it by a top-up posted late (docs/statements.md).
    assert re.search(r"statements: \d+ month\(s\) closed, ", done.stdout), done.stdout
    assert re.search(r"statement restated: acme \d{4}-\d{2} \(version 2, ", done.stdout)

    # Each sync (the demo's, then the month close's re-read of a closed month) names each of its
    # windows once.
    log = done.stdout + done.stderr
    syncs = re.split(r"ledger: reading ", done.stderr)[1:]
    assert len(syncs) == 2, log[-2000:]
    for sync in syncs:
        windows = Counter(re.findall(r"ledger: window (\S+)", sync))
        assert windows, log[-2000:]
        assert set(windows.values()) == {1}, windows


def _summary_matches_the_table(stdout: str, analyst: Path, reports: Path) -> None:
    """The demo's count of movements per placement is the hidden_movements view's, in the words
    of the Reconciliation page's table, and the page's own summary says the same."""
    with duckdb.connect(str(analyst), read_only=True) as con:
        rows = con.execute(
            "SELECT placement, count(*) FROM hidden_movements GROUP BY placement"
        ).fetchall()
    counts = dict(rows)
    [said] = re.findall(r"The ledger hides (\d+) balance movement\(s\) \((.+?)\) and", stdout)
    assert int(said[0]) == sum(counts.values())
    for placement, n in counts.items():  # the table's words for each, with the view's count
        assert f"{n} {placement_text(placement)}" in said[1], said[1]
    [page] = reports.glob("accounts/*/reconciliation.html")
    assert f"{sum(counts.values())} ({said[1]}; gross" in page.read_text(encoding="utf-8")
