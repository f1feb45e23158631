"""Key fingerprints: stable per installation, useless without its secret."""

from __future__ import annotations

import stat
from pathlib import Path

from pipelines.audit.key_fingerprint import key_fingerprint, last4, load_secret
from pipelines.config.settings import AUDIT_SECRET_ENV, Settings

KEY = "sk_live_4f9c2a7e1b3d5f6a8c0e2b4d6f8a1c3e"


def test_key_fingerprint_is_short_hex_stable_and_depends_on_the_secret() -> None:
    one = key_fingerprint(KEY, b"install-1")
    assert len(one) == 16 and int(one, 16) >= 0
    assert one == key_fingerprint(KEY, b"install-1")
    assert one != key_fingerprint(KEY, b"install-2")
    assert one != key_fingerprint(KEY + "x", b"install-1")


def test_last4_only_for_keys_long_enough() -> None:
    assert last4(KEY) == "1c3e"
    assert last4("short-key") == ""


def test_secret_comes_from_the_environment_first(tmp_path: Path) -> None:
    assert load_secret(tmp_path, {AUDIT_SECRET_ENV: " s3cret "}) == b"s3cret"
    assert not (tmp_path / "audit-secret").exists()


def test_secret_file_is_created_once_with_mode_0600(tmp_path: Path) -> None:
    state = tmp_path / "state"
    first = load_secret(state, {})
    path = state / "audit-secret"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(first) == 64
    assert load_secret(state, {}) == first


def test_secret_file_lives_in_the_configured_state_dir(tmp_path: Path) -> None:
    state = tmp_path / "configured"
    first = load_secret(env={"CREDITLENS_AUDIT_STATE_DIR": str(state)})
    assert (state / "audit-secret").read_text(encoding="ascii").strip().encode() == first
    settings = Settings(audit_state_dir=state)
    assert load_secret(env={}, settings=settings) == first
