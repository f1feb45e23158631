"""The warehouse as a DuckLake: its catalog in PostgreSQL, its data as Parquet in a folder or S3.

`CREDITLENS_WAREHOUSE` takes a DuckLake location in DuckDB's own syntax,
``ducklake:postgres:dbname=... host=... port=... user=...``. Everything of creditlens that lives
beside the warehouse file (the analyst copy, staging, the lock, the spill folders, the Dagster
home) lives beside a stand-in instead: ``warehouse.lake`` in the lake's local folder
(`CREDITLENS_LAKE_DIR`, default ``./creditlens-lake``), a small file naming the location. Every
module above this package keeps passing that path; only this package knows that opening it
attaches the lake (pipelines/warehouse/instances.py). The rules for users: docs/lake.md.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from pipelines.warehouse.sql_text import literal

if TYPE_CHECKING:
    import duckdb

PREFIX = "ducklake:"
POSTGRES = "ducklake:postgres:"
STAND_IN_NAME = "warehouse.lake"
DEFAULT_DIR = Path("creditlens-lake")
DATA_DIR_NAME = "data"

# A password in the location would be printed (lock waits, errors) and recorded (Dagster runs):
# libpq reads it from PGPASSWORD or ~/.pgpass instead.
_PASSWORD = re.compile(r"(^|\s)password\s*=|://[^/@\s]*:[^/@\s]*@", re.IGNORECASE)


@dataclass(frozen=True)
class Lake:
    location: str  # ducklake:postgres:<libpq connection string>, no password in it
    data_path: str  # where the Parquet files are: a folder, or s3://bucket/prefix/
    data_path_given: bool  # set by CREDITLENS_LAKE_DATA_PATH, not the default

    @property
    def conninfo(self) -> str:
        """The catalog's PostgreSQL connection string, for libpq (the PG* variables fill in the
        rest, the password included)."""
        return self.location[len(POSTGRES) :]

    @property
    def on_s3(self) -> bool:
        return self.data_path.startswith("s3://")

    def attach_sql(self, alias: str, *, create: bool) -> str:
        """The ATTACH, read-write: one attachment serves an instance's reads and writes alike.
        DATA_PATH is given where the lake is created, or where the installation names it;
        otherwise DuckLake reads the one the catalog stored when it was created, so a second
        host finds the same files."""
        options = []
        if create or self.data_path_given:
            options.append(f"DATA_PATH {literal(self.data_path)}")
        if not create:
            options.append("CREATE_IF_NOT_EXISTS false")
        mode = f" ({', '.join(options)})" if options else ""
        return f"ATTACH {literal(self.location)} AS {alias}{mode}"


def s3_secret_sql(env: Mapping[str, str] | None = None) -> str | None:
    """DuckDB's S3 secret for a lake's data on ``s3://``, from the variables every AWS client
    reads (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION or
    AWS_DEFAULT_REGION, and AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL for an S3 that is not AWS's),
    made in memory at each attach: never stored, never printed. None without a key: DuckDB then
    uses what the installation gave it (a persistent secret of its own)."""
    env = os.environ if env is None else env
    key, secret = env.get("AWS_ACCESS_KEY_ID"), env.get("AWS_SECRET_ACCESS_KEY")
    if not key or not secret:
        return None
    options = ["TYPE s3", f"KEY_ID {literal(key)}", f"SECRET {literal(secret)}"]
    if token := env.get("AWS_SESSION_TOKEN"):
        options.append(f"SESSION_TOKEN {literal(token)}")
    if region := env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION"):
        options.append(f"REGION {literal(region)}")
    if endpoint := env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL"):
        parts = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
        options += [
            f"ENDPOINT {literal(parts.netloc)}",
            f"USE_SSL {'false' if parts.scheme == 'http' else 'true'}",
            "URL_STYLE 'path'",  # what S3 servers other than AWS's take
        ]
    return f"CREATE OR REPLACE SECRET creditlens_lake_s3 ({', '.join(options)})"


def is_lake_location(text: object) -> bool:
    return isinstance(text, str) and text.strip().startswith(PREFIX)


def parse_location(text: str) -> str:
    """The location as ATTACH takes it, or ValueError saying what is wrong with it (never
    repeating it: it may hold what should have been a secret)."""
    location = text.strip()
    if not location.startswith(POSTGRES):
        raise ValueError(
            "a DuckLake warehouse is ducklake:postgres:<connection string>, such as "
            "ducklake:postgres:dbname=creditlens host=pg.internal (its catalog in PostgreSQL); "
            "value not shown"
        )
    if not location[len(POSTGRES) :].strip():
        raise ValueError("ducklake:postgres: needs a connection string, such as dbname=creditlens")
    if _PASSWORD.search(location[len(POSTGRES) :]):
        raise ValueError(
            "holds a password: give it in PGPASSWORD or ~/.pgpass instead, never in the location "
            "(it is printed and recorded); value not shown"
        )
    return location


def lake_for(location: str, data_path: str | None, folder: Path) -> Lake:
    default = str(folder.absolute() / DATA_DIR_NAME) + os.sep
    return Lake(parse_location(location), data_path or default, data_path is not None)


def stand_in(folder: Path) -> Path:
    return folder / STAND_IN_NAME


_lakes: dict[str, Lake] = {}


def register(path: Path, lake: Lake) -> None:
    """``path`` (a stand-in) opens ``lake`` from now on in this process. The stand-in is also
    written as a file naming the lake, so every check that the warehouse exists finds it, and a
    process that read no settings (a Dagster step started elsewhere) opens the same lake."""
    _lakes[os.path.abspath(path)] = lake
    record = json.dumps(
        {"location": lake.location, "data_path": lake.data_path if lake.data_path_given else None},
        sort_keys=True,
    )
    try:
        if path.exists() and path.read_text() == record:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}.new")
        partial.write_text(record)
        os.replace(partial, path)
    except OSError:
        pass  # a folder it may not write: this process still knows the lake


def lake_at(path: Path) -> Lake | None:
    """The lake ``path`` stands in for, or None: the warehouse is that DuckDB file."""
    found = _lakes.get(os.path.abspath(path))
    if found is not None or path.name != STAND_IN_NAME:
        return found
    try:
        record = json.loads(path.read_text())
        location, data_path = record["location"], record.get("data_path")
    except (OSError, ValueError, KeyError, TypeError):
        return None
    lake = lake_for(location, data_path, path.parent)
    _lakes[os.path.abspath(path)] = lake
    return lake


def shown(path: Path) -> str:
    """How a message names the warehouse: the file, or the lake's location (no password is in
    it: parse_location refuses one)."""
    lake = lake_at(path)
    return lake.location if lake else str(path)


def current_lake(con: duckdb.DuckDBPyConnection) -> str | None:
    """The alias of the lake ``con`` reads (its current database), None on a file."""
    found = con.execute(
        "SELECT database_name FROM duckdb_databases() "
        "WHERE database_name = current_database() AND type = 'ducklake'"
    ).fetchone()
    return None if found is None else str(found[0])
