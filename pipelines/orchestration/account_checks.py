"""Names per account: the same rule, one result for each company, each with its own name.

Dagster names a check by its asset and its name, and the day is the ledger's only partition
(docs/scale-out.md says why the account is not a second one), so a check evaluated per account
carries the account in its name: ``no_hidden_movements__acme``. The reconciliation's assets are
each account's own (``acme/balance_breaks``): Dagster shows a check's result only while it targets
its asset's latest materialization, so one asset for every account let a sync of one company
hide the others' checks as "Not Evaluated". An installation without an accounts file (its one
implicit account, from the CREDITLENS_* variables) keeps the plain names it always had, so its
history in the UI and anything filtering on them keep working.
"""

from __future__ import annotations

import hashlib
import re

from pipelines.config.settings import Settings

SEPARATOR = "__"
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_]")


def named_per_account(settings: Settings) -> bool:
    """Whether check names carry the account: with an accounts file, even of one account, so
    that narrowing a run to one account (``--account``) never renames its checks."""
    return settings.config_file is not None or len(settings.accounts) > 1


def account_slug(account: str) -> str:
    """The account's name as Dagster allows in a check name (letters, digits, ``_``); a name
    that had to change gets a short digest of the original, so two never collide."""
    slug = _NOT_ALLOWED.sub("_", account)
    if slug == account:
        return slug
    digest = hashlib.blake2b(account.encode(), digest_size=3).hexdigest()
    return f"{slug}_{digest}"


def check_name(base: str, account: str, settings: Settings) -> str:
    return f"{base}{SEPARATOR}{account_slug(account)}" if named_per_account(settings) else base


def asset_path(name: str, account: str, per_account: bool) -> list[str]:
    """The asset key's path of ``name`` (a reconciliation output) for ``account``: under the
    account's slug with an accounts file, else the plain name."""
    return [account_slug(account), name] if per_account else [name]


def account_asset_paths(name: str, settings: Settings) -> dict[str, list[str]]:
    """Each configured account's asset key path for ``name``."""
    per_account = named_per_account(settings)
    return {a.name: asset_path(name, a.name, per_account) for a in settings.accounts}


def check_names(base: str, settings: Settings) -> dict[str, str]:
    """Each configured account's name for the check ``base``."""
    return {a.name: check_name(base, a.name, settings) for a in settings.accounts}
