"""Naming a key without revealing it: its key fingerprint.

A keyed hash (HMAC-SHA256 with a per-installation secret) rather than a plain hash: API keys
are short enough that a plain hash published in a report or a SARIF upload could be matched
against a leaked-key list; without the secret nobody can test a guess.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path

from pipelines.config.settings import Settings

log = logging.getLogger(__name__)

SECRET_FILE_NAME = "audit-secret"
KEY_FINGERPRINT_HEX_CHARS = 16
# Below this length the last four characters are too large a share of the key to show.
MIN_LENGTH_FOR_LAST4 = 12


class AuditSecretError(Exception):
    """The per-installation secret cannot be read or created."""


def key_fingerprint(key: str, secret: bytes) -> str:
    """Short stable id of a key for this installation (16 hex chars = 64 bits)."""
    digest = hmac.new(secret, key.encode("utf-8"), hashlib.sha256).hexdigest()
    return digest[:KEY_FINGERPRINT_HEX_CHARS]


def last4(key: str) -> str:
    """The last four characters, or nothing when the key is too short to show any of it."""
    return key[-4:] if len(key) >= MIN_LENGTH_FOR_LAST4 else ""


def load_secret(
    state_dir: Path | None = None,
    env: Mapping[str, str] | None = None,
    settings: Settings | None = None,
) -> bytes:
    """The installation's secret: from its variable (CREDITLENS_AUDIT_SECRET), else a 0600 file
    created once in ``state_dir``, by default the settings' (CREDITLENS_AUDIT_STATE_DIR).

    ``settings`` default to those of ``env``; the secret itself is read from ``env`` (the
    process's environment when None), never from the settings, which hold only its variable's
    name. The same secret must be used run after run, or fingerprints change and a dashboard
    tracking a key over time loses it.
    """
    settings = settings or Settings.from_env(env)
    given = settings.audit_secret(env)
    if given is not None:
        return given.get_secret_value().encode("utf-8")
    path = (state_dir or settings.audit_state_dir).expanduser() / SECRET_FILE_NAME
    try:
        return _read_or_create(path)
    except OSError as exc:
        raise AuditSecretError(
            f"cannot read or create the audit secret {path}: {exc.strerror or exc}; "
            f"set {settings.audit_secret_env} or choose another state dir"
        ) from None


def _read_or_create(path: Path) -> bytes:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read_existing(path)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(secrets.token_hex(32) + "\n")
    log.info("created the audit secret %s (mode 0600)", path)
    return _read_existing(path)


def _read_existing(path: Path) -> bytes:
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        log.warning("the audit secret %s is readable by others (mode %o): chmod 600 it", path, mode)
    value = path.read_text(encoding="ascii").strip()
    if not value:
        raise AuditSecretError(f"the audit secret {path} is empty: delete it to create a new one")
    return value.encode("ascii")
