"""The alert benchmark still syncs and times every kind of rule (no timing assertions).

The run itself is a sync of a simulated agency, so it is ``slow``; the rules it appends, one of
every kind the product knows, and its companies are read here in the inner loop. Its ``main``
runs in this process (tests/benchmarks/in_process.py): the benchmark syncs and evaluates in its
own process, a child of the test's would only import Dagster again.
"""

from __future__ import annotations

import re
import tomllib

import pytest

from benchmarks.alert_rules import RULES, main, scenario
from pipelines.config.alert_rules import KINDS, read_alerting
from tests.benchmarks.in_process import run_main


@pytest.mark.slow
def test_alert_rules_benchmark_times_both_evaluations(capsys: pytest.CaptureFixture[str]) -> None:
    done = run_main(main, ["--accounts", "2", "--entries", "300"], capsys)
    assert done.code == 0, done.out[-2000:] + done.err[-2000:]
    assert re.search(
        r"alerts: 7 rules x 2 accounts: first evaluation [\d.]+s \(\d+ changes\), next [\d.]+s",
        done.out,
    ), done.out
    assert "load average" in done.out


def test_the_benchmarks_rules_are_one_of_every_kind_and_every_fifth_company_spikes() -> None:
    rules = read_alerting(tomllib.loads(RULES), "benchmark rules").rules
    assert sorted(rule.kind for rule in rules) == sorted(KINDS)
    companies = scenario(6, 600).companies
    assert [bool(c.spend_spikes) for c in companies] == [True, False, False, False, False, True]
