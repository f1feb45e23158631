"""Alert rules and channels in the accounts file: the public names, the rules-only file (its
one account keeps plain check names), and one line per mistake naming file, rule and field."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from pipelines.api.errors import ConfigurationError
from pipelines.config.accounts_file import CONFIG_ENV
from pipelines.config.alerting import alerting
from pipelines.config.settings import Settings
from pipelines.orchestration.account_work import named_per_account

RULES = """
[[channels]]
name = "ops"
url_env = "OPS_ALERTS_URL"

[[alerts]]
name = "low-balance"
kind = "balance_below"
threshold = 2000
channels = ["ops"]

[[alerts]]
name = "agent-budget"
kind = "budget"
dimension = "agent"
value = "agent-7"
monthly_limit = 500.5
recover_margin = 0.1

[[alerts]]
name = "spikes"
kind = "spend_anomaly"
dimension = "campaign"
min_credits = 50
"""
ENV = {"CREDITLENS_BASE_URL": "https://api.example.com", "OPS_ALERTS_URL": "json://x/y"}


def _settings(tmp_path: Path, text: str) -> Settings:
    (tmp_path / "creditlens.toml").write_text(text)
    return Settings.from_env({**ENV, CONFIG_ENV: "creditlens.toml"}, cwd=tmp_path)


def test_rules_without_accounts_apply_to_the_one_account_and_keep_plain_names(
    tmp_path: Path,
) -> None:
    settings = _settings(tmp_path, RULES)
    assert [a.name for a in settings.accounts] == ["default"]
    assert not named_per_account(settings)
    config = alerting(settings, {CONFIG_ENV: "creditlens.toml"}, tmp_path)
    low, budget, spikes = config.rules
    assert (low.kind, low.threshold, low.channels, low.keeps_state) == (
        "balance_below",
        Decimal(2000),
        ("ops",),
        True,
    )
    assert low.recover_margin == Decimal("0.05")
    assert (budget.dimension, budget.value, budget.monthly_limit) == (
        "agent",
        "agent-7",
        Decimal("500.5"),
    )
    assert budget.recover_margin == Decimal("0.1")
    assert not spikes.keeps_state and spikes.applies_to("anyone")
    assert config.channels["ops"].url_env == "OPS_ALERTS_URL"


def test_rules_beside_accounts_name_known_accounts(tmp_path: Path) -> None:
    text = (
        '[[accounts]]\nname = "acme"\n'
        + RULES
        + '\n[[alerts]]\nname = "x"\nkind = "stale"\nhours = 30\naccounts = ["acme"]\n'
    )
    settings = _settings(tmp_path, text)
    assert named_per_account(settings)
    assert alerting(settings).rules[-1].accounts == ("acme",)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            '[[alerts]]\nname = "b"\nkind = "balance_below"\n',
            'creditlens.toml: alert "b": threshold: missing (a balance_below rule needs it)',
        ),
        (
            '[[alerts]]\nname = "b"\nkind = "low"\nthreshold = 1\n',
            'creditlens.toml: alert "b": kind: unknown kind: one of balance_below',
        ),
        (
            '[[alerts]]\nname = "b"\nkind = "balance_below"\nthreshold = "lots"\n',
            'creditlens.toml: alert "b": threshold: must be a number',
        ),
        (
            '[[alerts]]\nname = "b"\nkind = "budget"\ndimension = "team"\nmonthly_limit = 1\n',
            'creditlens.toml: alert "b": dimension: one of account, agent, campaign, channel',
        ),
        (
            '[[alerts]]\nname = "b"\nkind = "stale"\nhours = 2\nchannels = ["pager"]\n',
            'creditlens.toml: alert "b": channels: no channel named "pager"; configured: ops',
        ),
        (
            '[[alerts]]\nname = "b"\nkind = "stale"\nhours = 2\naccounts = ["globex"]\n',
            'creditlens.toml: alert "b": accounts: no account named "globex"; configured: default',
        ),
        (
            '[[alerts]]\nname = "b"\nkind = "sync_failed"\nthreshold = 3\n',
            'creditlens.toml: alert "b": threshold: not a field of a sync_failed rule',
        ),
        (
            '[[channels]]\nname = "mail"\nurl = "mailto://u:hunter2@h"\n',
            'creditlens.toml: channel "mail": url: unknown field (the URL stays in the environment',
        ),
        (
            '[[channels]]\nname = "mail"\nurl_env = "mailto://u:hunter2@h"\n',
            'creditlens.toml: channel "mail": url_env: must be a variable\'s NAME in upper case',
        ),
    ],
)
def test_a_mistake_is_one_line_naming_file_rule_and_field(
    tmp_path: Path, extra: str, message: str
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        _settings(tmp_path, RULES + extra)
    text = str(caught.value)
    assert text.startswith(message)
    assert "\n" not in text and "hunter2" not in text
