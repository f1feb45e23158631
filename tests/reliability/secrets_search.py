"""Looking for an API key in everything a run wrote: every spelling, every file format we write.

A key can hide in more than plain text: URL-encoded in a logged URL, base64 inside a header dump
or a blob, and compressed inside a DuckDB or Parquet file (dictionary or FSST compression keeps a
string from appearing as its bytes). So each file is searched as bytes, and databases and Parquet
files also value by value.
"""

from __future__ import annotations

import base64
import json
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, quote_plus

import duckdb
import polars as pl

MIN_ENCODED_CHARS = 8  # shorter base64 fragments would match unrelated text


def spellings(key: str) -> dict[str, bytes]:
    """The key as written, URL-encoded (both hex cases, and form-encoded), JSON-escaped, and
    base64 (standard and URL-safe) at each of the three byte alignments inside a longer blob."""
    raw = key.encode()
    found = {
        "plain": raw,
        "url": quote(key, safe="").encode(),
        "url-lower": quote(key, safe="").encode().lower(),
        "form": quote_plus(key).encode(),
        "json": json.dumps(key)[1:-1].encode(),
    }
    for alignment in range(3):
        for name, encode in (("base64", base64.b64encode), ("base64url", base64.urlsafe_b64encode)):
            encoded = encode(b"\0" * alignment + raw)
            start = -(-alignment * 8 // 6)  # first character free of the padding's bits
            end = (alignment + len(raw)) * 8 // 6  # last character made of key bits only
            if end - start >= MIN_ENCODED_CHARS:
                found[f"{name}@{alignment}"] = encoded[start:end]
    return found


@dataclass(frozen=True)
class Hit:
    where: str  # file (and table or column) or stream name
    key_label: str
    spelling: str


def _database_values(path: Path) -> Iterator[tuple[str, bytes]]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        tables = con.execute("SELECT schema_name, table_name FROM duckdb_tables()").fetchall()
        for schema, name in tables:
            rows = con.execute(f'SELECT * FROM "{schema}"."{name}"').fetchall()
            yield f"{path}:{name}", repr(rows).encode("utf-8", "backslashreplace")
    finally:
        con.close()


def _sqlite_values(path: Path) -> Iterator[tuple[str, bytes]]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        yield str(path), "\n".join(con.iterdump()).encode("utf-8", "backslashreplace")
    finally:
        con.close()


def _parquet_values(path: Path) -> Iterator[tuple[str, bytes]]:
    yield str(path), repr(pl.read_parquet(path).rows()).encode("utf-8", "backslashreplace")


def texts_of(path: Path) -> Iterator[tuple[str, bytes]]:
    """The file's bytes, then its values when it is a database or a Parquet file."""
    data = path.read_bytes()
    yield str(path), data
    readers = []
    if data.startswith(b"SQLite format 3"):
        readers.append(_sqlite_values)
    if data[8:12] == b"DUCK":
        readers.append(_database_values)
    if data.startswith(b"PAR1"):
        readers.append(_parquet_values)
    for read in readers:
        try:
            yield from read(path)
        except Exception as exc:  # a file another process still holds, or a partial copy
            yield f"{path} (unreadable: {type(exc).__name__})", b""


def files_under(*roots: Path) -> list[Path]:
    return sorted(p for root in roots if root.exists() for p in root.rglob("*") if p.is_file())


def search(
    keys: dict[str, str], files: Iterable[Path], streams: dict[str, str]
) -> tuple[list[Hit], list[str]]:
    """Every hit of every spelling of every key, and the places searched."""
    needles = {label: spellings(key) for label, key in keys.items()}
    hits: list[Hit] = []
    searched: list[str] = []
    sources: list[tuple[str, bytes]] = [(name, text.encode()) for name, text in streams.items()]
    for path in files:
        sources.extend(texts_of(path))
    for where, data in sources:
        searched.append(where)
        for label, forms in needles.items():
            for spelling, needle in forms.items():
                if needle in data:
                    hits.append(Hit(where, label, spelling))
    return hits, searched
