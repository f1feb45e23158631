"""creditlens's own settings (beyond how to reach the API), read from CREDITLENS_* variables.

One object, so the CLI, the Dagster definitions and the demo all read the same names and
defaults; README's configuration reference lists them.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal, InvalidOperation
from pathlib import Path

from pipelines.api.errors import ConfigurationError

SIGN_CONVENTIONS = ("signed", "unsigned", "infer")
DEFAULT_DEBIT_PATTERN = "debit|usage|charge|consum|expir|fee"


@dataclass(frozen=True)
class Settings:
    account: str = "default"
    warehouse: Path = Path("creditlens.duckdb")
    analyst_copy: Path | None = None
    reports_dir: Path = Path("creditlens-reports")
    ledger_start: date = date(2024, 1, 1)
    lookback_days: int = 7
    sign_convention: str = "signed"
    tolerance: Decimal = Decimal(0)
    reconcile_slice_entries: int | None = None  # None: the reconciliation's own default
    summary_balance_field: str = "balance"
    debit_type_pattern: str = DEFAULT_DEBIT_PATTERN
    snapshot_fields: dict[str, str] = field(default_factory=dict)
    staging_dir: Path | None = None

    @property
    def staging_root(self) -> Path:
        return self.staging_dir or self.warehouse.parent / ".creditlens-staging"

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        env = dict(os.environ if env is None else env)

        def get(name: str) -> str | None:
            value = env.get(name, "").strip()
            return value or None

        values: dict[str, object] = {}
        if v := get("CREDITLENS_ACCOUNT"):
            values["account"] = v
        if v := get("CREDITLENS_WAREHOUSE"):
            values["warehouse"] = Path(v)
        if v := get("CREDITLENS_ANALYST_COPY"):
            values["analyst_copy"] = Path(v)
        if v := get("CREDITLENS_REPORTS_DIR"):
            values["reports_dir"] = Path(v)
        if v := get("CREDITLENS_STAGING_DIR"):
            values["staging_dir"] = Path(v)
        if v := get("CREDITLENS_LEDGER_START"):
            values["ledger_start"] = parse_day(v, "CREDITLENS_LEDGER_START")
        if v := get("CREDITLENS_LOOKBACK_DAYS"):
            if not v.isdigit():
                raise ConfigurationError(
                    f"CREDITLENS_LOOKBACK_DAYS must be a whole number, got {v!r}"
                )
            values["lookback_days"] = int(v)
        if v := get("CREDITLENS_SIGN_CONVENTION"):
            if v not in SIGN_CONVENTIONS:
                raise ConfigurationError(
                    f"CREDITLENS_SIGN_CONVENTION must be one of {', '.join(SIGN_CONVENTIONS)}, "
                    f"got {v!r}"
                )
            values["sign_convention"] = v
        if v := get("CREDITLENS_TOLERANCE"):
            try:
                tolerance = Decimal(v)
            except InvalidOperation:
                tolerance = Decimal(-1)
            if not tolerance.is_finite() or tolerance < 0:
                raise ConfigurationError(f"CREDITLENS_TOLERANCE must be a number >= 0, got {v!r}")
            values["tolerance"] = tolerance
        if v := get("CREDITLENS_RECONCILE_SLICE_ENTRIES"):
            if not v.isdigit():
                raise ConfigurationError(
                    "CREDITLENS_RECONCILE_SLICE_ENTRIES must be a whole number "
                    f"(0: the whole ledger at once), got {v!r}"
                )
            values["reconcile_slice_entries"] = int(v)
        if v := get("CREDITLENS_SUMMARY_BALANCE_FIELD"):
            values["summary_balance_field"] = v
        if v := get("CREDITLENS_DEBIT_TYPE_PATTERN"):
            values["debit_type_pattern"] = v
        if v := get("CREDITLENS_SNAPSHOT_FIELDS"):
            try:
                mapping = json.loads(v)
            except ValueError:
                mapping = None
            if not isinstance(mapping, dict) or not all(
                isinstance(k, str) and isinstance(x, str) for k, x in mapping.items()
            ):
                raise ConfigurationError(
                    "CREDITLENS_SNAPSHOT_FIELDS must be a JSON object of strings, e.g. "
                    '{"consumption.balance": "currentBalance"}'
                )
            values["snapshot_fields"] = mapping
        return cls(**values)  # type: ignore[arg-type]


def parse_day(text: str, what: str) -> date:
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        raise ConfigurationError(f"{what} must be a date like 2025-01-31, got {text!r}") from None
