"""The `creditlens` command."""

from __future__ import annotations

import logging
import sys
from enum import StrEnum
from typing import Annotated

import typer

# Typer 0.29 carries its own copy of click; its usage errors are these classes, not click's.
from typer._click.exceptions import NoArgsIsHelpError, UsageError

from pipelines.cli.audit_command import audit
from pipelines.cli.errors import clear_errors
from pipelines.runtime.startup import imports_without_gc
from simulator.cli import simulate

app = typer.Typer(
    name="creditlens",
    help="Billing and consumption analytics for the conversational-agent platform.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.command()
def sync(
    since: Annotated[
        str | None,
        typer.Option(help="First UTC day to sync (default: last synced day minus the lookback)."),
    ] = None,
    until: Annotated[
        str | None, typer.Option(help="Last UTC day to sync (default: today).")
    ] = None,
    fail_on_breaks: Annotated[
        bool,
        typer.Option(
            "--fail-on-breaks",
            help="Exit 3 when reconciliation finds an unacknowledged break (for CI gates).",
        ),
    ] = False,
    account: Annotated[
        list[str] | None,
        typer.Option(
            "--account",
            help="Only this account of the accounts file (repeat for several; default: all).",
        ),
    ] = None,
    full_reconcile: Annotated[
        bool,
        typer.Option(
            "--full-reconcile",
            help="Re-derive every account's whole history instead of starting from the first "
            "day this sync touched.",
        ),
    ] = False,
) -> None:
    """Sync the ledger and the billing snapshots of every account into CREDITLENS_WAREHOUSE,
    several accounts at once (CREDITLENS_ACCOUNT_CONCURRENCY), then reconcile. An account that
    fails is one line on stderr and exit 1; the others land."""
    with clear_errors():
        with imports_without_gc():
            from pipelines.cli.alerts_command import after_sync
            from pipelines.cli.errors import BadFlag
            from pipelines.cli.statements_command import after_sync as close_after_sync
            from pipelines.cli.sync_command import failure_lines, run_sync, summary_lines
            from pipelines.config.settings import Settings
            from pipelines.warehouse.lock import WarehouseBusy
            from pipelines.warehouse.publish import publishing_once

        # The alerts and the month close write after the sync: the analyst copy is published
        # once, after all of them. Alerts are evaluated and delivered whatever became of the
        # sync (a failure is what on-call must hear of); its own failure is raised after them.
        settings = Settings.from_env()
        selected = settings.selecting(account or ())
        report, stopped, failed = None, None, []
        with publishing_once():
            try:
                report = run_sync(
                    settings, since, until, account or (), full_reconcile=full_reconcile
                )
            except BadFlag:
                raise  # said before any request: nothing happened to alert about
            except Exception as exc:
                stopped = exc
            else:
                for line in summary_lines(report):
                    typer.echo(line)
                failed = failure_lines(report)
                for line in failed:
                    typer.echo(f"creditlens: error: {line}", err=True)
            # A warehouse another process holds: that process evaluates the alerts when it is
            # done, and waiting for it a second time would double the wait already said.
            busy = isinstance(stopped, WarehouseBusy)
            alert_lines, warnings = ([], []) if busy else after_sync(selected)
            closed, close_warnings = close_after_sync(selected) if report else ([], [])
        for line in [*alert_lines, *closed]:
            typer.echo(line)
        for line in [*warnings, *close_warnings]:
            typer.echo(f"creditlens: warning: {line}", err=True)
        if stopped is not None:
            raise stopped
    if failed:
        raise typer.Exit(1)
    if fail_on_breaks and report is not None and report.has_breaks():
        typer.echo(
            "creditlens: reconciliation found unacknowledged breaks (--fail-on-breaks)", err=True
        )
        raise typer.Exit(3)


@app.command()
def report(
    month: Annotated[
        str | None, typer.Option(help="Month of the statement, YYYY-MM (default: latest full).")
    ] = None,
    account: Annotated[
        str | None, typer.Option(help="Only this account (default: every account).")
    ] = None,
    out: Annotated[
        str | None, typer.Option(help="Output folder (default: CREDITLENS_REPORTS_DIR).")
    ] = None,
) -> None:
    """Build the offline report site from the warehouse alone (no API calls)."""
    with clear_errors():
        with imports_without_gc():
            from pipelines.cli.report_command import run_report
            from pipelines.config.settings import Settings

        result = run_report(Settings.from_env(), month, account, out)
        for notice in result.notices:
            typer.echo(f"note: {notice}")
        typer.echo(f"report: {result.index_html} ({len(result.pages)} pages)")


@app.command()
def demo(
    directory: Annotated[
        str, typer.Option("--dir", help="Where the demo writes its warehouse and reports.")
    ] = "creditlens-demo",
    seed: Annotated[int, typer.Option(help="Seed of the simulated company.")] = 0,
) -> None:
    """Start the simulator in-process, sync its whole history, and show where everything is."""
    with clear_errors():
        with imports_without_gc():
            from pipelines.cli.demo_command import run_demo

        run_demo(directory, seed)


breaks_app = typer.Typer(
    help="Hidden movements and breakdown mismatches: list them, acknowledge the known ones.",
    no_args_is_help=True,
)
app.add_typer(breaks_app, name="breaks")


@breaks_app.command("list")
def breaks_list(
    show_all: Annotated[bool, typer.Option("--all", help="Include acknowledged findings.")] = False,
    account: Annotated[
        str | None, typer.Option(help="Only this account's findings (default: every account).")
    ] = None,
) -> None:
    """Findings of the latest reconciliation of every account, open ones only unless --all."""
    with clear_errors():
        with imports_without_gc():
            from pipelines.cli.breaks_command import list_lines
            from pipelines.config.settings import Settings

        for line in list_lines(Settings.from_env(), show_all, account):
            typer.echo(line)


@breaks_app.command("ack")
def breaks_ack(
    break_id: Annotated[str, typer.Argument(help="The finding's id (creditlens breaks list).")],
    reason: Annotated[
        str, typer.Option("--reason", help="Why it is known and explained (required).")
    ],
) -> None:
    """Acknowledge a finding: --fail-on-breaks and the checks stop counting it while its gap
    stays the same."""
    with clear_errors():
        with imports_without_gc():
            from pipelines.cli.breaks_command import acknowledge
            from pipelines.config.settings import Settings

        typer.echo(acknowledge(Settings.from_env(), break_id, reason, ack=True))


@breaks_app.command("unack")
def breaks_unack(
    break_id: Annotated[str, typer.Argument(help="The finding's id.")],
) -> None:
    """Withdraw an acknowledgement: the finding counts again."""
    with clear_errors():
        with imports_without_gc():
            from pipelines.cli.breaks_command import acknowledge
            from pipelines.config.settings import Settings

        typer.echo(acknowledge(Settings.from_env(), break_id, None, ack=False))


alerts_app = typer.Typer(
    help="Alerts on balance, runway, budgets, spend anomalies, findings, syncs (docs/alerts.md).",
    no_args_is_help=True,
)
app.add_typer(alerts_app, name="alerts")


@alerts_app.command("list")
def alerts_list(
    show_all: Annotated[
        bool, typer.Option("--all", help="Include recovered and acknowledged alerts.")
    ] = False,
    account: Annotated[
        str | None, typer.Option(help="Only this account's alerts (default: every account).")
    ] = None,
) -> None:
    """Alerts firing and not acknowledged, or every alert with --all."""
    with clear_errors():
        with imports_without_gc():
            from pipelines.cli.alerts_command import list_lines
            from pipelines.config.settings import Settings

        for line in list_lines(Settings.from_env(), show_all, account):
            typer.echo(line)


@alerts_app.command("ack")
def alerts_ack(
    alert_id: Annotated[str, typer.Argument(help="The alert's id (creditlens alerts list).")],
    reason: Annotated[str, typer.Option("--reason", help="Why it is known (required).")],
) -> None:
    """Acknowledge an alert: a state alert is silent until it recovers, an event is closed."""
    with clear_errors():
        with imports_without_gc():
            from pipelines.cli.alerts_command import ack
            from pipelines.config.settings import Settings

        typer.echo(ack(Settings.from_env(), alert_id, reason))


@alerts_app.command("check")
def alerts_check() -> None:
    """Evaluate every rule and deliver what is due, without syncing (for cron, and `stale`)."""
    with clear_errors():
        with imports_without_gc():
            from pipelines.cli.alerts_command import check_and_deliver
            from pipelines.config.settings import Settings

        lines, warnings = check_and_deliver(Settings.from_env())
        for line in lines:
            typer.echo(line)
        for line in warnings:
            typer.echo(f"creditlens: warning: {line}", err=True)


@alerts_app.command("test")
def alerts_test(
    channel: Annotated[str, typer.Argument(help="A channel's name ([[channels]] name).")],
) -> None:
    """Send a test message to a channel, and say in one line whether it accepted it."""
    with clear_errors():
        with imports_without_gc():
            from pipelines.cli.alerts_command import test_line
            from pipelines.config.settings import Settings

        ok, line = test_line(Settings.from_env(), channel)
        typer.echo(line, err=not ok)
    if not ok:
        raise typer.Exit(1)


class FocusFileFormat(StrEnum):
    parquet = "parquet"
    csv = "csv"


export_app = typer.Typer(
    help="Datasets for other tools, from the warehouse alone (docs/focus.md).",
    no_args_is_help=True,
)
app.add_typer(export_app, name="export")


@export_app.command("focus")
def export_focus(
    month: Annotated[str, typer.Option(help="The UTC month to export, YYYY-MM.")],
    out: Annotated[str, typer.Option(help="Folder the dataset is written to.")],
    account: Annotated[
        str | None, typer.Option(help="Only this account (default: every account).")
    ] = None,
    file_format: Annotated[
        FocusFileFormat, typer.Option("--format", help="parquet (default) or csv.")
    ] = FocusFileFormat.parquet,
    skip_missing: Annotated[
        bool,
        typer.Option(
            "--skip-missing",
            help="Export the other accounts when one has no data for the month because it "
            "never synced or its latest sync failed (named on stderr); default: refuse.",
        ),
    ] = False,
) -> None:
    """A month's consumption as a FOCUS 1.2 dataset (one row per ledger entry and per hidden
    movement), priced by each account's credit_price in its billing_currency."""
    with clear_errors():
        with imports_without_gc():
            from pipelines.cli.export_command import export_lines, run_export_focus
            from pipelines.config.settings import Settings

        result = run_export_focus(
            Settings.from_env(), month, account, out, file_format.value, skip_missing
        )
        for line in result.missing:
            typer.echo(f"creditlens: warning: left out of the FOCUS export: {line}", err=True)
        for line in export_lines(result, month):
            typer.echo(line)


@app.command()
def close(
    month: Annotated[
        str | None,
        typer.Option(help="Only this month, YYYY-MM; one closed already is sent again."),
    ] = None,
    account: Annotated[
        str | None, typer.Option(help="Only this account (default: every account).")
    ] = None,
) -> None:
    """Close every month a sync covered past its grace period (close_after_days), restate the
    closed months whose figures changed, and send them (docs/statements.md)."""
    with clear_errors():
        with imports_without_gc():
            from pipelines.cli.statements_command import close as run_close
            from pipelines.config.settings import Settings

        settings = Settings.from_env().selecting([account] if account else ())
        lines, warnings, ok = run_close(settings, month)
        for line in lines:
            typer.echo(line)
        for line in warnings:
            typer.echo(f"creditlens: {'warning' if ok else 'error'}: {line}", err=True)
    if not ok:
        raise typer.Exit(1)


statements_app = typer.Typer(
    help="Closed monthly statements: closes, restatements, deliveries (docs/statements.md).",
    no_args_is_help=True,
)
app.add_typer(statements_app, name="statements")


@statements_app.command("list")
def statements_list(
    account: Annotated[
        str | None, typer.Option(help="Only this account's statements (default: every account).")
    ] = None,
) -> None:
    """Every closed month: its version, when it was closed and restated (line by line), and
    where its messages went."""
    with clear_errors():
        with imports_without_gc():
            from pipelines.cli.statements_command import list_lines
            from pipelines.config.settings import Settings

        for line in list_lines(Settings.from_env(), account):
            typer.echo(line)


warehouse_app = typer.Typer(
    help="The warehouse itself: move it into a new file or a DuckLake (docs/lake.md).",
    no_args_is_help=True,
)
app.add_typer(warehouse_app, name="warehouse")


@warehouse_app.command("migrate")
def warehouse_migrate(
    to: Annotated[
        str,
        typer.Option(
            "--to",
            help="Where to: a new DuckDB file, or a DuckLake location "
            "(ducklake:postgres:dbname=... host=...) with no warehouse in it yet.",
        ),
    ],
    source: Annotated[
        str | None,
        typer.Option(
            "--from",
            help="What to move: a warehouse file, or a folder EXPORT DATABASE wrote "
            "(default: CREDITLENS_WAREHOUSE).",
        ),
    ] = None,
) -> None:
    """Move every table and row of a warehouse into a new one, in one transaction, counted on
    both sides; the source is left as it was."""
    with clear_errors():
        with imports_without_gc():
            from pipelines.cli.warehouse_command import migrate

        for line in migrate(to, source):
            typer.echo(line)


app.command("audit", help="Audit API-key exposure: which keys read billing data, and where.")(audit)
app.command("simulate", help="Serve the platform API simulator (billing endpoints) on loopback.")(
    simulate
)


def main() -> None:
    """Runs the app, turning a bad flag or argument into one ``creditlens: error:`` line (exit
    2), like every other failure, instead of click's framed usage box that CI logs wrap."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        code = app(standalone_mode=False)
    except NoArgsIsHelpError as exc:
        exc.show()
        code = 2
    except UsageError as exc:
        message = " ".join(exc.format_message().split())
        hint = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx is not None else ""
        typer.echo(f"creditlens: error: {message}{hint}", err=True)
        code = 2
    except typer.Abort:
        typer.echo("creditlens: interrupted", err=True)
        code = 130
    sys.exit(code if isinstance(code, int) else 0)
