"""The inventory: which keys exist, where each is read from, where each is used, and why.

The inventory names where to read a key (an environment variable or a file), never the key
itself: an inventory is meant to be committed and reviewed, so a key written in it would be
the very exposure the audit hunts for. Every problem is one line naming the file, the entry
and the problem, and never repeats a value that could be a key.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pipelines.config.account import AccountSettings

SERVER = "server"
CLIENT_SIDE = "client-side"
PUBLIC = "public"
PLACE_KINDS = (SERVER, CLIENT_SIDE, PUBLIC, "vendor", "repository")
FLAGGED_KINDS = frozenset({CLIENT_SIDE, PUBLIC})

CAMPAIGNS = "campaigns"
BILLING = "billing"
FULL = "full"
SCOPES: dict[str, frozenset[str]] = {
    CAMPAIGNS: frozenset({CAMPAIGNS}),
    BILLING: frozenset({BILLING}),
    FULL: frozenset({CAMPAIGNS, BILLING}),
}
# The scope of a key an account syncs with: the sync reads the ledger and the balance, so billing
# is what that key is for, and no finding says it reads "beyond" it.
ACCOUNT_SCOPE = (FULL,)

_TOP_FIELDS = ("base_url", "keys")
_ENTRY_FIELDS = ("name", "env", "file", "places", "scope", "base_url")
_PLACE_FIELDS = ("place", "kind")
# Field names under which people paste a key; refused with a pointer to env/file.
_INLINE_FIELDS = frozenset(
    {"key", "value", "api_key", "apikey", "api-key", "x-api-key", "secret", "token"}
)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class InventoryError(ValueError):
    """A bad inventory; ``str()`` is one line: file, entry, problem."""


class KeyUnavailable(Exception):
    """The key cannot be read from where the inventory says (unset variable, missing file)."""


@dataclass(frozen=True)
class Place:
    """Somewhere a key is used: a service, a repository, a vendor, a web page..."""

    place: str
    kind: str

    @property
    def flagged(self) -> bool:
        """Client-side or public: anyone who can read the place can read the key."""
        return self.kind in FLAGGED_KINDS


@dataclass(frozen=True)
class KeyEntry:
    name: str
    scope: tuple[str, ...]
    places: tuple[Place, ...] = ()
    env: str | None = None
    file: Path | None = None
    base_url: str | None = None

    @property
    def scope_label(self) -> str:
        return ",".join(self.scope)

    @property
    def intended(self) -> frozenset[str]:
        """Data families the key is meant to read (``full`` is campaigns and billing)."""
        out: set[str] = set()
        for label in self.scope:
            out |= SCOPES[label]
        return frozenset(out)

    @property
    def source(self) -> str:
        return f"env {self.env}" if self.env else f"file {self.file}"

    @property
    def flagged_places(self) -> tuple[Place, ...]:
        return tuple(p for p in self.places if p.flagged)


@dataclass(frozen=True)
class Inventory:
    path: Path
    keys: tuple[KeyEntry, ...]
    base_url: str | None = None
    entries_by_name: dict[str, KeyEntry] = field(default_factory=dict, compare=False)
    # The accounts file the entries were derived from (``derived_inventory``), None for an
    # inventory file: such entries list no places, which whoever reads the report must know.
    derived_from: Path | None = None


def load_inventory(path: Path | str) -> Inventory:
    path = Path(path)
    doc = _parse(path)
    where = str(path)
    if not isinstance(doc, Mapping):
        raise InventoryError(f"{where}: the inventory must be a table/mapping with a 'keys' list")
    for name in doc:
        if name not in _TOP_FIELDS:
            raise InventoryError(
                f"{where}: unknown top-level field {str(name)!r} "
                f"(allowed: {', '.join(_TOP_FIELDS)})"
            )
    base_url = _optional_url(doc.get("base_url"), where, "top level")
    raw_keys = doc.get("keys")
    if not isinstance(raw_keys, list) or not raw_keys:
        raise InventoryError(f"{where}: 'keys' must be a non-empty list of key entries")
    entries: list[KeyEntry] = []
    seen: dict[str, KeyEntry] = {}
    for index, raw in enumerate(raw_keys, start=1):
        entry = _entry(raw, where, index, path.parent)
        if entry.name in seen:
            raise InventoryError(f"{where}: key {entry.name!r}: the name is used twice")
        seen[entry.name] = entry
        entries.append(entry)
    return Inventory(path=path, keys=tuple(entries), base_url=base_url, entries_by_name=seen)


def derived_inventory(accounts: Sequence[AccountSettings], source: Path) -> Inventory:
    """The inventory an accounts file implies: one entry per key variable, named after the first
    account reading it, with that account's base URL, scope ``full`` and no places.

    Accounts naming the same variable (several left at CREDITLENS_API_KEY) read with one key:
    one entry, so the key is probed once and its copies are not reported once per account.
    """
    entries: dict[str, KeyEntry] = {}
    for account in accounts:
        if account.api_key_env not in entries:
            entries[account.api_key_env] = KeyEntry(
                name=account.name,
                scope=ACCOUNT_SCOPE,
                env=account.api_key_env,
                base_url=account.base_url,
            )
    if not entries:
        raise InventoryError(f"{source}: no accounts to derive the key inventory from")
    keys = tuple(entries.values())
    return Inventory(
        path=source,
        keys=keys,
        entries_by_name={e.name: e for e in keys},
        derived_from=source,
    )


def resolve_key(entry: KeyEntry, env: Mapping[str, str] | None = None) -> str:
    """Read the key now, from where the inventory says; the text never goes further than needed."""
    environ = os.environ if env is None else env
    if entry.env is not None:
        value = environ.get(entry.env, "")
        if not value.strip():
            raise KeyUnavailable(f"environment variable {entry.env} is not set or empty")
        return value.strip()
    assert entry.file is not None
    try:
        value = entry.file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise KeyUnavailable(f"key file {entry.file} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise KeyUnavailable(f"key file {entry.file} cannot be read: {reason}") from None
    if not value.strip():
        raise KeyUnavailable(f"key file {entry.file} is empty")
    return value.strip()


# -- parsing ------------------------------------------------------------------------------------


def _parse(path: Path) -> Any:
    suffix = path.suffix.lower()
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InventoryError(f"{path}: cannot read the inventory: {exc.strerror or exc}") from None
    if suffix == ".toml":
        try:
            return tomllib.loads(data.decode("utf-8"))
        except UnicodeDecodeError:
            raise InventoryError(f"{path}: not UTF-8 text") from None
        except tomllib.TOMLDecodeError as exc:
            raise InventoryError(f"{path}: not valid TOML: {exc}") from None
    if suffix in (".yaml", ".yml"):
        try:
            return yaml.safe_load(data)
        except yaml.MarkedYAMLError as exc:
            # Not str(exc): it quotes the offending line, which may hold a key.
            mark = exc.problem_mark
            at = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
            raise InventoryError(f"{path}: not valid YAML: {exc.problem}{at}") from None
        except yaml.YAMLError:
            raise InventoryError(f"{path}: not valid YAML") from None
    raise InventoryError(f"{path}: unknown inventory format: use a .toml, .yaml or .yml file")


def _entry(raw: Any, where: str, index: int, base_dir: Path) -> KeyEntry:
    label = f"keys[{index}]"
    if not isinstance(raw, Mapping):
        raise InventoryError(f"{where}: {label}: a key entry must be a table/mapping")
    name = raw.get("name")
    if isinstance(name, str) and name.strip():
        label = f"key {name.strip()!r}"
    for field_name in raw:
        text = str(field_name)
        if text.lower() in _INLINE_FIELDS:
            raise InventoryError(
                f"{where}: {label}: the key must not be written in the inventory (field "
                f'{text!r}): read it from env = "VARIABLE" or file = "path", and rotate it '
                "if this file was ever shared"
            )
        if text not in _ENTRY_FIELDS:
            raise InventoryError(
                f"{where}: {label}: unknown field {text!r} (allowed: {', '.join(_ENTRY_FIELDS)})"
            )
    if not isinstance(name, str) or not name.strip():
        raise InventoryError(f"{where}: {label}: 'name' is required and must be a non-empty text")
    env, file = raw.get("env"), raw.get("file")
    if (env is None) == (file is None):
        raise InventoryError(
            f'{where}: {label}: give exactly one of env = "VARIABLE" or file = "path"'
        )
    if env is not None and (not isinstance(env, str) or not _ENV_NAME.match(env)):
        # No echo: a value that is not a variable name may well be the key itself.
        raise InventoryError(
            f"{where}: {label}: 'env' must be the name of an environment variable "
            "(letters, digits, underscores), not the key"
        )
    key_file: Path | None = None
    if file is not None:
        if not isinstance(file, str) or not file.strip():
            raise InventoryError(f"{where}: {label}: 'file' must be a non-empty path")
        key_file = Path(file).expanduser()
        if not key_file.is_absolute():
            key_file = base_dir / key_file
    return KeyEntry(
        name=name.strip(),
        scope=_scope(raw.get("scope"), where, label),
        places=_places(raw.get("places"), where, label),
        env=env,
        file=key_file,
        base_url=_optional_url(raw.get("base_url"), where, label),
    )


def _scope(raw: Any, where: str, label: str) -> tuple[str, ...]:
    allowed = ", ".join(SCOPES)
    if raw is None:
        raise InventoryError(f"{where}: {label}: 'scope' is required (one of {allowed})")
    items = [raw] if isinstance(raw, str) else raw
    if not isinstance(items, list) or not items:
        raise InventoryError(f"{where}: {label}: 'scope' must be one of {allowed}, or a list")
    out: list[str] = []
    for item in items:
        if not isinstance(item, str) or item.strip().lower() not in SCOPES:
            shown = repr(item) if isinstance(item, str) and len(item) <= 20 else "value"
            raise InventoryError(f"{where}: {label}: scope {shown} is not one of {allowed}")
        value = item.strip().lower()
        if value not in out:
            out.append(value)
    return tuple(out)


def _places(raw: Any, where: str, label: str) -> tuple[Place, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InventoryError(
            f'{where}: {label}: \'places\' must be a list of {{place = "...", kind = "..."}}'
        )
    out: list[Place] = []
    for number, item in enumerate(raw, start=1):
        at = f"{label}: places[{number}]"
        if not isinstance(item, Mapping):
            raise InventoryError(f"{where}: {at}: must be a table/mapping with place and kind")
        for field_name in item:
            if str(field_name) not in _PLACE_FIELDS:
                raise InventoryError(
                    f"{where}: {at}: unknown field {str(field_name)!r} (allowed: place, kind)"
                )
        place, kind = item.get("place"), item.get("kind")
        if not isinstance(place, str) or not place.strip():
            raise InventoryError(f"{where}: {at}: 'place' is required and must be a non-empty text")
        if not isinstance(kind, str):
            raise InventoryError(
                f"{where}: {at}: 'kind' is required (one of {', '.join(PLACE_KINDS)})"
            )
        normalized = kind.strip().lower().replace("_", "-").replace(" ", "-")
        if normalized == "clientside":
            normalized = CLIENT_SIDE
        if normalized not in PLACE_KINDS:
            shown = repr(kind) if len(kind) <= 20 else "value"
            raise InventoryError(
                f"{where}: {at}: kind {shown} is not one of {', '.join(PLACE_KINDS)}"
            )
        out.append(Place(place=place.strip(), kind=normalized))
    return tuple(out)


def _optional_url(raw: Any, where: str, label: str) -> str | None:
    if raw is None:
        return None
    if not isinstance(raw, str) or not raw.strip().startswith(("http://", "https://")):
        raise InventoryError(f"{where}: {label}: 'base_url' must be an http:// or https:// URL")
    return raw.strip().rstrip("/")
