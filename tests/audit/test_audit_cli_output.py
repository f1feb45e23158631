"""Output that works in CI: every finding in full, whole lines off a terminal, JSON on stdout,
one-line errors, exit 2 (never 1) when the audit cannot run, file names shown literally."""

from __future__ import annotations

import io
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pipelines.audit import key_fingerprint, last4
from pipelines.audit.report import AuditReport, ScanStats, severity_counts
from pipelines.audit.run import run_audit
from pipelines.audit.terminal import render, totals, visible
from pipelines.cli.audit_command import MISSING_INVENTORY
from simulator import ServerHandle, Simulator
from tests.audit.audit_cli_helpers import assert_no_key, one_error_line, run_cli, write
from tests.audit.audit_helpers import SECRET, key_block, write_inventory

LONG_NAME = "nightly-sync-of-the-billing-warehouse-for-every-account"
MARKUP = "[bold]x[/bold].env"
LINK = "[link=https://evil.example]y[/link].env"
ESCAPE = "esc\x1b[31mred\u202e.env"


@pytest.fixture
def estate(tmp_path: Path, sim: Simulator, server: ServerHandle) -> dict:
    """Copies of a campaigns key that reads billing, in files with hostile names."""
    full, revoked = sim.key_for("acme"), sim.key_for("acme", revoked=True)
    repo = tmp_path / "repo"
    for name in (MARKUP, LINK, ESCAPE):
        write(repo / name, f"\n\nAPI_KEY={full}\n")
    (repo / os.fsdecode(b"bad\xffname.env")).write_text(f"KEY={full}\n")
    write(repo / "old.env", f"OLD={revoked}\n")
    (tmp_path / "ops").mkdir()
    inventory = write_inventory(
        tmp_path / "ops",
        key_block(LONG_NAME, "SYNC", "campaigns", ("creditlens sync", "server")),
        key_block("old", "OLD", "full", ("web/static/widget.js", "client-side")),
    )
    return {
        "inventory": inventory,
        "repo": repo,
        "env": {"SYNC": full, "OLD": revoked},
        "keys": [full, revoked],
        "base": ["--inventory", str(inventory), "--base-url", server.url],
    }


def _audited(estate: dict[str, Any]) -> AuditReport:
    """The estate audited in-process, as the CLI runs it."""
    return run_audit(
        estate["inventory"],
        [estate["repo"]],
        base_url=estate["base"][-1],
        secret=SECRET,
        env=estate["env"],
    )


def test_every_finding_is_shown_whole_with_proof_place_and_remedy(estate: dict) -> None:
    result = run_cli([*estate["base"], "--scan", str(estate["repo"])], estate["env"])
    assert result.exit_code == 1, result.output
    out = result.stdout
    assert "…" not in out  # nothing cut at 80 columns
    full, revoked = estate["keys"]
    for key in (full, revoked):
        assert key_fingerprint(key, SECRET) in out and last4(key) in out
    report = _audited(estate)
    assert len(report.findings) >= 6
    for finding in report.findings:
        assert finding.finding_id in out
        head = next(line for line in out.splitlines() if finding.finding_id in line)
        assert finding.rule_id in head and finding.severity.value.upper() in head
        assert visible(finding.key_name) in head
    # What was proved, where, and what to do.
    assert "proved: billing endpoints answered with data: consumption, breakdown" in out
    assert "proved: every endpoint answered 401 (rejected)" in out
    assert "at: inventory place 'creditlens sync' (server)" in out
    assert f"{estate['repo'] / MARKUP}:3:9 (plain)" in out
    assert f"{estate['repo'] / LINK}:3:9 (plain)" in out
    assert f"{estate['repo']}/esc\\x1b[31mred\\u202e.env:3:9 (plain)" in out
    assert f"{estate['repo']}/bad\\udcffname.env:1:5 (plain)" in out
    assert "do: Rotate the key" in out and "do: Remove the key" in out
    # Counts: the same function the exit code uses.
    counts = severity_counts(report)
    summary = ", ".join(f"{counts[s]} {s}" for s in ("critical", "high", "medium", "low"))
    assert f"findings: {summary}; 0 baselined; 0 scan hit(s) suppressed" in out
    assert "\x1b" not in result.output and "\u202e" not in result.output
    assert_no_key([result.output], estate["keys"])


def test_format_json_puts_the_report_and_nothing_else_on_stdout(
    estate: dict, tmp_path: Path
) -> None:
    json_out, sarif_out = tmp_path / "a.json", tmp_path / "a.sarif"
    args = [*estate["base"], "--scan", str(estate["repo"]), "--format", "json"]
    args += ["--json-out", str(json_out), "--sarif-out", str(sarif_out)]
    result = run_cli(args, estate["env"])
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert doc == json.loads(json_out.read_text(encoding="utf-8"))
    assert doc["findings_by_severity"]["high"] >= 1
    assert all(ord(c) < 128 for c in result.stdout)  # escapes only: safe on any terminal
    paths = {loc["path"] for k in doc["keys"] for f in k["findings"] for loc in f["locations"]}
    assert str(estate["repo"] / ESCAPE) in paths and str(estate["repo"] / LINK) in paths
    json.loads(sarif_out.read_text(encoding="utf-8"))
    assert_no_key([result.output, json_out.read_text(), sarif_out.read_text()], estate["keys"])


def test_a_terminal_gets_a_table_that_folds_and_reads_no_markup(estate: dict) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    report = _audited(estate)
    stream = Tty()
    render(report, stream)
    text = stream.getvalue()
    assert "Key-exposure audit (2 keys)" in text
    assert f"{estate['repo'] / LINK}:3:9 (plain)" in text
    assert f"{estate['repo'] / MARKUP}:3:9 (plain)" in text
    assert "\x1b[31mred" not in text and "\u202e" not in text
    assert "esc\\x1b[31mred\\u202e.env" in text


@pytest.mark.parametrize("name", ["[red]missing[/red]", "[link=x]gone", "very" * 60, "a\x1b[2Jb"])
def test_errors_are_one_line_and_exit_2(estate: dict, tmp_path: Path, name: str) -> None:
    missing = tmp_path / name
    result = run_cli([*estate["base"], "--scan", str(missing)], estate["env"])
    line = one_error_line(result)
    assert line == f"creditlens: error: scan path {visible(missing)} does not exist"
    assert result.stdout == ""


def test_a_scan_path_that_loops_is_exit_2_not_a_clean_scan(estate: dict, tmp_path: Path) -> None:
    loop = tmp_path / "loop"
    os.symlink(tmp_path / "loop2", loop)
    os.symlink(loop, tmp_path / "loop2")
    result = run_cli([*estate["base"], "--scan", str(loop)], estate["env"])
    line = one_error_line(result)
    assert f"scan path {loop} is a symlink loop" in line and "nothing of it" in line


def test_the_totals_count_unreadable_files_and_folders_both() -> None:
    stats = ScanStats(
        roots=("/r",), files_scanned=3, skipped_unreadable=1, skipped_unreadable_dirs=2
    )
    report = AuditReport(
        run_id="r", audited_at=datetime.now(UTC), inventory="i.toml", keys=(), scan=stats
    )
    assert "1 unreadable file(s), 2 unreadable folder(s)" in totals(report)[-1]


def test_bad_inventory_fail_on_and_baseline_are_one_line_errors(
    estate: dict, tmp_path: Path
) -> None:
    bad = write(tmp_path / "keys.toml", '[[keys]]\nname = "x"\nkey = "sk_live_abcdefabcdef"\n')
    line = one_error_line(run_cli(["--inventory", str(bad)], {}))
    assert "must not be written" in line and "sk_live_abcdef" not in line
    line = one_error_line(run_cli([*estate["base"], "--fail-on", "severe"], estate["env"]))
    assert line.startswith("creditlens: error: --fail-on: unknown severity 'severe'")
    missing = one_error_line(run_cli([], {})).removeprefix("creditlens: error: ")
    assert missing == MISSING_INVENTORY
    not_json = write(tmp_path / "base.json", "{")
    line = one_error_line(run_cli([*estate["base"], "--baseline", str(not_json)], estate["env"]))
    assert "is not JSON" in line


def test_a_crash_on_odd_input_exits_2_never_1(
    estate: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    full = estate["keys"][0]

    def explode(*args: object, **kwargs: object) -> None:
        raise RuntimeError(f"odd input near {full} [/bold]")

    monkeypatch.setattr("pipelines.audit.run.assess", explode)
    result = run_cli([*estate["base"], "--scan", str(estate["repo"])], estate["env"])
    line = one_error_line(result)
    assert "the audit crashed (RuntimeError: odd input near" in line and "[/bold]" in line
    assert_no_key([result.output], estate["keys"])


def test_an_unwritable_output_file_is_exit_2(estate: dict, tmp_path: Path) -> None:
    target = tmp_path / "no-such-dir" / "audit.json"
    result = run_cli([*estate["base"], "--json-out", str(target)], estate["env"])
    assert "cannot write" in one_error_line(result)


def test_positional_paths_are_scanned_as_a_pre_commit_hook_passes_them(estate: dict) -> None:
    staged = [str(estate["repo"] / "old.env"), str(estate["repo"] / MARKUP)]
    result = run_cli([*estate["base"], *staged], estate["env"])
    assert result.exit_code == 1, result.output
    assert "scanned 2 file(s)" in result.stdout
    assert f"{estate['repo'] / MARKUP}:3:9" in result.stdout
    assert f"{estate['repo'] / 'old.env'}:1:5" in result.stdout
    assert f"{estate['repo'] / LINK}" not in result.stdout
