"""Where closed statements go: each account's ``statement_channels``, or one digest for all.

An agency chooses, in the accounts file's installation-wide ``[statements]`` table, one message
per company (each to its account's ``statement_channels``) or one digest for every company
(``digest = true``, to the table's ``channels``) with a consolidated statement. Channel names are
checked against ``[[channels]]`` as an alert rule's are, and refused the same way: one line
naming the file, the table or account, and the field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pipelines.config.account import AccountSettings
from pipelines.config.alert_rules import Channel, listed_names
from pipelines.config.toml_file import config_error

STATEMENTS = "statements"
FIELDS = ("digest", "channels")


@dataclass(frozen=True)
class StatementDelivery:
    """The installation's choice; the default sends each company its own message."""

    digest: bool = False
    channels: tuple[str, ...] = ()


def read_statement_delivery(
    document: Mapping[str, Any],
    label: str,
    channels: Mapping[str, Channel],
    accounts: Sequence[AccountSettings] = (),
) -> StatementDelivery:
    """The ``[statements]`` table of a parsed accounts file, and every account's
    ``statement_channels`` checked against the file's channels."""
    where = f"[{STATEMENTS}]"
    table = document.get(STATEMENTS, {})
    if not isinstance(table, dict):
        raise config_error(label, STATEMENTS, f"must be a table, written [{STATEMENTS}]")
    for key in table:
        if key not in FIELDS:
            raise config_error(
                label, where, f"{key}: unknown field; the fields are {', '.join(FIELDS)}"
            )
    digest = table.get("digest", False)
    if not isinstance(digest, bool):
        raise config_error(label, where, "digest: must be true or false")
    names = listed_names(table, "channels", label, where, channels)
    if digest and not names:
        raise config_error(
            label, where, 'channels: a digest needs its channels, e.g. channels = ["finance"]'
        )
    for account in accounts:
        unknown = [n for n in account.statement_channels if n not in channels]
        if unknown:
            raise config_error(
                label,
                f"account {json.dumps(account.name, ensure_ascii=False)}",
                f"statement_channels: no channel named {', '.join(map(json.dumps, unknown))}; "
                f"configured: {', '.join(channels) or 'none'}",
            )
    return StatementDelivery(digest, names)
