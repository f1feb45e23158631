"""Whether a run speaks of accounts, and an account's name where Dagster allows fewer letters.

Every step's assets and checks are the same few whatever the number of companies; each account's
figures, findings or failure line is its own record in the step's ``account_records``
(pipelines/orchestration/metadata.py; docs/scale-out.md, "One event per step, not per company").
An installation without an accounts file (its one implicit account, from the CREDITLENS_*
variables) reads exactly as it always has: one account's lines, its failure raised as it was.
"""

from __future__ import annotations

import hashlib
import re

from pipelines.config.settings import Settings

_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_]")


def named_per_account(settings: Settings) -> bool:
    """Whether lines and failures name the account: with an accounts file, even of one account,
    so that narrowing a run to one account (``--account``) still says which."""
    return settings.config_file is not None or len(settings.accounts) > 1


def account_slug(account: str) -> str:
    """The name as Dagster allows in a check name or a folder (letters, digits, ``_``); a name
    that had to change gets a short digest of the original, so two never collide."""
    slug = _NOT_ALLOWED.sub("_", account)
    if slug == account:
        return slug
    digest = hashlib.blake2b(account.encode(), digest_size=3).hexdigest()
    return f"{slug}_{digest}"
