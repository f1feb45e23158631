"""`creditlens demo`: the whole pipeline against the embedded simulator, no configuration.

It sets the same CREDITLENS_* variables a user would, then runs the same code as `sync`,
`audit` and `report`, so the demo proves the real path rather than a shortcut, and its site has
every page a configured installation has (the key audit's too).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import typer

from dashboards.pages.findings import placements_text
from pipelines.alerts.demo import demo_alerts
from pipelines.audit.inventory import derived_inventory
from pipelines.audit.report import AuditReport, severity_counts
from pipelines.audit.run import land_audit, run_audit
from pipelines.cli.demo_statements import demo_statements
from pipelines.cli.report_command import run_report
from pipelines.cli.sync_command import run_sync, summary_lines
from pipelines.config.account import AccountSettings
from pipelines.config.accounts_file import CONFIG_ENV
from pipelines.config.settings import Settings
from simulator import Simulator, serve
from transforms.aggregate import STATEMENT_MONEY_COLUMNS


def run_demo(directory: str, seed: int) -> None:
    root = Path(directory).resolve()
    root.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    typer.echo("creditlens demo: starting the platform API simulator on loopback ...")
    sim = Simulator("default", seed=seed)
    company = sim.companies[0]
    with serve(sim) as server:
        typer.echo(f"  simulator: {server.url} (company {company.name!r}, key 'demo-key')")
        demo = Settings(
            warehouse=root / "warehouse.duckdb",
            reports_dir=root / "reports",
            accounts=(AccountSettings(name=company.name, base_url=server.url),),
        )
        os.environ.update(demo.to_env())
        os.environ[demo.account.api_key_env] = "demo-key"
        # The demo's own company only: an accounts file where it runs (CREDITLENS_CONFIG, or a
        # creditlens.toml in the working directory) is an agency's real accounts, not its.
        own = {name: value for name, value in os.environ.items() if name != CONFIG_ENV}
        settings = Settings.from_env(own, cwd=root)
        # No start date given: history discovery finds where the company's ledger begins.
        report = run_sync(settings, None, None)
        for line in summary_lines(report):
            typer.echo(f"  {line}")
        typer.echo(f"  {audit_line(demo_audit(settings, root))}")
        for line in demo_alerts(settings, root):
            typer.echo(f"  {line}")
        for line in demo_statements(settings, seed):
            typer.echo(f"  {line}")
    site = run_report(settings, None, None, None)
    analyst = settings.open_warehouse().analyst_copy
    typer.echo("")
    typer.echo(f"warehouse (pipeline):      {settings.warehouse}")
    typer.echo(f"analyst copy (read-only):  {analyst}")
    typer.echo(f"report:                    {site.index_html}")
    summary = report.reconciliation_summary()
    # The placements are counted from the rows the Reconciliation page lists, so the two agree.
    placements = site.placements.get(company.name, {})
    movements = sum(placements.values())
    if summary is not None and (movements or summary.mismatches):
        typer.echo("")
        typer.echo(
            f"The ledger hides {movements} balance movement(s) "
            f"({placements_text(placements)}) and the breakdown disagrees with it on "
            f"{summary.mismatches} item(s): see the report's Reconciliation page, "
            "`creditlens breaks list`, or the views hidden_movements and breakdown_mismatches:"
        )
        typer.echo(
            f'  duckdb -readonly {analyst} "SELECT break_id, placement, observed_on, gap '
            'FROM hidden_movements ORDER BY observed_on"'
        )
    typer.echo(f"done in {time.monotonic() - started:.1f}s. Try:")
    # Every line of the statement, so what it shows ties out: opening + movements = closing.
    query = (
        f"SELECT month, {', '.join(STATEMENT_MONEY_COLUMNS)} FROM monthly_statement ORDER BY month"
    )
    typer.echo(f'  duckdb -readonly {analyst} "{query}"')
    typer.echo("or, without the DuckDB command-line tool (pip does not install it):")
    typer.echo(
        f"  python -c \"import duckdb; duckdb.connect('{analyst}', read_only=True)"
        f".sql('{query}').show()\""
    )


def demo_audit(settings: Settings, root: Path) -> AuditReport:
    """The key audit as `creditlens audit` runs it from an accounts file: one key per account,
    probed against the simulator and landed in the warehouse. Its secret lives in the demo's
    folder unless one is configured, so the demo writes nothing outside it."""
    inventory = derived_inventory(settings.accounts, root)
    state_dir = None if "audit_state_dir" in settings.model_fields_set else root
    audit = run_audit(inventory, settings=settings, state_dir=state_dir)
    land_audit(audit, settings.open_warehouse())
    return audit


def audit_line(audit: AuditReport) -> str:
    counts = severity_counts(audit)
    found = ", ".join(f"{n} {severity}" for severity, n in counts.items() if n) or "no finding"
    return (
        f"key audit: {len(audit.keys)} key(s) probed, {found} (the report's API key audit "
        "page; `creditlens audit` for the full report)"
    )
