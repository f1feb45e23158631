"""What Dagster shows about each asset: who owns it, the columns of its table, its row count.

Every warehouse table is declared once, as a ``Table`` of ``Column``s in
``pipelines/warehouse/*_tables.py``, for its DDL, its comments and the data dictionary
(docs/data-dictionary.md); its Dagster column schema is derived from the same declaration here,
so the UI cannot describe a column the warehouse does not have. An asset named after a table
(``ledger_entries``, ``daily_balance``, each snapshot) gets that table's schema and name; every
asset gets the owners of ``CREDITLENS_OWNERS``. Row counts use Dagster's standard
``dagster/row_count`` key, so the UI plots them over time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from dagster import AssetSpec, MetadataValue, TableColumn, TableColumnConstraints, TableSchema

from pipelines.config.settings import Settings
from pipelines.warehouse.schema import all_tables
from pipelines.warehouse.table import Table

ROW_COUNT = "dagster/row_count"
# Every account's record of one step, in one metadata entry (a JSON list of objects, each with
# its "account"): docs/scale-out.md, "One event per step, not per company".
ACCOUNT_RECORDS = "account_records"
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


def account_records(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Each account's record (its figures, or its failure) in ONE metadata entry, so a step
    costs Dagster the same few events for 5 companies or 5,000; the CLI and the UI read each
    account's back from it (``records_of``)."""
    return {ACCOUNT_RECORDS: MetadataValue.json([_plain(record) for record in records])}


def records_of(metadata: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The account records of an event's metadata (values already unwrapped), or none."""
    value = metadata.get(ACCOUNT_RECORDS)
    value = getattr(value, "value", value)
    return [dict(r) for r in value if isinstance(r, Mapping)] if isinstance(value, list) else []


def _plain(value: Any) -> Any:
    """JSON's own types: a Dagster metadata value as its value, a Decimal (money) as its exact
    text, a day or a time in ISO 8601."""
    value = getattr(value, "value", value) if isinstance(value, MetadataValue) else value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, date | datetime):
        return value.isoformat()
    return value
