"""Alert rules and channels, as the accounts file writes them (``[[alerts]]``, ``[[channels]]``).

Parsed here, beside the accounts file's own reader, and refused the same way: one line naming
the file, the rule and the field, never a value that could be a channel's URL (a URL carries
its token, so a channel names the VARIABLE holding it, ``url_env``, as an account names its key's).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from pipelines.config.toml_file import config_error

CHANNELS = "channels"
ALERTS = "alerts"
ALERT_TABLES = (CHANNELS, ALERTS)
# The fields of a [[channels]] table.
CHANNEL_FIELDS = ("name", "url_env")

KINDS = (
    "balance_below",
    "runway_below",
    "budget",
    "spend_anomaly",
    "hidden_movement",
    "sync_failed",
    "stale",
)
# Kinds that keep a state (ok, firing, recovered); the others fire once per event. A failed sync
# keeps one per account: firing while its latest attempt failed, recovered at its next success.
THRESHOLD_KINDS = frozenset({"balance_below", "runway_below", "budget", "stale", "sync_failed"})
DIMENSIONS = ("account", "agent", "campaign", "channel")
DEFAULT_RECOVER_MARGIN = Decimal("0.05")
# The fields each kind takes (besides name, kind, channels, accounts, recover_margin) and which
# of them it requires.
KIND_FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "balance_below": (("threshold",), ("threshold",)),
    "runway_below": (("days",), ("days",)),
    "budget": (("dimension", "value", "monthly_limit"), ("dimension", "monthly_limit")),
    "spend_anomaly": (("dimension", "min_credits"), ("dimension", "min_credits")),
    "hidden_movement": ((), ()),
    "sync_failed": ((), ()),
    "stale": (("hours",), ("hours",)),
}
COMMON = ("name", "kind", "channels", "accounts", "recover_margin")
NUMBERS = ("threshold", "days", "monthly_limit", "min_credits", "hours", "recover_margin")
# The numbers a rule divides by or compares with: zero or less would fire always or never.
POSITIVE = frozenset({"threshold", "days", "monthly_limit", "min_credits", "hours"})
_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")
_RULE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


@dataclass(frozen=True)
class Channel:
    """Where alerts go: the NAME of the variable holding an Apprise URL, never the URL."""

    name: str
    url_env: str


@dataclass(frozen=True)
class Rule:
    name: str
    kind: str
    channels: tuple[str, ...] = ()
    accounts: tuple[str, ...] = ()  # empty: every account
    threshold: Decimal | None = None
    days: Decimal | None = None
    dimension: str = "account"
    value: str | None = None
    monthly_limit: Decimal | None = None
    min_credits: Decimal | None = None
    hours: Decimal | None = None
    recover_margin: Decimal = DEFAULT_RECOVER_MARGIN

    @property
    def keeps_state(self) -> bool:
        return self.kind in THRESHOLD_KINDS

    def applies_to(self, account: str) -> bool:
        return not self.accounts or account in self.accounts


@dataclass(frozen=True)
class Alerting:
    """The file's rules and channels; empty when it has none (or there is no file)."""

    rules: tuple[Rule, ...] = ()
    channels: Mapping[str, Channel] = field(default_factory=dict)


def _tables(document: Mapping[str, Any], key: str, label: str) -> list[dict[str, Any]]:
    value = document.get(key, [])
    if isinstance(value, dict):
        raise config_error(label, key, f"write each as [[{key}]] (two brackets)")
    if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
        raise config_error(label, key, f"must be a list of [[{key}]] tables")
    return value


def _text(value: Any, label: str, where: str, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        problem = "missing" if value is None else "must be a non-empty string"
        raise config_error(label, where, f"{name}: {problem}")
    return value.strip()


def read_alerting(
    document: Mapping[str, Any], label: str, accounts: Sequence[str] | None = None
) -> Alerting:
    """The rules and channels of a parsed accounts file; ``accounts`` are the configured
    accounts' names, which a rule's ``accounts`` must be among (None: checked when the settings
    were read, and a run narrowed by ``--account`` must not refuse the others' rules)."""
    channels: dict[str, Channel] = {}
    for index, table in enumerate(_tables(document, CHANNELS, label)):
        name = _text(table.get("name"), label, f"{CHANNELS}[{index}]", "name")
        where = f"channel {json.dumps(name)}"
        for key in table:
            if key not in CHANNEL_FIELDS:
                hint = (
                    " (the URL stays in the environment: name its variable)" if key == "url" else ""
                )
                raise config_error(label, where, f"{key}: unknown field{hint}")
        url_env = table.get("url_env")
        if not isinstance(url_env, str) or not _ENV_NAME.fullmatch(url_env):
            problem = "missing" if url_env is None else "must be a variable's NAME in upper case"
            raise config_error(
                label,
                where,
                f'url_env: {problem}, e.g. url_env = "OPS_ALERTS_URL" (value not shown)',
            )
        if name in channels:
            raise config_error(label, where, "listed twice: channel names must be distinct")
        channels[name] = Channel(name, url_env)
    rules: list[Rule] = []
    for index, table in enumerate(_tables(document, ALERTS, label)):
        rule = _rule(table, label, f"{ALERTS}[{index}]", channels, accounts)
        if any(r.name == rule.name for r in rules):
            raise config_error(
                label, f"alert {json.dumps(rule.name)}", "listed twice: names must be distinct"
            )
        rules.append(rule)
    return Alerting(tuple(rules), channels)


def _rule(
    table: dict[str, Any],
    label: str,
    position: str,
    channels: Mapping[str, Channel],
    accounts: Sequence[str] | None,
) -> Rule:
    name = _text(table.get("name"), label, position, "name")
    where = f"alert {json.dumps(name)}"
    if not _RULE_NAME.fullmatch(name):
        raise config_error(label, where, "name: letters, digits, '-', '_' or '.' only")
    kind = table.get("kind")
    if kind not in KINDS:
        problem = "missing" if kind is None else "unknown kind"
        raise config_error(label, where, f"kind: {problem}: one of {', '.join(KINDS)}")
    allowed, required = KIND_FIELDS[kind]
    for key in table:
        if key not in COMMON and key not in allowed:
            raise config_error(label, where, f"{key}: not a field of a {kind} rule")
    for key in required:
        if key not in table:
            raise config_error(label, where, f"{key}: missing (a {kind} rule needs it)")
    values: dict[str, Any] = {"name": name, "kind": kind}
    for key in NUMBERS:
        if key in table:
            values[key] = _number(table[key], label, where, key)
            if key in POSITIVE and values[key] <= 0:
                raise config_error(label, where, f"{key}: must be more than 0, got {table[key]}")
    if "recover_margin" in values and values["recover_margin"] >= 1:
        raise config_error(label, where, "recover_margin: must be below 1 (0.05 is 5%)")
    if "dimension" in table:
        dimension = table["dimension"]
        if dimension not in DIMENSIONS:
            raise config_error(label, where, f"dimension: one of {', '.join(DIMENSIONS)}")
        values["dimension"] = dimension
    if "value" in table:
        values["value"] = _text(table["value"], label, where, "value")
    values["channels"] = listed_names(table, "channels", label, where, channels)
    values["accounts"] = listed_names(table, "accounts", label, where, accounts)
    return Rule(**values)


def _number(value: Any, label: str, where: str, key: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise config_error(label, where, f"{key}: must be a number")
    try:
        number = Decimal(str(value).strip())
    except InvalidOperation:
        raise config_error(label, where, f"{key}: must be a number") from None
    if not number.is_finite() or number < 0:
        raise config_error(label, where, f"{key}: must be a number >= 0, got {value}")
    return number


def listed_names(
    table: dict[str, Any],
    key: str,
    label: str,
    where: str,
    known: Mapping[str, Any] | Sequence[str] | None,
) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise config_error(label, where, f'{key}: must be a list of names, e.g. {key} = ["ops"]')
    if known is None:
        return tuple(value)
    unknown = [v for v in value if v not in known]
    if unknown:
        what = "channel" if key == CHANNELS else "account"
        raise config_error(
            label,
            where,
            f"{key}: no {what} named {', '.join(map(json.dumps, unknown))}; "
            f"configured: {', '.join(known) or 'none'}",
        )
    return tuple(value)
