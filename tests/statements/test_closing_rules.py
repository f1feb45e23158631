"""The close and restatement rules on their own: the grace period's boundary, a content hash of
the figures only, and why each restated line moved."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from pipelines.statements.close import (
    EARLIER,
    HIDDEN,
    RECONCILED,
    MonthFigures,
    closable,
    first_version,
    restated,
)

T0 = datetime(2026, 11, 3, tzinfo=UTC)
T1 = datetime(2026, 11, 20, tzinfo=UTC)


def figures(**changes: Any) -> MonthFigures:
    summary = {"opening": Decimal("100"), "debits": Decimal("-30"), "credits": Decimal("50"),
               "refunds": Decimal(0), "adjustments": Decimal(0), "other": Decimal(0),
               "hidden_movements": Decimal(0), "closing": Decimal("120"), "entries": 3}  # fmt: skip
    lines = [("debit", "Usage", Decimal("-30"), 2), ("credit", "PlanGrant", Decimal("50"), 1)]
    totals = [("agent", "agt_1", Decimal("-30"), 2), ("agent", None, Decimal("50"), 1)]
    summary.update(changes.pop("summary", {}))
    return MonthFigures(
        "acme",
        date(2026, 10, 1),
        summary,
        changes.pop("lines", lines),
        changes.pop("totals", totals),
    )


def test_a_month_is_closable_from_its_last_day_plus_the_grace_period() -> None:
    october = date(2026, 10, 1)
    assert not closable(october, date(2026, 11, 1), 2)
    assert closable(october, date(2026, 11, 2), 2)
    assert closable(october, date(2026, 10, 31), 0)
    assert closable(date(2026, 2, 1), date(2026, 3, 2), 2)  # February 2026 has 28 days
    assert not closable(date(2026, 2, 1), date(2026, 3, 2), 3)


def test_the_hash_is_of_the_figures_only() -> None:
    one, two = first_version(figures(), T0, T0), first_version(figures(), T1, T1)
    assert one.content_hash == two.content_hash
    assert restated(one, figures(), T1, T1) is None
    other = figures(
        totals=[("agent", "agt_1", Decimal("-30"), 2), ("agent", "none", Decimal("50"), 1)]
    )
    assert first_version(other, T0, T0).content_hash != one.content_hash  # NULL is not "none"


def test_a_late_entry_is_why_its_lines_moved() -> None:
    issued = first_version(figures(), T0, T0)
    late = figures(
        summary={"debits": Decimal("-32.5"), "closing": Decimal("117.5")},
        lines=[("debit", "Usage", Decimal("-32.5"), 3), ("credit", "PlanGrant", Decimal("50"), 1)],
        totals=[("agent", "agt_1", Decimal("-32.5"), 3), ("agent", None, Decimal("50"), 1)],
    )
    change = restated(issued, late, T1, T1)
    assert change is not None and change.current.version == 2
    moved = {c.name: (c.was, c.now, c.difference, c.why) for c in change.changes}
    one_more = "late entries (1 more entry)"
    assert moved == {
        "debits": (Decimal("-30"), Decimal("-32.5"), Decimal("-2.5"), one_more),
        "debits Usage": (Decimal("-30"), Decimal("-32.5"), Decimal("-2.5"), one_more),
        "closing": (Decimal("120"), Decimal("117.5"), Decimal("-2.5"), one_more),
        "agent agt_1": (Decimal("-30"), Decimal("-32.5"), Decimal("-2.5"), one_more),
    }


def test_a_hidden_movement_and_an_earlier_month_are_said_as_such() -> None:
    issued = first_version(figures(), T0, T0)
    found = figures(summary={"opening": Decimal("110"), "hidden_movements": Decimal("-4"),
                             "closing": Decimal("126")})  # fmt: skip
    change = restated(issued, found, T1, T1)
    assert change is not None
    moved = {c.name: c.why for c in change.changes}
    assert moved == {
        "opening": EARLIER,
        "hidden_movements": HIDDEN,
        "closing": f"{EARLIER}; {HIDDEN}",
    }


def test_a_total_that_moved_with_the_same_entries_is_the_reconciliation() -> None:
    issued = first_version(figures(), T0, T0)
    again = figures(
        totals=[("agent", "agt_1", Decimal("-31"), 2), ("agent", None, Decimal("51"), 1)]
    )
    change = restated(issued, again, T1, T1)
    assert change is not None
    assert {c.name: c.why for c in change.changes} == {
        "agent agt_1": RECONCILED,
        "agent (none)": RECONCILED,
    }
