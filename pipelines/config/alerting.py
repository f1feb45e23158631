"""The alerting in force: the rules and channels of the accounts file, found as the accounts are.

A file with rules and no ``[[accounts]]`` leaves ``Settings.config_file`` unset (its one account
keeps its plain check names), so the file is found again here by the same rule.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from pipelines.config.accounts_file import find_config
from pipelines.config.alert_rules import Alerting, read_alerting
from pipelines.config.settings import Settings
from pipelines.config.statement_delivery import StatementDelivery, read_statement_delivery
from pipelines.config.toml_file import file_label, read_document


def alerting(
    settings: Settings, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> Alerting:
    """The rules and channels configured for ``settings``; none without a file."""
    env = os.environ if env is None else env
    cwd = Path.cwd() if cwd is None else cwd
    path = settings.config_file or find_config(env, cwd)
    if path is None:
        return Alerting()
    label = file_label(path, cwd)
    return read_alerting(read_document(path, label), label)


def statement_delivery(
    settings: Settings, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> StatementDelivery:
    """The ``[statements]`` table in force (pipelines/config/statement_delivery.py); the
    default, one message per company, without a file."""
    env = os.environ if env is None else env
    cwd = Path.cwd() if cwd is None else cwd
    path = settings.config_file or find_config(env, cwd)
    if path is None:
        return StatementDelivery()
    label = file_label(path, cwd)
    document = read_document(path, label)
    return read_statement_delivery(document, label, read_alerting(document, label).channels)
