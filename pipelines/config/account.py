"""One company's account: where its API is, how to read it, and the NAME of the variable holding
its key, never the key itself, so the model can be serialized anywhere (run config, worker
arguments, logs). The installation (pipelines/config/settings.py) holds a tuple of them, read
from the environment or the accounts file (pipelines/config/accounts_file.py).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from pipelines.api.environment import HOLDS, env_field, env_name
from pipelines.api.errors import ConfigurationError
from pipelines.api.options import API_KEY_ENV, BASE_URL_ENV, ApiOptions, ApiSettings, http_url
from pipelines.config.currencies import BillingCurrency, CreditPrice
from pipelines.config.values import KeyVariable, WholeNumber, env_secret

SignConvention = Literal["signed", "unsigned", "infer"]
STATEMENT_CHANNELS_ENV = "CREDITLENS_STATEMENT_CHANNELS"


def _channel_names(value: Any) -> Any:
    """A variable's text, comma-separated (``to_env`` writes a list PATH-like: read too)."""
    if isinstance(value, str):
        return tuple(n.strip() for n in re.split(f"[,{re.escape(os.pathsep)}]", value) if n.strip())
    return value


ChannelNames = Annotated[tuple[str, ...], BeforeValidator(_channel_names)]


class AccountSettings(BaseModel):
    """One company's API, read with its own key."""

    model_config = ConfigDict(frozen=True, extra="forbid", hide_input_in_errors=True)

    name: str = env_field(
        "CREDITLENS_ACCOUNT",
        "default",
        min_length=1,
        description="Account (company) name stamped on every landed row and shown in every "
        "report; unique in the accounts file, where each account names itself (the variable is "
        "then ignored).",
    )
    base_url: str | None = env_field(
        BASE_URL_ENV,
        None,
        hide_value=True,
        shown_default="(required)",
        description="Base URL of the platform API, `http://` or `https://`.",
    )
    api_key_env: KeyVariable = Field(
        API_KEY_ENV,
        description="The NAME of the variable holding the account's key (upper case, like "
        "`ACME_API_KEY`), never the key: it is read from that variable only when a step opens "
        "the API.",
        json_schema_extra={
            HOLDS: "That variable holds the company's API key, sent only in the `X-Api-Key` "
            "header; never logged, stored or shown.",
        },
    )
    api: ApiOptions = Field(default_factory=ApiOptions)
    sign_convention: SignConvention = env_field(
        "CREDITLENS_SIGN_CONVENTION",
        "signed",
        description="`signed` (debits negative), `unsigned` (direction from the type) or "
        "`infer` (the convention that explains most consecutive pairs).",
    )
    summary_balance_field: str = env_field(
        "CREDITLENS_SUMMARY_BALANCE_FIELD",
        "balance",
        description="Field of `GET /Consumption` holding the current balance.",
    )
    snapshot_fields: dict[str, str] = env_field(
        "CREDITLENS_SNAPSHOT_FIELDS",
        default_factory=dict,
        description="Snapshot fields renamed: a JSON object in the variable, "
        '`{"consumption.balance": "currentBalance", "campaign.name": "title"}`, an inline table '
        'in the file, `{ "consumption.balance" = "currentBalance" }` (keys listed in '
        "`pipelines/snapshots/rows.py`).",
    )
    # A bound, so a key that reads nothing cannot probe forever.
    history_limit: WholeNumber = env_field(
        "CREDITLENS_HISTORY_LIMIT",
        3660,
        description="How many days before today history discovery probes for the first entry: "
        "every 366-day window, one request each (eleven at 3660); `0` turns discovery off "
        "(docs/reconciliation.md).",
    )
    # The API gives no price, and a FOCUS export needs one.
    credit_price: CreditPrice | None = env_field(
        "CREDITLENS_CREDIT_PRICE",
        None,
        description="The price of one credit in `billing_currency`, a decimal > 0 and under "
        "100000000 with at most 12 places (`0.0125`; in the file a string or a number): what "
        "`creditlens export focus` values credits at (docs/focus.md). Unset, the export "
        "refuses the account.",
    )
    billing_currency: BillingCurrency | None = env_field(
        "CREDITLENS_BILLING_CURRENCY",
        None,
        description="The ISO 4217 code (`EUR`, `USD`; any case) the company is billed in: the "
        "FOCUS export's `BillingCurrency`.",
    )
    billing_account_id: str | None = env_field(
        "CREDITLENS_BILLING_ACCOUNT_ID",
        None,
        shown_default="the API's host and the account's name (`api.example.com/acme`)",
        description="The account's `BillingAccountId` in a FOCUS export (docs/focus.md): "
        "stable, and unique across installations that name accounts alike.",
    )
    free_credit_types: ChannelNames = env_field(
        "CREDITLENS_FREE_CREDIT_TYPES",
        ("Promotion", "Bonus"),
        description="Entry types that grant credits for free (promotions, bonuses): in a FOCUS "
        "export they move no money (BilledCost and EffectiveCost 0, their value in ListCost).",
    )
    recurring_credit_types: ChannelNames = env_field(
        "CREDITLENS_RECURRING_CREDIT_TYPES",
        ("PlanGrant",),
        description="Entry types of the plan's monthly grant: in a FOCUS export a `Recurring` "
        "purchase (a top-up is `One-Time`).",
    )
    # Entries of a month's last day keep arriving for a while (pipelines/statements/).
    close_after_days: WholeNumber = env_field(
        "CREDITLENS_CLOSE_AFTER_DAYS",
        2,
        description="Days after a month's last day a sync must have covered before the month's "
        "statement is closed (docs/statements.md).",
    )
    # Checked against the accounts file's channels when the file is read.
    statement_channels: ChannelNames = env_field(
        STATEMENT_CHANNELS_ENV,
        (),
        description="The `[[channels]]` each closed month's statement is sent to, with its CSV "
        "and PDF, by name (comma-separated in the variable); each must be a channel of the "
        "accounts file. None: sent only in a `[statements]` digest, if there is one "
        "(docs/statements.md).",
    )

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        return None if value is None else http_url(value)

    @field_validator("snapshot_fields", mode="before")
    @classmethod
    def _json_object(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                value = None
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            raise ValueError(
                'must be a JSON object of strings, e.g. {"consumption.balance": "currentBalance"}'
            )
        return value

    def focus_account_id(self) -> str:
        """``billing_account_id``, else the API's host and the account's name."""
        if self.billing_account_id:
            return self.billing_account_id
        host = urlsplit(self.base_url).hostname if self.base_url else None
        return f"{host or 'unknown-host'}/{self.name}"

    def api_settings(self, env: Mapping[str, str] | None = None) -> ApiSettings:
        """The client's settings, the key read now from its variable: it lives only in the
        process that calls the API, never in anything serialized."""
        if self.base_url is None:
            raise ConfigurationError(
                f"{env_name(AccountSettings, 'base_url')} is not set: the platform API's base URL"
            )
        key = env_secret(self.api_key_env, env)
        if key is None:
            raise ConfigurationError(f"{self.api_key_env} is not set: the company's API key")
        return self.api.connect(self.base_url, key.get_secret_value())
