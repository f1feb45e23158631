"""The scan finds a key however it is spelled, and says where without saying what."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from urllib.parse import quote

from hypothesis import given
from hypothesis import strategies as st

from pipelines.api.redact import REDACTED, Redactor, needles
from pipelines.audit.inventory import Place
from pipelines.audit.scan import place_covers, scan

KEY = "sk_live_4f9c+2a7e/1b3d=5f6a8c0e2b4d6f8a1c3e"


def found(blob: bytes, key: str = KEY) -> set[str]:
    return {n.encoding for n in needles(key) if n.value in blob}


@given(
    key=st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=16),
    before=st.binary(max_size=7),
    after=st.binary(max_size=7),
)
def test_a_key_inside_any_base64_blob_is_found(key: str, before: bytes, after: bytes) -> None:
    blob = before + key.encode() + after
    assert "base64" in found(base64.b64encode(blob), key)
    assert found(base64.urlsafe_b64encode(blob), key) & {"base64", "base64url"}


def test_url_encoded_forms_in_either_case_are_found() -> None:
    upper = quote(KEY, safe="")
    assert "%2B" in upper
    assert "url" in found(f"?key={upper}&x=1".encode())
    lower = upper.replace("%2B", "%2b").replace("%2F", "%2f").replace("%3D", "%3d")
    assert "url" in found(lower.encode())


def test_needles_never_show_their_value_in_repr() -> None:
    assert KEY not in repr(needles(KEY))


def test_redactor_scrubs_every_spelling() -> None:
    redactor = Redactor([KEY])
    encoded = base64.b64encode(b"user:" + KEY.encode()).decode()
    text = f"bad key {KEY} / {quote(KEY, safe='')} / Basic {encoded}"
    scrubbed = redactor.scrub(text)
    assert KEY not in scrubbed and quote(KEY, safe="") not in scrubbed
    assert REDACTED in scrubbed
    assert all(n.value.decode() not in scrubbed for n in needles(KEY))
    assert KEY not in repr(redactor)


def test_scan_reports_file_line_column_and_encoding(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "config.env").write_text(f"A=1\nAPI_KEY={KEY}\n")
    blob = base64.b64encode(b'{"auth": "' + KEY.encode() + b'"}').decode()
    (tmp_path / "app" / "secret.yaml").write_text(f"data:\n  creds: {blob}\n")
    (tmp_path / "app" / "url.txt").write_text(f"https://x/?k={quote(KEY, safe='')}\n")
    (tmp_path / "clean.txt").write_text("nothing here\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text(KEY)
    (tmp_path / "image.bin").write_bytes(b"\0\1\2" + KEY.encode())
    (tmp_path / "huge.log").write_text("x" * 2000 + KEY)
    hits, stats = scan([tmp_path], {"k": needles(KEY)}, max_file_bytes=1000)
    got = {(h.path.name, h.line, h.column, h.encoding) for h in hits}
    assert got == {
        ("config.env", 2, 9, "plain"),
        ("secret.yaml", 2, 24, "base64"),  # where the key starts inside the blob
        ("url.txt", 1, 14, "url"),
    }
    assert stats.files_scanned == 4
    assert (stats.skipped_binary, stats.skipped_large) == (1, 1)


def test_symlinks_are_not_followed_twice(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(KEY)
    os.symlink(tmp_path / "a.txt", tmp_path / "b.txt")
    hits, _ = scan([tmp_path], {"k": needles(KEY)})
    assert [h.path.name for h in hits] == ["a.txt"]


def test_places_cover_files_by_path_component_run_or_repository(tmp_path: Path) -> None:
    repo = tmp_path / "src" / "web"
    target = repo / "static" / "widget.js"
    target.parent.mkdir(parents=True)
    target.write_text("")
    inv_dir = tmp_path / "ops"
    inv_dir.mkdir()
    assert place_covers(Place("../src/web", "repository"), target, inv_dir)
    assert place_covers(Place(str(target), "client-side"), target, inv_dir)
    assert place_covers(Place("static/widget.js", "client-side"), target, inv_dir)
    assert place_covers(Place("web", "repository"), target, inv_dir)
    assert place_covers(Place("github.com/acme/web", "public"), target, inv_dir)
    assert place_covers(Place("git@github.com:acme/web.git", "repository"), target, inv_dir)
    assert not place_covers(Place("billing-service", "server"), target, inv_dir)
    assert not place_covers(Place("Acme CRM", "vendor"), target, inv_dir)
    assert not place_covers(Place("./other", "repository"), target, inv_dir)
    assert not place_covers(Place("github.com/acme/api", "public"), target, inv_dir)
