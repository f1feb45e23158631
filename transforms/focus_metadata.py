"""FOCUS 1.2's metadata for an exported dataset: who generated it and its schema.

FOCUS asks every data artifact to reference its schema in a way readable without opening the data
(specification/metadata): the export writes this object beside the file
(``focus-YYYY-MM.metadata.json``) and names it in the Parquet file's key-value metadata. The
``SchemaId`` is derived from the column definitions, so every export of the same structure names
the same schema and a change of structure (a column, a type, a scale) names a new one, as the
specification requires.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any

import polars as pl

from transforms.focus import FOCUS_VERSION, TAG_PREFIX

DATA_GENERATOR = "creditlens"
# A fixed namespace for SchemaIds, so they are the same on every machine (RFC 4122 name-based).
SCHEMA_NAMESPACE = uuid.UUID("5d0c9f6e-3f55-4c1e-9a51-4f4f2a1c7e10")


def _column_definition(name: str, dtype: pl.DataType) -> dict[str, Any]:
    if isinstance(dtype, pl.Decimal):
        return {
            "ColumnName": name,
            "DataType": "DECIMAL",
            "NumericPrecision": dtype.precision,
            "NumberScale": dtype.scale,
        }
    if isinstance(dtype, pl.Datetime):
        return {"ColumnName": name, "DataType": "DATETIME"}
    if isinstance(dtype, pl.Boolean):
        return {"ColumnName": name, "DataType": "BOOLEAN"}
    if name == "Tags":
        return {
            "ColumnName": name,
            "DataType": "JSON",
            "ProviderTagPrefixes": [TAG_PREFIX],
            "StringEncoding": "UTF-8",
        }
    return {"ColumnName": name, "DataType": "STRING", "StringEncoding": "UTF-8"}


def schema_metadata(
    schema: pl.Schema, created_at: datetime, generator_version: str
) -> dict[str, Any]:
    """The metadata object of a dataset of ``schema``, created at ``created_at`` (UTC)."""
    columns = [_column_definition(name, dtype) for name, dtype in schema.items()]
    identity = json.dumps([FOCUS_VERSION, columns], sort_keys=True)
    return {
        "DataGenerator": DATA_GENERATOR,
        "DataGeneratorVersion": generator_version,
        "SchemaId": str(uuid.uuid5(SCHEMA_NAMESPACE, identity)),
        "FocusVersion": FOCUS_VERSION,
        "CreationDate": created_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "ColumnDefinition": columns,
    }
