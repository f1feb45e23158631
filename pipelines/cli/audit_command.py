"""``creditlens audit``: the key-exposure audit as a command a scheduler or CI can gate on.

Exit codes: 0 nothing counted at or above --fail-on, 1 a counted finding at or above it, 2 the
audit could not run (bad inventory, missing scan path, bad settings, bad baseline, or anything
unexpected: a crash on odd input must never read as "finding found"). Every error is one line,
``creditlens: error: ...``, written without rich so nothing wraps or reads it as markup.
"""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from pipelines.config.accounts_file import CONFIG_ENV, DEFAULT_CONFIG
from pipelines.runtime.startup import imports_without_gc

# The audit's own modules (its probes, rich, the warehouse, Settings) are imported when the
# command runs, not when the CLI loads: every other command, and `--help`, would pay for them.
if TYPE_CHECKING:
    from pipelines.audit.report import AuditReport
    from pipelines.config.settings import Settings

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
MISSING_INVENTORY = (
    "missing option --inventory: the key inventory file, or an accounts file "
    f"({CONFIG_ENV} or ./{DEFAULT_CONFIG}) to derive it from (see docs/audit.md)"
)


def _cannot_run() -> tuple[type[Exception], ...]:
    """The failures said as their own line (exit 2), not as a crash."""
    from pipelines.api.errors import ConfigurationError
    from pipelines.audit.baseline import BaselineError
    from pipelines.audit.inventory import InventoryError
    from pipelines.audit.key_fingerprint import AuditSecretError
    from pipelines.audit.run import AuditCrash
    from pipelines.audit.scan import ScanPathError
    from pipelines.warehouse.lock import WarehouseBusy

    return (
        InventoryError,
        ScanPathError,
        ConfigurationError,
        AuditSecretError,
        BaselineError,
        AuditCrash,
        WarehouseBusy,  # the history could not be landed: said as the lock's own line
    )


class OutputFormat(StrEnum):
    TEXT = "text"
    JSON = "json"


# Each option's help, by its flag: the signature of ``audit`` then reads as the list of options,
# one a line, and the words that explain them stand together here.
_HELP = {
    "--inventory": "Key inventory (TOML or YAML): names, where each key is read from "
    "(env or file), where it is used, its intended scope. See docs/audit.md.",
    "--scan": "File or folder to search for copies of the keys (plain, base64, "
    "URL-encoded); repeatable. .git internals and binary files are skipped.",
    "--scan-git": "Git repository whose whole history is searched for the keys; repeatable. "
    "Hits name the commit and the path.",
    "--fail-on": "Exit 1 when a finding (not baselined) is at or above this severity: "
    "none, low, medium, high, critical.",
    "--format": "text (for people; whole lines when not on a terminal) or json (the full "
    "report on stdout, nothing else there).",
    "--json-out": "Write the full report as JSON to this file.",
    "--sarif-out": "Write the findings as SARIF 2.1.0 to this file.",
    "--baseline": "Findings recorded in this file (--write-baseline) are shown as baselined, "
    "counted apart and do not fail the run: only new findings do.",
    "--write-baseline": "Record every current finding in this file (by a stable finding id, "
    "never the key); this run then reports them as baselined.",
    "--base-url": "Platform API base URL for keys whose inventory entry has no base_url "
    "(default: the matching account's, else CREDITLENS_BASE_URL).",
    "--timeout": "Seconds to wait for each probe request.",
}


def _option(flag: str, **settings: Any) -> Any:
    """``typer.Option`` for ``flag`` with its help from _HELP (typer types it as Any)."""
    return typer.Option(flag, help=_HELP[flag], **settings)


def audit(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="PATH",
            help="Extra files or folders to scan, as --scan (a pre-commit hook appends the "
            "staged file names).",
            show_default=False,
        ),
    ] = None,
    inventory: Annotated[Path | None, _option("--inventory", show_default=False)] = None,
    scan: Annotated[list[Path] | None, _option("--scan", metavar="PATH")] = None,
    scan_git: Annotated[list[Path] | None, _option("--scan-git", metavar="PATH")] = None,
    fail_on: Annotated[str, _option("--fail-on", metavar="SEVERITY")] = "high",
    output_format: Annotated[
        OutputFormat, _option("--format", case_sensitive=False)
    ] = OutputFormat.TEXT,
    json_out: Annotated[Path | None, _option("--json-out")] = None,
    sarif_out: Annotated[Path | None, _option("--sarif-out")] = None,
    baseline: Annotated[Path | None, _option("--baseline", metavar="FILE")] = None,
    write_baseline_to: Annotated[Path | None, _option("--write-baseline", metavar="FILE")] = None,
    # No envvar: CREDITLENS_BASE_URL is an account's base URL already (or, in an accounts file,
    # the fallback of those that name none), and read as the flag it would override the URL of
    # every account the file gives one.
    base_url: Annotated[str | None, _option("--base-url")] = None,
    timeout: Annotated[float, _option("--timeout", min=0.1)] = 5.0,
) -> None:
    """Probe every inventoried API key, find where copies lie, report what to rotate.

    Keys are shown by fingerprint (HMAC with this installation's secret) and last 4
    characters, never in clear. Without --inventory, an accounts file (CREDITLENS_CONFIG or
    ./creditlens.toml) gives one key per account.
    """
    with imports_without_gc():
        from pipelines.audit.baseline import load_baseline
        from pipelines.audit.inventory import InventoryError
        from pipelines.audit.report import exit_code
        from pipelines.audit.run import run_audit
        from pipelines.config.settings import Settings
        from pipelines.warehouse.severity import Severity

    try:
        threshold = Severity.parse(fail_on)
    except ValueError as exc:
        fail(f"--fail-on: {exc}")
    # Nothing below calls fail(): typer.Exit is an Exception, and would read as a crash here.
    try:
        settings = Settings.from_env()
        if inventory is None and settings.config_file is None:
            raise InventoryError(MISSING_INVENTORY)
        accepted = load_baseline(baseline) if baseline is not None else None
        report = run_audit(
            inventory,
            [*(scan or []), *(paths or [])],
            git_repos=scan_git or [],
            base_url=base_url,
            settings=settings,
            api_settings_overrides={"timeout_s": timeout},
        )
        report = _baselined(report, accepted, baseline, write_baseline_to)
        derived = settings.config_file if inventory is None else None
        _publish(report, settings, output_format, json_out, sarif_out, derived)
        code = exit_code(report, threshold)
    except _cannot_run() as exc:
        fail(str(exc))
    except OSError as exc:
        where = f" {exc.filename}" if exc.filename else ""
        fail(f"cannot write{where}: {exc.strerror or exc}")
    except Exception as exc:  # exit 2, never 1, whatever went wrong
        fail(f"the audit crashed ({type(exc).__name__}): {exc}")
    raise typer.Exit(code)


def _baselined(
    report: AuditReport,
    accepted: frozenset[str] | None,
    baseline: Path | None,
    write_baseline_to: Path | None,
) -> AuditReport:
    """The report with accepted findings marked: --write-baseline records every current
    finding first, so the run that writes a baseline already reads as clean against it."""
    from pipelines.audit.baseline import apply_baseline, write_baseline

    if write_baseline_to is not None:
        accepted = write_baseline(report, write_baseline_to) | (accepted or frozenset())
        source = write_baseline_to
    else:
        source = baseline
    if accepted is None or source is None:
        return report
    return apply_baseline(report, accepted, source)


def _publish(
    report: AuditReport,
    settings: Settings,
    output_format: OutputFormat,
    json_out: Path | None,
    sarif_out: Path | None,
    derived_from: Path | None = None,
) -> None:
    """History first, then the files, then stdout: a run that fails to write a file says so
    before it prints a report that would read as complete. ``derived_from``: the accounts file
    the inventory was derived from, said first, since its keys list no places."""
    from pipelines.audit.report import to_json
    from pipelines.audit.sarif import to_sarif
    from pipelines.audit.terminal import emit, render, visible

    landed = land_report(report, settings)
    if json_out is not None:
        json_out.write_text(to_json(report), encoding="utf-8", errors="backslashreplace")
    if sarif_out is not None:
        sarif = json.dumps(to_sarif(report), indent=2) + "\n"
        sarif_out.write_text(sarif, encoding="utf-8")
    if derived_from is not None:
        # Not on stdout in JSON mode: stdout then holds the document and nothing else.
        out = sys.stderr if output_format is OutputFormat.JSON else sys.stdout
        emit(derived_line(derived_from, len(report.keys)), out)
    if output_format is OutputFormat.JSON:
        sys.stdout.write(to_json(report, ascii_only=True))
        sys.stdout.flush()
    else:
        render(report, sys.stdout)
    if landed:
        # Not on stdout in JSON mode: stdout then holds the document and nothing else.
        out = sys.stderr if output_format is OutputFormat.JSON else sys.stdout
        emit(f"audit rows appended to key_audit and key_audit_findings in {visible(landed)}", out)


def derived_line(source: Path, keys: int) -> str:
    from pipelines.audit.terminal import visible

    return (
        f"inventory derived from the accounts file {visible(source)}: {keys} key(s), one per "
        "key variable, scope full, no places listed (give --inventory to list them; --scan and "
        "--scan-git still find copies)"
    )


def fail(message: str) -> NoReturn:
    """One line on stderr, exit 2. Not through rich: it wraps long lines and reads [..] as
    markup; the message is made visible (no raw control characters) and kept on one line."""
    from pipelines.audit.terminal import emit, visible

    emit(f"creditlens: error: {visible(message)}", sys.stderr)
    raise typer.Exit(EXIT_ERROR)


def land_report(report: AuditReport, settings: Settings) -> Path | None:
    """History in the warehouse when one is configured (CREDITLENS_WAREHOUSE): an audit run
    from a CI job or a laptop should not create a warehouse nobody asked for."""
    if "warehouse" not in settings.model_fields_set:
        return None
    from pipelines.audit.run import land_audit

    landed = land_audit(report, settings.open_warehouse())
    from pipelines.cli.recorded import record_audit  # Dagster's imports: only when it landed

    record_audit(settings, report)  # so the catalog's key_audit says it was done
    return landed


def main() -> None:
    """Run the command on its own (the integrator registers ``audit`` in the main CLI)."""
    typer.run(audit)


if __name__ == "__main__":
    main()
