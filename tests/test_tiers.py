"""The inner loop (`pytest -m "not slow"`) still reaches every test module.

A test is marked ``slow`` when what it proves needs a kill, a child process, a benchmark or a
long property run; the rest of its file stays in the inner loop, so a change anywhere meets at
least one test of that file before CI. Read from the files' syntax: no collection, no imports.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).parent
# Files whose every test needs what `slow` is for, and the inner-loop tests that reach the code
# they prove (the files themselves run in the whole suite, in CI).
COVERED_ELSEWHERE = {
    "alerts/test_alert_week.py": "alerts/test_alert_lifecycle.py and test_alert_agency.py",
    "statements/test_finance_agency.py": "statements/test_close.py, focus/test_focus_agency.py",
    "benchmarks/test_dagster_partition_events_smoke.py": "benchmarks/test_benchmark_layout.py",
    "benchmarks/test_dagster_accounts_smoke.py": "benchmarks/test_benchmark_layout.py",
    "reconciliation/test_agency_pass.py": "reconciliation/test_one_commit.py",
    "benchmarks/test_ingestion_smoke.py": "benchmarks/test_raw_floor_retries.py",
    "benchmarks/test_reconciliation_memory_smoke.py": "benchmarks/test_measured_child.py",
    "benchmarks/test_sync_phases_smoke.py": "benchmarks/test_network_smoke.py (its phases)",
    "dashboards/test_report_end_to_end.py": "dashboards/test_report_site.py and its neighbours",
    "dashboards/test_report_finance.py": "dashboards/test_report_statement.py",
    "dagster/test_instance_benchmark_smoke.py": "benchmarks/test_benchmark_layout.py",
    "dagster/test_lock_wait.py": "dagster/test_pool.py, reliability/test_lock_timeout.py",
    "pipeline/test_demo.py": "the sync, report and audit tests the demo chains",
    "pipeline/test_since_before_history.py": "pipeline/test_history_discovery.py",
    "pipeline/test_history_quiet.py": "pipeline/test_history_discovery.py",
    "pipeline/test_many_accounts.py": "pipeline/test_agency_outcomes.py, test_accounts_file.py",
    "reconciliation/test_reconciliation.py": "reconciliation/test_acknowledgements.py",
    "reliability/test_bad_input.py": "pipeline/test_wire.py, pipeline/test_page_decoders.py",
    "reliability/test_configuration.py": "pipeline/test_settings.py (one line per bad value)",
    "reliability/test_crashes.py": "pipeline/test_sync.py (the failpoints run in every sync)",
    "reliability/test_faults.py": "client/test_client.py (each fault kind retried)",
    "reliability/test_hostile_reports.py": "dashboards/test_report_browser.py (markup as text)",
    "benchmarks/test_lake_smoke.py": "benchmarks/test_benchmark_layout.py, lake/test_lake.py",
    "lake/test_dagster_postgres.py": "pipeline/test_settings.py, dagster/test_shared_history.py",
    "lake/test_lake_s3.py": "lake/test_lake.py (the same lake, its data in a folder)",
    "lake/test_lake_readers.py": "lake/test_lake.py (a writer's wait, the location's line)",
    "lake/test_warehouse_migrate.py": "lake/test_lake.py and pipeline/test_schema.py",
}


def _marks_slow(node: ast.expr) -> bool:
    return any(isinstance(part, ast.Attribute) and part.attr == "slow" for part in ast.walk(node))


def _tests(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
            "test_"
        ):
            found.append(node)
    return found


def _all_slow(tree: ast.Module) -> bool:
    """Whether a module-level ``pytestmark`` marks every test of the file slow."""
    return any(
        isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)
        and _marks_slow(node.value)
        for node in tree.body
    )


def test_every_test_file_keeps_a_test_in_the_inner_loop() -> None:
    only_slow = []
    for path in sorted(TESTS.rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        tests = _tests(tree)
        if not tests:
            continue
        fast = [t for t in tests if not any(_marks_slow(d) for d in t.decorator_list)]
        name = path.relative_to(TESTS).as_posix()
        if (_all_slow(tree) or not fast) and name not in COVERED_ELSEWHERE:
            only_slow.append(name)
    assert not only_slow, f"every test of these files is marked slow: {only_slow}"
    gone = [name for name in COVERED_ELSEWHERE if not (TESTS / name).is_file()]
    assert not gone, f"COVERED_ELSEWHERE names files that are gone: {gone}"


def test_the_check_sees_a_slow_mark() -> None:
    marked = ast.parse("import pytest\n@pytest.mark.slow\ndef test_a():\n    pass\n")
    (test,) = _tests(marked)
    assert any(_marks_slow(d) for d in test.decorator_list)
    assert _all_slow(ast.parse("import pytest\npytestmark = [pytest.mark.slow]\n"))
