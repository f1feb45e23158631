"""A reconciliation as Dagster records it, and read back: the metadata keys live here only.

The assets write these records; the CLI reads them back as typed values to print its summary.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pipelines.reconciliation.run import ReconciliationResult

BREAK_KINDS = ("continuity", "summary", "breakdown")
HIDDEN_MOVEMENTS = "no_hidden_movements"
BREAKDOWN = "breakdown_matches_ledger"
SUMMARY = "summary_matches_ledger"


@dataclass(frozen=True)
class ReconciliationSummary:
    account: str
    entries: int
    sign_convention: str  # e.g. "signed", or "unsigned (inferred)"
    tolerance: str
    breaks: dict[str, int] = field(default_factory=dict)  # per kind of BREAK_KINDS

    @classmethod
    def of(cls, result: ReconciliationResult) -> ReconciliationSummary:
        return cls(
            account=result.account,
            entries=result.entries,
            sign_convention=result.convention + (" (inferred)" if result.inferred else ""),
            tolerance=str(result.tolerance),
            breaks=result.counts(),
        )

    @property
    def has_breaks(self) -> bool:
        return any(self.breaks.values())

    def common_metadata(self) -> dict[str, Any]:
        """What every reconciliation output records: every field under its own name but the
        breaks, which only balance_breaks records (one key per kind)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "breaks"}

    def metadata(self) -> dict[str, Any]:
        """What balance_breaks records: the common part and the count of each kind of break."""
        return {
            **self.common_metadata(),
            **{f"breaks_{k}": self.breaks.get(k, 0) for k in BREAK_KINDS},
        }

    @classmethod
    def from_metadata(cls, metadata: dict[str, Any]) -> ReconciliationSummary:
        return cls(
            account=str(metadata.get("account", "")),
            entries=int(metadata.get("entries", 0)),
            sign_convention=str(metadata.get("sign_convention", "")),
            tolerance=str(metadata.get("tolerance", "")),
            breaks={k: int(metadata.get(f"breaks_{k}", 0)) for k in BREAK_KINDS},
        )


@dataclass(frozen=True)
class CheckRecord:
    """One reconciliation check's verdict, with where and how much when it failed."""

    name: str
    passed: bool
    status: str | None = None  # ok, break or unavailable (summary and breakdown checks)
    message: str | None = None
    breaks: list[dict[str, Any]] = field(default_factory=list)
    hidden_movements: int | None = None
    ambiguous_ties: int | None = None
    net_gap: Decimal | None = None

    def metadata(self) -> dict[str, Any]:
        values: dict[str, Any] = {
            "hidden_movements": self.hidden_movements,
            "ambiguous_ties": self.ambiguous_ties,
            "net_gap": None if self.net_gap is None else str(self.net_gap),
            "status": self.status,
            "message": self.message,
        }
        recorded = {k: v for k, v in values.items() if v is not None}
        if self.name != SUMMARY:
            recorded["breaks"] = self.breaks
        return recorded

    @classmethod
    def from_metadata(cls, name: str, passed: bool, metadata: dict[str, Any]) -> CheckRecord:
        def number(key: str) -> int | None:
            return int(metadata[key]) if key in metadata else None

        return cls(
            name=name,
            passed=passed,
            status=metadata.get("status"),
            message=metadata.get("message"),
            breaks=list(metadata.get("breaks") or []),
            hidden_movements=number("hidden_movements"),
            ambiguous_ties=number("ambiguous_ties"),
            net_gap=Decimal(metadata["net_gap"]) if "net_gap" in metadata else None,
        )
