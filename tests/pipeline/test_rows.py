"""Rows inserted as text and cast by DuckDB hold exactly what one-row parameter inserts hold.

``insert_dicts`` sends every value as its text and lets DuckDB cast it to its column's type (a
VALUES list of parameters cost seconds per thousand rows). Money, instants and floats must not
move on the way: generated rows of every scalar kind the warehouse uses, with the edges (an
exponent in a Decimal, more decimals than the scale, NaN, -0.0, offsets, naive times, NUL and
quotes in text), are inserted both ways and compared value for value.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.warehouse.rows import as_text, insert_dicts

COLUMNS = {
    "money": "DECIMAL(18,6)",
    "instant": "TIMESTAMPTZ",
    "naive": "TIMESTAMP",
    "day": "DATE",
    "text": "VARCHAR",
    "flag": "BOOLEAN",
    "ratio": "DOUBLE",
    "n": "BIGINT",
    "small": "INTEGER",
}
OFFSETS = st.sampled_from(
    [UTC, timezone(timedelta(hours=5, minutes=30)), timezone(-timedelta(hours=8))]
)
ROW = st.fixed_dictionaries(
    {
        "money": st.none() | st.decimals(-(10**11), 10**11, allow_nan=False, places=8),
        "instant": st.none() | st.datetimes(timezones=OFFSETS),
        "naive": st.none() | st.datetimes(),
        "day": st.none() | st.dates(),
        "text": st.none() | st.text(),
        "flag": st.none() | st.booleans(),
        "ratio": st.none() | st.floats(width=64),
        "n": st.none() | st.integers(-(2**63), 2**63 - 1),
        "small": st.none() | st.integers(-(2**31), 2**31 - 1),
    }
)  # fmt: skip


def _table(con: duckdb.DuckDBPyConnection, name: str) -> None:
    con.execute(f"CREATE TABLE {name} ({', '.join(f'{c} {t}' for c, t in COLUMNS.items())})")


def _read(con: duckdb.DuckDBPyConnection, name: str) -> list[tuple[Any, ...]]:
    rows = con.execute(f"SELECT * FROM {name}").fetchall()
    # NaN is not equal to itself: compared by its text.
    return [tuple("nan" if v != v else v for v in row) for row in rows]


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(ROW, min_size=1, max_size=30))
def test_text_casts_hold_what_parameters_hold(rows: list[dict[str, Any]]) -> None:
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    _table(con, "by_text")
    _table(con, "by_parameter")
    insert_dicts(con, "by_text", rows)
    marks = ", ".join(f"CAST(? AS {t})" for t in COLUMNS.values())
    for row in rows:
        con.execute(f"INSERT INTO by_parameter VALUES ({marks})", [row[c] for c in COLUMNS])
    assert _read(con, "by_text") == _read(con, "by_parameter")


def test_the_edges_of_each_kind() -> None:
    assert as_text(Decimal("1E+3")) == "1000"
    assert as_text(True) == "true"
    assert as_text(-0.0) == "-0.0"
    assert as_text(datetime(2026, 1, 1, 12, tzinfo=UTC)) == "2026-01-01 12:00:00+00:00"
    assert as_text(date(2026, 2, 28)) == "2026-02-28"
    with pytest.raises(TypeError):
        as_text(["a list"])  # no exact text here: such rows keep the parameter path


def test_a_value_without_text_keeps_the_parameter_path() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE t (tags VARCHAR[], note VARCHAR)")
    assert insert_dicts(con, "t", [{"tags": ["a", "b"], "note": "x"}]) == 1
    assert con.execute("SELECT tags, note FROM t").fetchall() == [(["a", "b"], "x")]
