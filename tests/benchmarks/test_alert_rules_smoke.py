"""The alert benchmark still syncs and times every kind of rule (no timing assertions).

The run itself is a sync of a simulated agency in a child process, so it is ``slow``; the rules
it appends, one of every kind the product knows, and its companies are read here in the inner
loop.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from benchmarks.alert_rules import RULES, scenario
from pipelines.config.alert_rules import KINDS, read_alerting

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_alert_rules_benchmark_times_both_evaluations() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.alert_rules", "--accounts", "2", "--entries", "300"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert re.search(
        r"alerts: 7 rules x 2 accounts: first evaluation [\d.]+s \(\d+ changes\), next [\d.]+s",
        done.stdout,
    ), done.stdout
    assert "load average" in done.stdout


def test_the_benchmarks_rules_are_one_of_every_kind_and_every_fifth_company_spikes() -> None:
    rules = read_alerting(tomllib.loads(RULES), "benchmark rules").rules
    assert sorted(rule.kind for rule in rules) == sorted(KINDS)
    companies = scenario(6, 600).companies
    assert [bool(c.spend_spikes) for c in companies] == [True, False, False, False, False, True]
