"""How a warehouse table is described: once, for its DDL, its COMMENTs and docs/data-dictionary.md.

Analysts query the DuckDB file directly, so names, types and comments are promises; each table
module declares its tables with these types, and pipelines/warehouse/schema.py versions them.
Columns several tables share are declared here once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pipelines.api.ledger_entry import (
    AGENT_ID,
    CAMPAIGN_ID,
    CHANNEL,
    MONEY_PRECISION,
    MONEY_SCALE,
    EntryField,
    Kind,
)


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    doc: str
    not_null: bool = False


@dataclass(frozen=True)
class Table:
    name: str
    doc: str
    columns: tuple[Column, ...]
    since: int = 1
    kind: str = "table"  # table | view
    view_sql: str = ""
    extra_ddl: tuple[str, ...] = field(default_factory=tuple)

    def create_sql(self) -> str:
        if self.kind == "view":
            return f"CREATE OR REPLACE VIEW {self.name} AS {self.view_sql}"
        cols = ",\n  ".join(
            f"{c.name} {c.type}{' NOT NULL' if c.not_null else ''}" for c in self.columns
        )
        return f"CREATE TABLE IF NOT EXISTS {self.name} (\n  {cols}\n)"

    def add_column_sql(self, column: Column) -> str:
        """A column added by a later migration; a table created since has it already."""
        null = "" if not column.not_null else " NOT NULL"
        return f"ALTER TABLE {self.name} ADD COLUMN IF NOT EXISTS {column.name} {column.type}{null}"

    def comment_sql(self) -> list[str]:
        what = "VIEW" if self.kind == "view" else "TABLE"
        out = [f"COMMENT ON {what} {self.name} IS {_quote(self.doc)}"]
        out += [f"COMMENT ON COLUMN {self.name}.{c.name} IS {_quote(c.doc)}" for c in self.columns]
        return out


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


# The ledger's exact money type, for every amount the warehouse keeps.
MONEY = f"DECIMAL({MONEY_PRECISION},{MONEY_SCALE})"

SQL_TYPES: dict[Kind, str] = {
    Kind.TIMESTAMP: "TIMESTAMPTZ",
    Kind.STRING: "VARCHAR",
    Kind.MONEY: MONEY,
    Kind.FLAG: "BOOLEAN",
}


def entry_column(entry_field: EntryField, doc: str | None = None) -> Column:
    """A column holding a ledger entry's field: its name, type and nullability are the field's,
    and so is its comment unless the table words it its own way."""
    return Column(
        entry_field.column,
        SQL_TYPES[entry_field.kind],
        entry_field.doc if doc is None else doc,
        entry_field.required,
    )


def money_column(name: str, doc: str, not_null: bool = True) -> Column:
    return Column(name, MONEY, doc, not_null)


def columns(sql_type: str, not_null: bool = False, /, **docs: str) -> tuple[Column, ...]:
    """Columns of one type and nullability, named by the keywords in the order given: a run
    of like columns then reads as names and what they mean, the type said once."""
    return tuple(Column(name, sql_type, doc, not_null) for name, doc in docs.items())


def span(
    prefix: str, sql_type: str, first: str, last: str, not_null: bool = False
) -> tuple[Column, Column]:
    """A start and an end that go together (a period, a window, a range), ``prefix_start`` and
    ``prefix_end``: declared as one pair, neither end can be renamed or retyped alone."""
    return (
        Column(f"{prefix}_start", sql_type, first, not_null),
        Column(f"{prefix}_end", sql_type, last, not_null),
    )


# What names a breakdown item: the ledger entry's own fields (the reconciliation matches items to
# entries by them), in the breakdown's order.
BREAKDOWN_ITEM: tuple[EntryField, ...] = (AGENT_ID, CAMPAIGN_ID, CHANNEL)


def item_columns(doc: str) -> tuple[Column, ...]:
    """A breakdown item's columns, typed as the entry's fields wherever a table keeps them;
    ``doc`` words each, ``{}`` standing for the field's wire name."""
    return tuple(entry_column(f, doc.format(f.wire)) for f in BREAKDOWN_ITEM)


ACCOUNT = Column(
    "account", "VARCHAR", "Configured account (company) name (CREDITLENS_ACCOUNT).", True
)
RUN_ID = Column("run_id", "VARCHAR", "Dagster run id of the sync that wrote the row.", True)
FETCHED_AT = Column("fetched_at", "TIMESTAMPTZ", "When creditlens fetched the data (UTC).", True)
