"""The accounts file: one installation syncing many companies, each read with its own key.

An agency lists its accounts in TOML (``CREDITLENS_CONFIG``, else ``creditlens.toml`` in the
working directory when there is one); the installation (warehouse, reports, audit) stays in the
environment, and so do the keys: an account names the variable holding its key, so the file can
be committed, reviewed and copied without carrying one. Without a file the environment describes
one account, as it always has (docs/accounts.md).

A field is looked up in the account's table, then ``[defaults]``, then the per-account
CREDITLENS_* variable, then the model's default: the environment stays the fallback, so a
setting the whole installation shares (a timeout, a proxy-friendly page size) is set once.

Every mistake is one ConfigurationError line naming the file, the account and the field, shown
as ``describe_validation_error`` shows the environment's: never with a value that could be a key
or a URL carrying credentials, and a key written into the file is refused without being shown.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from pipelines.api.environment import (
    describe_validation_error,
    env_var,
    is_key_like,
    values_from_env,
)
from pipelines.api.errors import ConfigurationError
from pipelines.api.options import ApiOptions
from pipelines.config.account import AccountSettings
from pipelines.config.alert_rules import ALERT_TABLES, read_alerting
from pipelines.config.statement_delivery import STATEMENTS, read_statement_delivery
from pipelines.config.toml_file import config_error, file_label, read_document

CONFIG_ENV = "CREDITLENS_CONFIG"
DEFAULT_CONFIG = "creditlens.toml"
DEFAULTS = "defaults"
ACCOUNTS = "accounts"

# Flat in a table: an account's own fields, and its API options, which go into ``api``.
ACCOUNT_FIELDS = frozenset(AccountSettings.model_fields) - {"api"}
API_FIELDS = frozenset(ApiOptions.model_fields)
FIELDS = ACCOUNT_FIELDS | API_FIELDS
# The installation's settings (name -> the variable setting it) are refused in the file with that
# variable instead: the installation's model gives them (``Settings.from_env``), as this module
# sits below it.
Installation = Mapping[str, str | None]
S = TypeVar("S", bound=BaseModel)
# A per-account variable typed as a field's name is pointed at the field.
BY_VARIABLE = {
    var: name
    for model in (AccountSettings, ApiOptions)
    for name, field in model.model_fields.items()
    if (var := env_var(field)) is not None and name in FIELDS
}
# A field named like one of these is where someone put a key: refused as such, value unseen.
SECRET_WORDS = ("key", "token", "secret", "passw", "credential", "bearer", "auth")
_WORD_BREAK = re.compile(r"[^A-Za-z0-9]+")


def find_config(env: Mapping[str, str], cwd: Path) -> Path | None:
    """The accounts file in force, or None. A file named by CREDITLENS_CONFIG must exist: a typo
    there silently falling back to one implicit account would sync the wrong company."""
    named = env.get(CONFIG_ENV, "").strip()
    if not named:
        default = cwd / DEFAULT_CONFIG
        return default if default.is_file() else None
    path = cwd / named  # an absolute name replaces cwd
    if not path.is_file():
        problem = "not a file" if path.exists() else "no such file"
        raise ConfigurationError(f"{CONFIG_ENV}: {problem}: {named}")
    return path


def with_accounts_file(
    settings: S, env: Mapping[str, str], cwd: Path, installation: Installation
) -> S:
    """``settings`` (read from ``env``) with the accounts of the file in force, if any; the
    environment, already validated, only fills in what the file leaves out."""
    path = find_config(env, cwd)
    if path is None:
        return settings
    label = file_label(path, cwd)
    document = read_document(path, label)
    if ACCOUNTS not in document and any(t in document for t in (*ALERT_TABLES, STATEMENTS)):
        # Rules for the environment's one account: its check names stay plain (docs/alerts.md).
        found = read_alerting(document, label, [a.name for a in settings.accounts])
        read_statement_delivery(document, label, found.channels, settings.accounts)
        return settings
    accounts = read_accounts(path, env, installation, cwd)
    found = read_alerting(document, label, [a.name for a in accounts])
    read_statement_delivery(document, label, found.channels, accounts)
    return settings.model_copy(update={ACCOUNTS: accounts, "config_file": path})


def read_accounts(
    path: Path, env: Mapping[str, str], installation: Installation, cwd: Path | None = None
) -> tuple[AccountSettings, ...]:
    """The accounts listed in ``path``, each over ``[defaults]`` over the per-account variables
    of ``env``; ``cwd`` only shortens the file's name in messages."""
    label = file_label(path, cwd)
    document = read_document(path, label)
    for key in document:
        if key not in (DEFAULTS, ACCOUNTS, *ALERT_TABLES, STATEMENTS):
            raise config_error(label, _top_level_problem(key, installation))
    defaults = document.get(DEFAULTS, {})
    if not isinstance(defaults, dict):
        raise config_error(label, DEFAULTS, f"must be a table, written [{DEFAULTS}]")
    tables = _account_tables(document.get(ACCOUNTS), label)

    inherited = values_from_env(AccountSettings, env)
    inherited.pop("name", None)  # each account names itself, in the file
    where = f"[{DEFAULTS}]"
    _check_fields(defaults, label, where, installation, in_defaults=True)
    inherited = _merged(inherited, defaults)
    _validated(inherited, label, where)

    accounts: list[AccountSettings] = []
    seen: dict[str, int] = {}
    for index, table in enumerate(tables):
        name = table.get("name")
        if not isinstance(name, str) or not name.strip():
            problem = "missing" if name is None else "must be a non-empty string"
            raise config_error(
                label,
                f"{ACCOUNTS}[{index}]",
                f'name: {problem}: each account names itself, e.g. name = "acme"',
            )
        if _looks_like_key(name):
            # The name is in every line about the account and on every row: never a key.
            raise config_error(
                label,
                f"{ACCOUNTS}[{index}]",
                "name: looks like a key: refused, value not shown; name the company instead",
            )
        where = f"account {json.dumps(name, ensure_ascii=False)}"
        _check_fields(table, label, where, installation, in_defaults=False)
        if name in seen:
            raise config_error(
                label,
                where,
                f"listed twice ({ACCOUNTS}[{seen[name]}] and {ACCOUNTS}[{index}]): account "
                "names must be distinct",
            )
        seen[name] = index
        accounts.append(_validated(_merged(inherited, table), label, where))
    return tuple(accounts)


def _account_tables(value: Any, label: str) -> list[dict[str, Any]]:
    if value is None or value == []:
        raise config_error(
            label, f"no accounts: list each company as [[{ACCOUNTS}]] with its name and api_key_env"
        )
    if isinstance(value, dict):
        raise config_error(
            label,
            ACCOUNTS,
            f"a table where the list of accounts should be: write each account as [[{ACCOUNTS}]] "
            "(two brackets) with its name inside",
        )
    if not isinstance(value, list):
        raise config_error(label, ACCOUNTS, f"must be a list of [[{ACCOUNTS}]] tables")
    for index, table in enumerate(value):
        if not isinstance(table, dict):
            raise config_error(
                label,
                f"{ACCOUNTS}[{index}]",
                f"not a table: write each account as [[{ACCOUNTS}]] followed by its fields",
            )
    return value


def _looks_like_key(name: str) -> bool:
    """Whether a field's name is itself key material (``is_key_like``, the rule of a variable's
    name): such a name is never repeated, in case the key was pasted where a field's name goes."""
    return any(is_key_like(part) for part in _WORD_BREAK.split(name))


def _names_a_secret(name: str) -> bool:
    squashed = _WORD_BREAK.sub("", name).lower()
    return any(word in squashed for word in SECRET_WORDS)


def _secret_refusal(name: str) -> str:
    return (
        f"{name}: a key never goes in this file: set api_key_env to the name of the variable "
        "holding it (value not shown)"
    )


def _top_level_problem(key: str, installation: Installation) -> str:
    if _looks_like_key(key):
        return "a top-level name that looks like a key: refused, name not shown"
    if key in installation:
        return _installation_refusal(key, installation)
    if key in FIELDS:
        return (
            f"{key}: an account's field: put it in [{DEFAULTS}] (every account) or in an "
            f"[[{ACCOUNTS}]] table"
        )
    if _names_a_secret(key):
        return _secret_refusal(key)
    return f"{key}: {_unknown(key, [DEFAULTS, ACCOUNTS, *ALERT_TABLES, STATEMENTS], 'table')}"


def _installation_refusal(key: str, installation: Installation) -> str:
    var = installation[key]
    where = f"set {var} in the environment" if var else "it stays in the environment"
    return f"{key}: an installation setting, not an account's: {where}"


def _unknown(key: str, known: list[str], what: str) -> str:
    guess = BY_VARIABLE.get(key) or next(
        iter(difflib.get_close_matches(key.lower(), known, n=1, cutoff=0.6)), None
    )
    return f"unknown {what}" + (f', did you mean "{guess}"?' if guess else "")


def _check_fields(
    table: dict[str, Any], label: str, where: str, installation: Installation, *, in_defaults: bool
) -> None:
    """Refuses a name that is not a field before validation, so the line can say what was meant
    (an installation setting, a key, a typo) instead of pydantic's "extra inputs"."""
    for key, value in table.items():
        if key in FIELDS:
            if key == "name" and in_defaults:
                problem = "name: each account names itself: not allowed in [defaults]"
            elif isinstance(value, bool):
                # No field is a flag; pydantic would read true as 1.
                problem = f"{key}: takes no true/false"
            else:
                continue
        elif _looks_like_key(key):
            problem = "a field whose name looks like a key: refused, name not shown"
        elif key == "api":
            problem = "api: write its fields flat in the table (e.g. page_size = 50)"
        elif key in installation:
            problem = _installation_refusal(key, installation)
        elif _names_a_secret(key):
            problem = _secret_refusal(key)
        else:
            problem = f"{key}: {_unknown(key, sorted(FIELDS), 'field')}"
        raise config_error(label, where, problem)


def _merged(base: dict[str, Any], table: dict[str, Any]) -> dict[str, Any]:
    """``table``'s flat fields over ``base`` (the model's shape: API options under ``api``)."""
    merged = {**base, "api": dict(base.get("api", {}))}
    for key, value in table.items():
        if key in API_FIELDS:
            merged["api"][key] = value
        else:
            merged[key] = value
    return merged


def _validated(values: dict[str, Any], label: str, where: str) -> AccountSettings:
    try:
        return AccountSettings.model_validate(values)
    except ValidationError as exc:
        raise config_error(label, where, _describe(exc)) from None


def _describe(exc: ValidationError) -> str:
    """``describe_validation_error`` with the file's names: the field as written in a table
    (``page_size``, not ``api.page_size``); the value shown by the same rule."""
    return describe_validation_error(exc, AccountSettings, _name_in_table)


def _name_in_table(loc: tuple[Any, ...], field: FieldInfo | None) -> str:
    names = [part for part in loc if isinstance(part, str)]
    name = names[1] if names[:1] == ["api"] and len(names) > 1 else ".".join(names)
    return name or "account"
