"""What Dagster shows about each asset: who owns it, the columns of its table, its row count.

Every warehouse table is declared once, as a ``Table`` of ``Column``s in
``pipelines/warehouse/*_tables.py``, for its DDL, its comments and README's data dictionary;
its Dagster column schema is derived from the same declaration here, so the UI cannot describe a
column the warehouse does not have. An asset named after a table (``ledger_entries``,
``daily_balance``, each snapshot) gets that table's schema and name; every asset gets the owners
of ``CREDITLENS_OWNERS``. Row counts use Dagster's standard ``dagster/row_count`` key, so the
UI plots them over time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dagster import AssetSpec, TableColumn, TableColumnConstraints, TableSchema

from pipelines.config.settings import Settings
from pipelines.warehouse.schema import all_tables
from pipelines.warehouse.table import Table

ROW_COUNT = "dagster/row_count"
COLUMN_SCHEMA = "dagster/column_schema"
TABLE_NAME = "dagster/table_name"

TABLES: dict[str, Table] = {table.name: table for table in all_tables()}


def column_schema(table: Table) -> TableSchema:
    """The table's columns as Dagster shows them: name, SQL type, comment, nullability."""
    return TableSchema(
        columns=[
            TableColumn(
                name=column.name,
                type=column.type,
                description=column.doc,
                constraints=TableColumnConstraints(nullable=not column.not_null),
            )
            for column in table.columns
        ]
    )


def table_metadata(table: Table) -> dict[str, Any]:
    return {TABLE_NAME: table.name, COLUMN_SCHEMA: column_schema(table)}


def row_count(rows: int) -> dict[str, int]:
    return {ROW_COUNT: rows}


def owners(settings: Settings) -> list[str]:
    return [owner for owner in settings.owners.split(",") if owner]


def described(settings: Settings) -> Callable[[AssetSpec], AssetSpec]:
    """Adds the owners and, for an asset that is a warehouse table, its schema."""
    who = owners(settings)

    def describe(spec: AssetSpec) -> AssetSpec:
        table = TABLES.get(spec.key.path[-1])
        metadata = {**spec.metadata, **(table_metadata(table) if table else {})}
        return spec.replace_attributes(owners=who, metadata=metadata)

    return describe
