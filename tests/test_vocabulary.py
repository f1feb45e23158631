"""One vocabulary: each word of the findings and the statement is declared once and followed.

The statement's lines, its movements, the kinds of break, their placements and the unfinished
run statuses each have one declaration; the warehouse's columns, the SQL views, the site's rows
and words, the checks' metadata and the run filters are derived from it. These tests fail when a
copy reappears that disagrees, or when the two renderings of the placement rule (polars for the
reconciliation, SQL for an older warehouse) stop saying the same thing.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import polars as pl
from dagster import DagsterRunStatus

from dashboards.model import STATEMENT_LINES
from dashboards.pages.findings import KIND_MEANING, PLACEMENT_ADVICE, PLACEMENT_MEANING
from pipelines.orchestration.runs import IN_A_PROCESS, UNFINISHED
from pipelines.warehouse.finding_tables import HIDDEN_MOVEMENTS
from pipelines.warehouse.reconciliation_tables import (
    BALANCE_BREAKS,
    DAILY_BALANCE,
    MONTHLY_STATEMENT,
)
from tests.transforms.duck import query
from transforms.aggregate import MOVEMENT_COLUMNS, STATEMENT_MONEY_COLUMNS, STATEMENT_MOVEMENTS
from transforms.breaks import (
    BREAK_KINDS,
    KIND_OF_PLACEMENT,
    PLACEMENT_OF_KIND,
    PLACEMENTS,
    conform_breaks,
    placed,
    placement_sql,
)


def _at(second: int) -> datetime:
    return datetime(2025, 3, 1, 12, 0, second, tzinfo=UTC)


def test_the_placement_rule_says_the_same_in_polars_and_in_sql() -> None:
    rows = [
        ("opening", _at(0), _at(0)),
        ("summary", _at(1), _at(9)),
        ("breakdown", _at(2), _at(3)),
        ("continuity", _at(4), _at(4)),  # both sides share a createdAt: within a tie
        ("continuity", _at(4), _at(5)),
    ]
    breaks = conform_breaks(
        pl.DataFrame(
            {
                "account": ["acme"] * len(rows),
                "kind": [kind for kind, _, _ in rows],
                "break_start": [start for _, start, _ in rows],
                "break_end": [end for _, _, end in rows],
                "gap": [Decimal("1.5")] * len(rows),
            }
        )
    )
    in_polars = placed(breaks)["placement"].to_list()
    in_sql = [
        r["placement"] for r in query(f"SELECT {placement_sql()} AS placement FROM b", b=breaks)
    ]
    assert (
        in_polars
        == in_sql
        == [
            "before_first",
            "after_last",
            None,
            "within_tie",
            "between_entries",
        ]
    )
    assert set(PLACEMENT_OF_KIND) <= set(BREAK_KINDS)
    assert {p for p in in_polars if p is not None} == set(PLACEMENTS)


def test_the_statement_lines_are_declared_once_and_followed() -> None:
    assert ("opening", *STATEMENT_MOVEMENTS, "closing") == STATEMENT_MONEY_COLUMNS
    assert (*MOVEMENT_COLUMNS, "hidden_movements") == STATEMENT_MOVEMENTS
    # The site words every line, in the statement's order.
    assert tuple(name for name, _ in STATEMENT_LINES) == STATEMENT_MONEY_COLUMNS
    # The warehouse's daily balance and monthly statement hold them in the same order.
    for table in (DAILY_BALANCE, MONTHLY_STATEMENT):
        names = [c.name for c in table.columns if c.name in STATEMENT_MONEY_COLUMNS]
        assert tuple(names) == STATEMENT_MONEY_COLUMNS, table.name


def test_unfinished_runs_are_one_set_and_the_orphan_check_a_part_of_it() -> None:
    assert IN_A_PROCESS < UNFINISHED
    ended = {DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED}
    assert not UNFINISHED & ended
    assert DagsterRunStatus.QUEUED in UNFINISHED - IN_A_PROCESS  # a CLI run is never queued


def test_the_site_words_every_placement_and_the_kind_it_comes_from() -> None:
    assert tuple(KIND_OF_PLACEMENT) == PLACEMENTS
    assert set(KIND_OF_PLACEMENT.values()) <= set(BREAK_KINDS)
    assert set(PLACEMENT_MEANING) == set(PLACEMENT_ADVICE) == set(PLACEMENTS)
    assert set(KIND_MEANING) == set(KIND_OF_PLACEMENT.values())


def test_the_data_dictionary_names_every_placement_and_kind() -> None:
    """The warehouse's column words are for analysts and stay prose; they must still name every
    word the reconciliation writes, in the order it declares them."""
    for table in (BALANCE_BREAKS, HIDDEN_MOVEMENTS):
        (doc,) = [c.doc for c in table.columns if c.name == "placement"]
        assert [doc.index(p) for p in PLACEMENTS] == sorted(doc.index(p) for p in PLACEMENTS)
    (kinds,) = [c.doc for c in BALANCE_BREAKS.columns if c.name == "kind"]
    # Breakdown items have had their own table since migration 6.
    assert all(kind in kinds for kind in BREAK_KINDS if kind != "breakdown")
