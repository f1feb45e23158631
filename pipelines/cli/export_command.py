"""`creditlens export focus`: a month of consumption as a FOCUS 1.2 dataset for cost tools.

Reads the warehouse alone (no API call); the mapping is transforms/focus.py's, the query
pipelines/warehouse/focus_read.py's. The file appears whole or not at all (written beside its
final name, then renamed), so a loader watching the folder never reads half a month.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Literal

import polars as pl

from pipelines.api.errors import ConfigurationError
from pipelines.cli.errors import UsageError
from pipelines.config.account import AccountSettings
from pipelines.config.settings import Settings
from pipelines.warehouse.focus_read import read_month, unsynced
from pipelines.warehouse.instances import warehouse_exists
from pipelines.warehouse.lake import shown
from transforms.focus import FOCUS_VERSION, Pricing, as_csv_text, focus_rows, month_label
from transforms.focus_metadata import schema_metadata

FocusFormat = Literal["parquet", "csv"]
FORMATS: tuple[FocusFormat, ...] = ("parquet", "csv")


@dataclass(frozen=True)
class Exported:
    path: Path
    rows: int
    accounts: tuple[str, ...]
    empty_accounts: tuple[str, ...]  # selected accounts with nothing in the month
    # Accounts left out (--skip-missing): no data for the month because they never synced or
    # their latest sync failed, one line each saying why.
    missing: tuple[str, ...] = ()


def pricing_of(accounts: tuple[AccountSettings, ...]) -> dict[str, Pricing]:
    """Every account's price, or one line refusing the export: which account lacks which field,
    and where to set it. FOCUS needs money, and the API gives only credits."""
    missing = []
    for account in accounts:
        fields = [
            name for name in ("credit_price", "billing_currency") if getattr(account, name) is None
        ]
        if fields:
            missing.append(f"account {account.name} has no {' and no '.join(fields)}")
    if missing:
        raise ConfigurationError(
            f"FOCUS export refused: {'; '.join(missing)} (the API gives credits, not money: set "
            "credit_price, the price of one credit, and billing_currency, an ISO 4217 code, in "
            "the account's [[accounts]] table or [defaults] of the accounts file, or "
            "CREDITLENS_CREDIT_PRICE and CREDITLENS_BILLING_CURRENCY for a single account)"
        )
    return {
        a.name: Pricing(
            a.credit_price,  # type: ignore[arg-type]
            a.billing_currency,  # type: ignore[arg-type]
            a.focus_account_id(),
            frozenset(a.free_credit_types),
            frozenset(a.recurring_credit_types),
        )
        for a in accounts
    }


def parse_month(text: str) -> date:
    """``--month``: exactly YYYY-MM, the first day of that UTC month."""
    if re.fullmatch(r"\d{4}-\d{2}", text.strip()):
        try:
            return date.fromisoformat(f"{text.strip()}-01")
        except ValueError:
            pass
    raise UsageError(f"--month must look like 2025-03, got {text!r}")


def _replaced(target: Path, write: Callable[[Path], object]) -> None:
    """``write`` under a hidden name in ``target``'s folder, then renamed over ``target``."""
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        write(partial)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


def write_atomically(dataset: pl.DataFrame, target: Path, file_format: FocusFormat) -> Path:
    """The dataset and, beside it first, its FOCUS metadata (``.metadata.json``), named in the
    Parquet file too: a loader that sees the data finds its schema. Returns the metadata's path."""
    try:
        version = package_version("creditlens")
    except PackageNotFoundError:
        version = "unknown"
    metadata = schema_metadata(dataset.schema, datetime.now(UTC), version)
    described = target.with_name(f"{target.stem}.metadata.json")
    text = json.dumps(metadata, indent=2) + "\n"
    _replaced(described, lambda path: path.write_text(text, encoding="utf-8"))
    if file_format == "parquet":
        keys = {"FocusVersion": FOCUS_VERSION, "FocusSchemaId": metadata["SchemaId"]}
        keys["FocusMetadata"] = described.name
        _replaced(
            target,
            lambda path: dataset.write_parquet(
                path, compression="zstd", statistics=True, metadata=keys
            ),
        )
    else:
        rows = as_csv_text(dataset)
        _replaced(target, lambda path: rows.write_csv(path, line_terminator="\n", null_value=""))
    return described


def run_export_focus(
    settings: Settings,
    month: str,
    account: str | None,
    out: str,
    file_format: str,
    skip_missing: bool = False,
) -> Exported:
    if file_format not in FORMATS:
        raise UsageError(f"--format must be parquet or csv, got {file_format!r}")
    first = parse_month(month)
    if not warehouse_exists(settings.warehouse):
        raise UsageError(
            f"no warehouse at {shown(settings.warehouse)} (CREDITLENS_WAREHOUSE): "
            "run `creditlens sync`"
        )
    selected = settings.selecting([account] if account else []).accounts
    pricing = pricing_of(selected)
    ledger = read_month(
        settings.warehouse, list(pricing), first, lock_timeout_s=settings.lock_timeout_s
    )
    with_data = set(ledger.entries["account"].to_list()) | set(ledger.hidden["account"].to_list())
    why = unsynced(settings.warehouse, [n for n in pricing if n not in with_data],
                   lock_timeout_s=settings.lock_timeout_s)  # fmt: skip
    missing = tuple(f"{name}: {reason}" for name, reason in why.items())
    if missing and not skip_missing:
        raise UsageError(
            f"FOCUS export refused: no data for {month_label(first)} of "
            f"{'; '.join(missing)}; a FinOps tool would read it as an idle month. Fix the sync "
            "and run `creditlens sync`, or pass --skip-missing to export the others"
        )
    pricing = {n: p for n, p in pricing.items() if n not in why}
    dataset = focus_rows(ledger.entries, ledger.hidden, first, pricing)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"focus-{month_label(first)}.{file_format}"
    write_atomically(dataset, target, file_format)  # type: ignore[arg-type]
    present = set(dataset["SubAccountId"].unique().to_list())
    names = tuple(pricing)
    empty = tuple(n for n in names if n not in present)
    return Exported(target, dataset.height, names, empty, missing)


def export_lines(result: Exported, month: date | str) -> list[str]:
    """What the command says: where, how many rows, and an empty month in one line."""
    lines = []
    label = month if isinstance(month, str) else month_label(month)
    if result.empty_accounts:
        nothing = ", ".join(result.empty_accounts)
        if result.rows == 0:
            lines.append(
                f"note: no entries and no hidden movements in {label} for {nothing}: "
                "wrote an empty FOCUS dataset (every column, no rows)"
            )
        else:
            lines.append(f"note: nothing in {label} for {nothing}")
    lines.append(
        f"focus: {result.path} ({result.rows} rows, FOCUS {FOCUS_VERSION}, "
        f"{len(result.accounts)} account{'s' if len(result.accounts) != 1 else ''})"
    )
    return lines
