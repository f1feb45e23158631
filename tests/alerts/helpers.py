"""The synced warehouse's figures the alert tests set their thresholds from."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from tests.pipeline.helpers import table


def balance(env: dict[str, str]) -> Decimal:
    """The platform's balance the sync stored: the simulator's ledger runs up to the clock's
    now, so its figure depends on the time of day and is read, never written in a test."""
    ((found,),) = table(
        Path(env["CREDITLENS_WAREHOUSE"]), "SELECT balance FROM consumption_snapshots"
    )
    return Decimal(found)


def above(env: dict[str, str]) -> int:
    """A threshold the balance is under: firing."""
    return int(balance(env)) + 100


# The three channels the alert tests send to: a json:// receiver, a Mattermost-format webhook
# and an SMTP server (tests/alerts/receivers.py), each named by the variable holding its URL.
CHANNELS = """
[[channels]]
name = "hook"
url_env = "HOOK_URL"

[[channels]]
name = "chat"
url_env = "CHAT_URL"

[[channels]]
name = "mail"
url_env = "MAIL_URL"
"""


def channel_urls(http_port: int, smtp_port: int) -> dict[str, str]:
    """The variables of ``CHANNELS``, pointed at the receivers' ports."""
    return {
        "HOOK_URL": f"json://127.0.0.1:{http_port}/hook",
        "CHAT_URL": f"mmost://127.0.0.1:{http_port}/chattoken",
        "MAIL_URL": f"mailto://127.0.0.1:{smtp_port}?from=alerts@example.com&to=ops@example.com",
    }


def low_balance(env: dict[str, str], channels: str = '"hook"', extra: str = "") -> str:
    """An accounts file of ``CHANNELS`` and a ``low`` rule the balance is under (firing), and
    ``extra`` rules after it."""
    return (
        CHANNELS + f'\n[[alerts]]\nname = "low"\nkind = "balance_below"\nthreshold = '
        f"{above(env)}\nchannels = [{channels}]\n" + extra
    )
