"""The key search of test_secrets finds a key wherever and however it is written: a search that
cannot find anything would prove nothing."""

from __future__ import annotations

import base64
import sqlite3
from pathlib import Path
from urllib.parse import quote

import duckdb
import polars as pl

from tests.reliability.secrets_search import files_under, search

KEY = "sk_test+Find/Me0123456789abcdef=="


def test_every_spelling_in_every_format_is_found(tmp_path: Path) -> None:
    (tmp_path / "plain.log").write_text(f"sending X-Api-Key: {KEY}\n")
    (tmp_path / "url.log").write_text(f"GET /x?key={quote(KEY, safe='').lower()}\n")
    blob = base64.b64encode(f'{{"headers": {{"X-Api-Key": "{KEY}"}}}}'.encode()).decode()
    (tmp_path / "secret.yaml").write_text(f"data: {blob}\n")
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    con.execute("CREATE TABLE t AS SELECT ? || (i % 3)::VARCHAR AS v FROM range(50000) r(i)", [KEY])
    con.close()
    pl.DataFrame({"v": [KEY] * 1000}).write_parquet(tmp_path / "s.parquet", compression="zstd")
    lite = sqlite3.connect(tmp_path / "runs.db")
    lite.execute("CREATE TABLE e (body TEXT)")
    lite.execute("INSERT INTO e VALUES (?)", (f"error: {KEY}",))
    lite.commit()
    lite.close()
    (tmp_path / "clean.txt").write_text("nothing here\n")

    hits, searched = search({"k": KEY}, files_under(tmp_path), {"stderr": f"oops {KEY}"})
    found = {(Path(h.where.split(":")[0]).name, h.spelling) for h in hits}
    assert {
        ("plain.log", "plain"),
        ("url.log", "url-lower"),
        ("stderr", "plain"),
        ("runs.db", "plain"),
    } <= found
    assert any(name == "secret.yaml" and s.startswith("base64@") for name, s in found)
    assert any(name == "w.duckdb" for name, _ in found)  # value by value, whatever the storage
    assert any(name == "s.parquet" for name, _ in found)
    assert not any(name == "clean.txt" for name, _ in found)
    assert len(searched) > len(files_under(tmp_path))
