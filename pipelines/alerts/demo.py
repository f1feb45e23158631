"""The demo's alerts: rules written beside its warehouse, evaluated over its sync, and where
their messages would go, so a first run shows alerts firing with no setup."""

from __future__ import annotations

from pathlib import Path

from pipelines.alerts.checking import check_rules
from pipelines.config.accounts_file import CONFIG_ENV
from pipelines.config.alerting import alerting
from pipelines.config.settings import Settings

DEMO_RULES = """\
# The demo's alert rules (docs/alerts.md). Set OPS_ALERTS_URL to an Apprise URL (slack://...,
# mailto://..., msteams://..., json://host/path), then `creditlens alerts check` delivers them.
[[channels]]
name = "ops"
url_env = "OPS_ALERTS_URL"

[[alerts]]
name = "low-balance"
kind = "balance_below"
threshold = 20000
channels = ["ops"]

[[alerts]]
name = "agent-spike"
kind = "spend_anomaly"
dimension = "agent"
min_credits = 100
channels = ["ops"]

[[alerts]]
name = "hidden-movement"
kind = "hidden_movement"
channels = ["ops"]
"""


def demo_alerts(settings: Settings, root: Path) -> list[str]:
    """Writes the rules (once), evaluates them, and says what fired and where it would go."""
    rules = root / "creditlens-alerts.toml"
    if not rules.exists():
        rules.write_text(DEMO_RULES)
    config = alerting(settings, {CONFIG_ENV: str(rules)}, root)
    result = check_rules(settings.open_warehouse(), config, [a.name for a in settings.accounts])
    settings.open_warehouse().publish_analyst_copy()
    fired = [c for c in result.changes if c.state == "firing"]
    lines = [f"alerts ({rules}): {len(fired)} firing"]
    for change in fired:
        obs = change.observation
        lines.append(f"  {obs.severity.upper()} {obs.rule.name}: {obs.evidence}")
    if fired:
        lines.append(
            "  they wait in the outbox for channel ops: set OPS_ALERTS_URL to an Apprise URL "
            f"(slack://..., mailto://...) and run `CREDITLENS_CONFIG={rules} creditlens alerts "
            "check`; `creditlens alerts list` shows them"
        )
    return lines
