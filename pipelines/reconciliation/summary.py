"""A reconciliation as Dagster records it, and read back: the metadata keys live here only.

The assets write these records; the CLI reads them back as typed values to print its summary.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from transforms.breaks import BREAK_KINDS

if TYPE_CHECKING:
    from pipelines.reconciliation.run import ReconciliationResult

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
    # Hidden movements of every placement: how many, gross (sum of |gap|) and net (sum of gap);
    # a net figure alone would let two movements of opposite sign hide each other.
    movements: int = 0
    gross: str = "0"
    net: str = "0"
    mismatches: int = 0
    unacknowledged: int = 0  # movements and mismatches: what --fail-on-breaks counts
    opening_status: str = ""
    opening_message: str = ""
    # "incremental from 2026-11-19" or "full: <why>": how far back this run re-derived.
    reconciled: str = ""

    @classmethod
    def of(cls, result: ReconciliationResult) -> ReconciliationSummary:
        gross, net = result.gross_and_net
        return cls(
            account=result.account,
            entries=result.entries,
            sign_convention=result.convention + (" (inferred)" if result.inferred else ""),
            tolerance=str(result.tolerance),
            breaks=result.counts(),
            movements=result.movements.height,
            gross=str(gross),
            net=str(net),
            mismatches=result.mismatches.height,
            unacknowledged=result.open_findings,
            opening_status=result.opening.status,
            opening_message=result.opening.message,
            reconciled=result.pass_kind,
        )

    @property
    def has_breaks(self) -> bool:
        """Unacknowledged findings: an acknowledged one is known and explained."""
        return self.unacknowledged > 0

    @property
    def acknowledged(self) -> int:
        return self.movements + self.mismatches - self.unacknowledged

    def common_metadata(self) -> dict[str, Any]:
        """What every reconciliation output records: every field under its own name but the
        breaks, which only balance_breaks records (one key per kind)."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name not in ("breaks", "opening_message")
        }

    def metadata(self) -> dict[str, Any]:
        """What balance_breaks records: the common part and the count of each kind of break."""
        return {
            **self.common_metadata(),
            "opening_message": self.opening_message,
            **{f"breaks_{k}": self.breaks.get(k, 0) for k in BREAK_KINDS},
        }

    @classmethod
    def from_metadata(cls, metadata: dict[str, Any]) -> ReconciliationSummary:
        def text(name: str, default: str = "") -> str:
            return str(metadata.get(name, default))

        def number(name: str) -> int:
            return int(metadata.get(name, 0))

        return cls(
            account=text("account"),
            entries=number("entries"),
            sign_convention=text("sign_convention"),
            tolerance=text("tolerance"),
            breaks={k: number(f"breaks_{k}") for k in BREAK_KINDS},
            movements=number("movements"),
            gross=text("gross", "0"),
            net=text("net", "0"),
            mismatches=number("mismatches"),
            unacknowledged=number("unacknowledged"),
            opening_status=text("opening_status"),
            opening_message=text("opening_message"),
            reconciled=text("reconciled"),
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
    gross_gap: Decimal | None = None
    acknowledged: int | None = None

    def metadata(self) -> dict[str, Any]:
        values: dict[str, Any] = {
            "hidden_movements": self.hidden_movements,
            "ambiguous_ties": self.ambiguous_ties,
            "net_gap": None if self.net_gap is None else str(self.net_gap),
            "gross_gap": None if self.gross_gap is None else str(self.gross_gap),
            "acknowledged": self.acknowledged,
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
            gross_gap=Decimal(metadata["gross_gap"]) if "gross_gap" in metadata else None,
            acknowledged=number("acknowledged"),
        )
