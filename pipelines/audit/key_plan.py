"""How each key of an audit is probed: which inventory, which account's API, which URL.

With several accounts (an accounts file), a key is probed with the ledger range parameters of the
account it belongs to, never silently with the first account's: a wrong query would read as a
"probe incomplete" finding about the key. Without an inventory file, the accounts file gives one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pipelines.api.errors import ConfigurationError
from pipelines.api.options import BASE_URL_ENV, ApiOptions
from pipelines.audit.inventory import Inventory, KeyEntry, derived_inventory, load_inventory
from pipelines.config.account import AccountSettings
from pipelines.config.accounts_file import CONFIG_ENV, DEFAULT_CONFIG
from pipelines.config.settings import Settings


def key_inventory(source: Path | str | Inventory | None, settings: Settings) -> Inventory:
    if isinstance(source, Inventory):
        return source
    if source is not None:
        return load_inventory(source)
    if settings.config_file is None:
        raise ConfigurationError(
            "no key inventory: give an inventory file, or use an accounts file "
            f"({CONFIG_ENV} or ./{DEFAULT_CONFIG}) to derive one from (see docs/audit.md)"
        )
    return derived_inventory(settings.accounts, settings.config_file)


# The ApiOptions an audit takes from a key's account: what the ledger probe's query is made of.
RANGE_OPTIONS = ("range_start_param", "range_end_param", "range_format")
LEDGER_ENDPOINT = "transactions"


@dataclasses.dataclass(frozen=True)
class KeyPlan:
    """How one key is probed: where, with which client options, and what its result should
    say about that choice (empty when nothing was assumed)."""

    url: str
    options: dict[str, Any]
    # Where the entry came from, when not from an inventory file.
    origin: str = ""
    # Why the ledger was asked with the API's default range parameters, when it was.
    defaults: str = ""

    @property
    def note(self) -> str:
        return "; ".join(n for n in (self.origin, self.defaults) if n)


def match_account(
    entry: KeyEntry, accounts: Sequence[AccountSettings], url: str | None
) -> tuple[AccountSettings | None, str]:
    """The account whose API a key reads, and, when there is none, why.

    By name first (an inventory written for an accounts file names its keys after the
    accounts), then by the base URL the key is probed at (``url``, without any account's): the
    range parameters are the deployment's, so any account there will do, as long as they all
    agree. With one account configured, that one. Otherwise None: taking the first account's
    parameters for a key of another deployment would turn a wrong query into a "probe
    incomplete" finding about the key.
    """
    if len(accounts) == 1:
        return accounts[0], ""
    for account in accounts:
        if account.name == entry.name:
            return account, ""
    if url is None:
        return None, "no configured account has its name, and no base URL is given for it"
    here = [a for a in accounts if a.base_url is not None and a.base_url.rstrip("/") == url]
    if not here:
        return None, "no configured account has its name or its base URL"
    if len({_range_options(a) for a in here}) > 1:
        names = ", ".join(a.name for a in here)
        return None, f"the accounts at its base URL ({names}) differ in their range parameters"
    return here[0], ""


def _range_options(account: AccountSettings) -> tuple[Any, ...]:
    return tuple(getattr(account.api, name) for name in RANGE_OPTIONS)


def key_plan(
    entry: KeyEntry,
    inventory: Inventory,
    settings: Settings,
    base_url: str | None,
    environ: Mapping[str, str],
    overrides: Mapping[str, Any],
) -> KeyPlan:
    given = base_url.rstrip("/") if base_url else None
    account, unmatched = match_account(
        entry, settings.accounts, entry.base_url or given or inventory.base_url
    )
    if account is not None:
        # The deployment's ledger range parameters: an audit probes the API the sync reads.
        fallback = account.base_url
        options = {name: getattr(account.api, name) for name in RANGE_OPTIONS}
    else:
        fallback = environ.get(BASE_URL_ENV, "").strip() or None
        options = {}
    url = _base_url(entry, given or fallback or inventory.base_url, inventory)
    origin = defaults = ""
    if inventory.derived_from is not None:
        origin = _derived_note(entry, settings, inventory.derived_from)
    if account is None and not set(RANGE_OPTIONS) <= overrides.keys():
        api = ApiOptions()
        defaults = (
            "probed with the API's default ledger range parameters "
            f"({api.range_start_param}/{api.range_end_param}, {api.range_format}): {unmatched}"
        )
    return KeyPlan(url, {**options, **overrides}, origin, defaults)


def _derived_note(entry: KeyEntry, settings: Settings, source: Path) -> str:
    sharing = [a.name for a in settings.accounts if a.api_key_env == entry.env]
    whose = (
        f"the key of accounts {', '.join(sharing)} ({entry.env})"
        if len(sharing) > 1
        else f"the key of account {entry.name}"
    )
    return (
        f"derived from the accounts file {source}: {whose}; no places are listed, so only a "
        "scan (--scan, --scan-git) can tell where it lies"
    )


def _base_url(entry: KeyEntry, default: str | None, inventory: Inventory) -> str:
    url = entry.base_url or default
    if not url:
        where = "the account" if inventory.derived_from else "the inventory"
        raise ConfigurationError(
            f"{inventory.path}: key {entry.name!r}: no base URL: pass --base-url, set "
            f"{BASE_URL_ENV}, or add base_url to {where}"
        )
    return url.rstrip("/")
