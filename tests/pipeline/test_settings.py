"""The one configuration model: read from the environment, written back, documented, secret-free.

Every CREDITLENS_* variable is declared once, on its field; these tests hold the reader, the
writer (``to_env``), the error lines and README's reference to that declaration.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pipelines.api.environment import env_vars
from pipelines.api.errors import ConfigurationError
from pipelines.api.options import API_KEY_ENV
from pipelines.config.account import AccountSettings
from pipelines.config.settings import AUDIT_SECRET_ENV, Settings
from pipelines.definitions import build_definitions
from transforms.entry_type import DEFAULT_DEBIT_TYPE_PATTERN

ROOT = Path(__file__).resolve().parents[2]
# Read elsewhere than the model: the test-only failpoint.
NOT_SETTINGS = {"CREDITLENS_FAILPOINT", "CREDITLENS_CONFIG"}
# Variables holding secrets: the model stores their names (the defaults of the fields naming
# them), never their values.
SECRET_VARIABLES = {API_KEY_ENV, AUDIT_SECRET_ENV}
KEY = "sk_live+Settings/9f3c2a7e1b5d=="
AUDIT_SECRET = "audit+Settings/4b8e1d0c6a2f=="

FULL_ENV = {
    "CREDITLENS_BASE_URL": "https://api.example.test/v1/",
    "CREDITLENS_ACCOUNT": "acme",
    "CREDITLENS_WAREHOUSE": "/data/acme.duckdb",
    "CREDITLENS_ANALYST_COPY": "/data/acme.analyst.duckdb",
    "CREDITLENS_STAGING_DIR": "/scratch/staging",
    "CREDITLENS_REPORTS_DIR": "/srv/reports",
    "CREDITLENS_LEDGER_START": "2025-02-01",
    "CREDITLENS_LOOKBACK_DAYS": "3",
    "CREDITLENS_TOLERANCE": "0.01",
    "CREDITLENS_RECONCILE_SLICE_ENTRIES": "0",
    "CREDITLENS_DEBIT_TYPE_PATTERN": "usage|fee",
    "CREDITLENS_AUDIT_INVENTORY": "/etc/creditlens/keys.toml",
    "CREDITLENS_AUDIT_SCAN": "/srv/app:/srv/web",
    "CREDITLENS_AUDIT_STATE_DIR": "/var/lib/creditlens",
    "CREDITLENS_SIGN_CONVENTION": "unsigned",
    "CREDITLENS_SUMMARY_BALANCE_FIELD": "currentBalance",
    "CREDITLENS_SNAPSHOT_FIELDS": '{"campaign.name": "title"}',
    "CREDITLENS_RANGE_START_PARAM": "from",
    "CREDITLENS_RANGE_END_PARAM": "to",
    "CREDITLENS_RANGE_FORMAT": "datetime",
    "CREDITLENS_TIMEOUT": "12.5",
    "CREDITLENS_REQUEST_DEADLINE_S": "60",
    "CREDITLENS_WINDOW_DEADLINE_S": "1800",
    "CREDITLENS_MAX_RESPONSE_BYTES": "1048576",
    "CREDITLENS_MAX_RETRIES": "2",
    "CREDITLENS_BACKOFF_BASE_S": "0.5",
    "CREDITLENS_BACKOFF_MAX_S": "4.0",
    "CREDITLENS_CONCURRENCY": "8",
    "CREDITLENS_MAX_CONCURRENCY": "16",
    "CREDITLENS_HOST_CONCURRENCY": "48",
    "CREDITLENS_ACCOUNT_CONCURRENCY": "12",
    "CREDITLENS_DUCKDB_THREADS": "3",
    "CREDITLENS_DUCKDB_MEMORY_LIMIT": "2GiB",
    "CREDITLENS_ANOMALY_GRACE_HOURS": "0",
    "CREDITLENS_ANOMALY_OPEN_DAYS": "5",
    "CREDITLENS_ALERT_EXPIRY_HOURS": "24",
    "CREDITLENS_SYNC_DELIVERY_DEADLINE_S": "10",
    "CREDITLENS_DELIVERY_DEADLINE_S": "120",
    "CREDITLENS_SITE_URL": "https://reports.example.com/creditlens",
    "CREDITLENS_PROCESSES": "1",
    "CREDITLENS_WORKER_MIN_ENTRIES": "500",
    "CREDITLENS_DRIFT_RETRIES": "9",
    "CREDITLENS_HISTORY_LIMIT": "400",
    "CREDITLENS_CLOSE_AFTER_DAYS": "5",
    "CREDITLENS_STATEMENT_CHANNELS": "finance, controller",
    "CREDITLENS_LOCK_TIMEOUT_S": "120",
    "CREDITLENS_OWNERS": "team:finance-data, ops@example.com",
    "CREDITLENS_LEDGER_STALE_AFTER_HOURS": "30",
    "CREDITLENS_DAGSTER_HOME": "/var/lib/creditlens/dagster",
    "CREDITLENS_DAGSTER_INSTANCE": "ephemeral",
    "CREDITLENS_CREDIT_PRICE": "0.0125",
    "CREDITLENS_BILLING_CURRENCY": "eur",
    "CREDITLENS_BILLING_ACCOUNT_ID": "billing/acme-123",
    "CREDITLENS_FREE_CREDIT_TYPES": "Promotion, Gift",
    "CREDITLENS_RECURRING_CREDIT_TYPES": "PlanGrant",
}


def test_every_variable_is_read_into_its_field() -> None:
    assert set(FULL_ENV) == set(env_vars(Settings)), "FULL_ENV covers every declared variable"
    settings = Settings.from_env(FULL_ENV)
    account = settings.account
    assert settings.warehouse == Path("/data/acme.duckdb")
    assert settings.staging_root == Path("/scratch/staging")
    assert str(settings.tolerance) == "0.01" and settings.reconcile_slice_entries == 0
    assert settings.audit_scan == (Path("/srv/app"), Path("/srv/web"))
    assert settings.audit_state_dir == Path("/var/lib/creditlens")
    assert account.name == "acme" and account.base_url == "https://api.example.test/v1"
    assert account.snapshot_fields == {"campaign.name": "title"}
    assert account.history_limit == 400 and settings.ledger_start is not None
    assert account.close_after_days == 5
    assert account.statement_channels == ("finance", "controller")
    assert settings.lock_timeout_s == 120 and settings.ledger_stale_after_hours == 30
    assert settings.owners == "team:finance-data,ops@example.com"
    assert settings.dagster_home == Path("/var/lib/creditlens/dagster")
    assert settings.dagster_instance == "ephemeral"
    assert settings.duckdb_threads == 3
    assert settings.duckdb_memory_limit == "2GiB"
    assert (str(settings.anomaly_grace_hours), settings.anomaly_open_days) == ("0", 5)
    assert (settings.alert_expiry_hours, settings.sync_delivery_deadline_s) == (24, 10)
    assert settings.delivery_deadline_s == 120
    assert settings.site_url == "https://reports.example.com/creditlens"
    assert (str(account.credit_price), account.billing_currency) == ("0.0125", "EUR")
    assert account.focus_account_id() == "billing/acme-123"
    assert (account.free_credit_types, account.recurring_credit_types) == (
        ("Promotion", "Gift"),
        ("PlanGrant",),
    )
    assert (account.api.range_format, account.api.timeout_s, account.api.processes) == (
        "datetime",
        12.5,
        1,
    )


def test_defaults_without_any_variable() -> None:
    settings = Settings.from_env({})
    assert settings.account.name == "default" and settings.account.base_url is None
    assert settings.account.api_key_env == API_KEY_ENV
    assert settings.account.close_after_days == 2
    assert settings.debit_type_pattern == DEFAULT_DEBIT_TYPE_PATTERN
    assert settings.staging_root == Path(".creditlens-staging")
    assert settings.audit_state_dir == Path("~/.creditlens")
    assert settings.audit_secret_env == AUDIT_SECRET_ENV
    assert (settings.owners, settings.lock_timeout_s) == ("team:creditlens", 600)
    assert (settings.dagster_home, settings.dagster_instance) == (None, "persistent")


def test_to_env_gives_the_same_settings_back() -> None:
    settings = Settings.from_env(FULL_ENV)
    assert Settings.from_env(settings.to_env()) == settings
    built = Settings(ledger_start=Settings.from_env({}).ledger_start, accounts=(AccountSettings(),))
    assert Settings.from_env(built.to_env()) == built


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("CREDITLENS_LOOKBACK_DAYS", "a week"),
        ("CREDITLENS_TOLERANCE", "-0.5"),
        ("CREDITLENS_SNAPSHOT_FIELDS", "[1, 2]"),
        ("CREDITLENS_RANGE_FORMAT", "epoch"),
        ("CREDITLENS_CONCURRENCY", "99"),
        ("CREDITLENS_WORKER_MIN_ENTRIES", "-1"),
        ("CREDITLENS_OWNERS", "finance"),
        ("CREDITLENS_LOCK_TIMEOUT_S", "0"),
        ("CREDITLENS_LEDGER_STALE_AFTER_HOURS", "a day"),
        ("CREDITLENS_DAGSTER_INSTANCE", "memory"),
        ("CREDITLENS_CREDIT_PRICE", "0,0125"),
        ("CREDITLENS_BILLING_CURRENCY", "EU"),
        ("CREDITLENS_DUCKDB_THREADS", "0"),
        ("CREDITLENS_DUCKDB_THREADS", "all"),
        ("CREDITLENS_DUCKDB_MEMORY_LIMIT", "half"),
        ("CREDITLENS_DUCKDB_MEMORY_LIMIT", "100KB"),
        ("CREDITLENS_ANOMALY_GRACE_HOURS", "-1"),
        ("CREDITLENS_ANOMALY_OPEN_DAYS", "0"),
        ("CREDITLENS_ALERT_EXPIRY_HOURS", "a week"),
        ("CREDITLENS_SYNC_DELIVERY_DEADLINE_S", "0"),
        ("CREDITLENS_SITE_URL", "reports.example.com"),
    ],
)
def test_a_bad_value_is_one_line_naming_its_variable_and_value(name: str, value: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        Settings.from_env({**FULL_ENV, name: value})
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{name}: ") and repr(value) in message


def test_the_key_is_read_when_the_client_needs_it_and_never_serialized() -> None:
    settings = Settings.from_env({**FULL_ENV, API_KEY_ENV: KEY})
    assert KEY not in settings.model_dump_json() and KEY not in repr(settings)
    assert KEY not in str(settings.to_env())
    api = settings.account.api_settings({API_KEY_ENV: KEY})
    assert api.api_key.get_secret_value() == KEY and KEY not in repr(api)
    with pytest.raises(ConfigurationError, match=rf"^{API_KEY_ENV} is not set"):
        settings.account.api_settings({API_KEY_ENV: "  "})
    named = AccountSettings(base_url="http://127.0.0.1:1", api_key_env="ACME_KEY")
    assert named.api_settings({"ACME_KEY": KEY}).api_key.get_secret_value() == KEY
    with pytest.raises(ConfigurationError, match=r"^ACME_KEY is not set"):
        named.api_settings({API_KEY_ENV: KEY})
    with pytest.raises(ConfigurationError, match=r"^CREDITLENS_BASE_URL is not set"):
        Settings.from_env({}).account.api_settings({API_KEY_ENV: KEY})


def test_the_audit_secret_is_read_when_needed_and_never_serialized() -> None:
    env = {**FULL_ENV, AUDIT_SECRET_ENV: f" {AUDIT_SECRET} "}
    settings = Settings.from_env(env)
    assert AUDIT_SECRET not in settings.model_dump_json() and AUDIT_SECRET not in repr(settings)
    assert AUDIT_SECRET not in str(settings.to_env())
    secret = settings.audit_secret(env)
    assert secret is not None and secret.get_secret_value() == AUDIT_SECRET
    assert AUDIT_SECRET not in repr(secret)
    assert settings.audit_secret({AUDIT_SECRET_ENV: "  "}) is None
    named = Settings(audit_secret_env="ACME_AUDIT_SECRET")
    assert named.audit_secret({"ACME_AUDIT_SECRET": AUDIT_SECRET}) is not None
    assert named.audit_secret({AUDIT_SECRET_ENV: AUDIT_SECRET}) is None


def test_dagster_resources_hold_the_settings_but_not_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(API_KEY_ENV, KEY)
    settings = Settings.from_env({**FULL_ENV, API_KEY_ENV: KEY})
    resources = dict(build_definitions(settings).resources or {})
    assert set(resources) == {
        "platform_api",
        "warehouse",
        "reconcile_config",
        "reports_config",
        "key_audit_config",
    }
    for resource in resources.values():
        assert KEY not in resource.model_dump_json()  # type: ignore[attr-defined]
        assert resource.settings() == settings  # type: ignore[attr-defined]
    api = resources["platform_api"]
    assert api.account_settings() == settings.account  # type: ignore[attr-defined]


def test_readme_documents_exactly_the_declared_variables() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Configuration reference", 1)[1].split("\n## ", 1)[0]
    documented = {
        name
        for line in section.splitlines()
        if line.startswith("| `")
        for name in re.findall(r"CREDITLENS_[A-Z_]+", line.split("|")[1])
    }
    declared = {*env_vars(Settings), *SECRET_VARIABLES}
    assert declared <= documented, sorted(declared - documented)
    assert documented - declared == NOT_SETTINGS, sorted(documented - declared)
