"""``creditlens audit``: the key-exposure audit as a command a scheduler or CI can gate on.

Exit codes: 0 nothing at or above --fail-on, 1 a finding at or above it, 2 the audit could
not run (bad inventory, missing scan path, bad settings).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from pipelines.api.errors import ConfigurationError
from pipelines.audit.inventory import InventoryError
from pipelines.audit.key_fingerprint import AuditSecretError
from pipelines.audit.report import AuditReport, KeyStatus, exit_code, to_json
from pipelines.audit.run import run_audit
from pipelines.audit.sarif import to_sarif
from pipelines.audit.scan import ScanPathError
from pipelines.audit.severity import Severity
from pipelines.settings import Settings

_STYLE = {
    Severity.CRITICAL: "bold red",
    Severity.HIGH: "red",
    Severity.MEDIUM: "yellow",
    Severity.LOW: "cyan",
    Severity.NONE: "green",
}


def audit(
    inventory: Annotated[
        Path,
        typer.Option(
            "--inventory",
            help="Key inventory (TOML or YAML): names, where each key is read from "
            "(env or file), where it is used, its intended scope. See docs/audit.md.",
        ),
    ],
    scan: Annotated[
        list[Path] | None,
        typer.Option(
            "--scan",
            metavar="PATH",
            help="File or folder to search for copies of the keys (plain, base64, "
            "URL-encoded); repeatable. .git internals and binary files are skipped.",
        ),
    ] = None,
    fail_on: Annotated[
        str,
        typer.Option(
            "--fail-on",
            metavar="SEVERITY",
            help="Exit 1 when a finding is at or above this severity: "
            "none, low, medium, high, critical.",
        ),
    ] = "high",
    json_out: Annotated[
        Path | None,
        typer.Option("--json-out", help="Write the full report as JSON to this file."),
    ] = None,
    sarif_out: Annotated[
        Path | None,
        typer.Option("--sarif-out", help="Write the findings as SARIF 2.1.0 to this file."),
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url",
            envvar="CREDITLENS_BASE_URL",
            help="Platform API base URL for keys whose inventory entry has no base_url.",
        ),
    ] = None,
    timeout: Annotated[
        float,
        typer.Option("--timeout", min=0.1, help="Seconds to wait for each probe request."),
    ] = 5.0,
) -> None:
    """Probe every inventoried API key, find where copies lie, report what to rotate.

    Keys are shown by fingerprint (HMAC with this installation's secret) and last 4
    characters, never in clear.
    """
    console = Console()
    errors = Console(stderr=True)
    try:
        threshold = Severity.parse(fail_on)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--fail-on") from None
    try:
        settings = Settings.from_env()
        report = run_audit(
            inventory,
            scan or [],
            base_url=base_url,
            settings=settings,
            api_settings_overrides={"timeout_s": timeout},
        )
    except (InventoryError, ScanPathError, ConfigurationError, AuditSecretError) as exc:
        errors.print(f"[red]audit failed:[/red] {exc}", markup=True, highlight=False)
        raise typer.Exit(2) from None
    landed = land_report(report, settings)
    if json_out is not None:
        json_out.write_text(to_json(report), encoding="utf-8")
    if sarif_out is not None:
        sarif_out.write_text(json.dumps(to_sarif(report), indent=2) + "\n", encoding="utf-8")
    render(report, console)
    if landed:
        console.print(f"audit rows appended to key_audit in {landed}", highlight=False)
    raise typer.Exit(exit_code(report, threshold))


def land_report(report: AuditReport, settings: Settings) -> Path | None:
    """History in the warehouse when one is configured (CREDITLENS_WAREHOUSE): an audit run
    from a CI job or a laptop should not create a warehouse nobody asked for."""
    if "warehouse" not in settings.model_fields_set:
        return None
    warehouse = settings.open_warehouse()
    warehouse.append("key_audit", report.rows())
    warehouse.publish_analyst_copy()
    return warehouse.path


def render(report: AuditReport, console: Console) -> None:
    table = Table(title=f"Key-exposure audit ({len(report.keys)} keys)")
    for column in ("Key", "Fingerprint", "Last 4", "Status", "Scope", "Billing readable"):
        table.add_column(column)
    table.add_column("Severity")
    table.add_column("Findings", justify="right")
    for key in report.keys:
        billing = ", ".join(key.billing_readable) or "-"
        if key.status is not KeyStatus.ACTIVE:
            billing = "-"
        table.add_row(
            key.name,
            key.fingerprint or "-",
            key.last4 or "-",
            key.status.value,
            ",".join(key.intended_scope),
            billing,
            f"[{_STYLE[key.severity]}]{key.severity.value}[/]",
            str(len(key.findings)),
        )
    console.print(table)
    for finding in sorted(report.findings, key=lambda f: f.severity, reverse=True):
        style = _STYLE[finding.severity]
        console.print(
            f"[{style}]{finding.severity.value.upper():8}[/] {finding.rule_id} ",
            finding.message,
            markup=True,
            highlight=False,
            sep="",
        )
    if report.scan.roots:
        stats = report.scan
        console.print(
            f"scanned {stats.files_scanned} file(s); skipped {stats.skipped_binary} binary, "
            f"{stats.skipped_large} over {stats.max_file_bytes} bytes, "
            f"{stats.skipped_unreadable} unreadable",
            highlight=False,
        )


def main() -> None:
    """Run the command on its own (the integrator registers ``audit`` in the main CLI)."""
    typer.run(audit)


if __name__ == "__main__":
    main()
