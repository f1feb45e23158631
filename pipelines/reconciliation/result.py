"""A reconciliation's options and what it found, as the assets, the CLI and the tests read it."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

import polars as pl

from pipelines.reconciliation.slices import SLICE_ENTRIES
from transforms.breaks import BREAK_KINDS, empty_breaks
from transforms.cross_checks import CheckOutcome
from transforms.entry_type import EntryTypeRules

# DuckDB's buffers while reconciling: blocks read and rows written in the open transaction are
# kept up to this, then spill to the file. At 1M entries 64MB peaks ~60 MB below 128MB.
DUCKDB_MEMORY_LIMIT = "64MB"


@dataclass(frozen=True)
class ReconcileOptions:
    sign_convention: str = "signed"
    tolerance: Decimal = Decimal(0)
    debit_type_pattern: str | None = None
    slice_entries: int | None = SLICE_ENTRIES  # None: the whole ledger at once
    duckdb_memory_limit: str | None = DUCKDB_MEMORY_LIMIT  # None: the connection's default

    def rules(self) -> EntryTypeRules:
        if self.debit_type_pattern:
            return EntryTypeRules(debit_pattern=self.debit_type_pattern)
        return EntryTypeRules()


@dataclass(frozen=True)
class ReconciliationResult:
    account: str
    entries: int
    convention: str
    inferred: bool
    tolerance: Decimal
    breaks: pl.DataFrame  # hidden movements of every placement, then breakdown mismatches
    summary: CheckOutcome
    breakdown: CheckOutcome
    ambiguous_ties: int
    opening: CheckOutcome = field(
        default_factory=lambda: CheckOutcome("unavailable", "", empty_breaks(), Decimal(0))
    )
    acknowledged: frozenset[str] = frozenset()  # break ids acknowledged with their current gap
    pass_kind: str = "full"  # "incremental from 2026-11-19" or "full: <why>"

    @property
    def continuity_breaks(self) -> pl.DataFrame:
        return self.breaks.filter(pl.col("kind") == "continuity")

    @property
    def movements(self) -> pl.DataFrame:
        """Every hidden movement, whatever its placement (the hidden_movements view's rows)."""
        return self.breaks.filter(pl.col("kind") != "breakdown")

    @property
    def mismatches(self) -> pl.DataFrame:
        return self.breaks.filter(pl.col("kind") == "breakdown")

    def unacknowledged(self, frame: pl.DataFrame) -> pl.DataFrame:
        return frame.filter(~pl.col("break_id").is_in(list(self.acknowledged)))

    @property
    def open_findings(self) -> int:
        """Movements and mismatches nobody acknowledged: what --fail-on-breaks counts."""
        return self.breaks.height - len(self.acknowledged)

    @property
    def gross_and_net(self) -> tuple[Decimal, Decimal]:
        """The movements' sum of |gap| and sum of gap: a net figure alone would let two
        movements of opposite sign hide each other."""
        gaps = self.movements["gap"].to_list()
        return sum((abs(g) for g in gaps), Decimal(0)), sum(gaps, Decimal(0))

    def counts(self) -> dict[str, int]:
        kinds = self.breaks["kind"].to_list()
        return {k: kinds.count(k) for k in BREAK_KINDS}
