"""The DuckDB extensions the lake needs, loaded from the registry packages that ship them.

`INSTALL ducklake` downloads the extension from DuckDB's own server at run time, which an
installation that reaches only package registries cannot do. The `duckdb-extension-*` wheels
(pinned in requirements.lock beside DuckDB itself) carry each extension's file for exactly one
DuckDB version; this loads that file by its path, with DuckDB's automatic install and load
switched off on the instance, so nothing is ever fetched (docs/lake.md).
"""

from __future__ import annotations

import importlib
from pathlib import Path

import duckdb

from pipelines.warehouse.errors import WarehouseError
from pipelines.warehouse.sql_text import literal

# (the extension's name in DuckDB, the package whose wheel ships its file, its pip name). The
# postgres extension loads under its entry point's name, postgres_scanner: the wheel named
# duckdb-extension-postgres holds a file that does not load under its own name.
LAKE_EXTENSIONS = (
    ("ducklake", "duckdb_extension_ducklake", "duckdb-extension-ducklake"),
    ("postgres_scanner", "duckdb_extension_postgres_scanner", "duckdb-extension-postgres-scanner"),
)
S3_EXTENSION = ("httpfs", "duckdb_extension_httpfs", "duckdb-extension-httpfs")

NO_DOWNLOADS = {"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"}


def extension_file(name: str, package: str, pip_name: str) -> Path:
    """The file of ``name`` built for the running DuckDB, or one line saying what to install."""
    version = duckdb.__version__
    remedy = f"run: pip install -c requirements.lock -e . (it pins {pip_name}=={version})"
    try:
        module = importlib.import_module(package)
    except ImportError:
        raise WarehouseError(
            f"the DuckLake warehouse needs DuckDB's {name} extension, which is not installed; "
            f"{remedy}"
        ) from None
    folder = Path(module.__file__ or "").parent / "extensions"
    found = folder / f"v{version}" / f"{name}.duckdb_extension"
    if not found.is_file():
        built = sorted(p.parent.name for p in folder.glob(f"*/{name}.duckdb_extension"))
        raise WarehouseError(
            f"the {name} extension installed is built for DuckDB {', '.join(built) or 'nothing'}, "
            f"not the DuckDB {version} installed; {remedy}"
        )
    return found


def load(con: duckdb.DuckDBPyConnection, s3: bool = False) -> None:
    """Loads the lake's extensions into ``con``'s instance (again: a no-op once loaded)."""
    for setting, value in NO_DOWNLOADS.items():
        con.execute(f"SET GLOBAL {setting} = {value}")
    for extension in (*LAKE_EXTENSIONS, *((S3_EXTENSION,) if s3 else ())):
        con.execute(f"LOAD {literal(str(extension_file(*extension)))}")
    if s3:
        # DuckDB's S3 uploader buffers one part of max filesize / 10,000 parts per file it
        # writes: 80 MB at its default of 800GB, more than a reconciliation commit's whole 64 MB
        # (it ran out of memory). A lake's Parquet files are far smaller: 60GB makes the parts
        # 6 MB, above S3's 5 MiB least part.
        con.execute("SET GLOBAL s3_uploader_max_filesize = '60GB'")
