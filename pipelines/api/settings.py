"""Settings of the platform client.

Everything the spec leaves "not shown" that a real deployment could do differently is here,
with the default creditlens chose (docs/contracts.md) and the environment variable that changes it.
"""

from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from pipelines.api.errors import ConfigurationError

RangeFormat = Literal["date", "datetime"]

ENV = {
    "base_url": "CREDITLENS_BASE_URL",
    "api_key": "CREDITLENS_API_KEY",
    "range_start_param": "CREDITLENS_RANGE_START_PARAM",
    "range_end_param": "CREDITLENS_RANGE_END_PARAM",
    "range_format": "CREDITLENS_RANGE_FORMAT",
    "timeout_s": "CREDITLENS_TIMEOUT",
    "max_retries": "CREDITLENS_MAX_RETRIES",
    "concurrency": "CREDITLENS_CONCURRENCY",
    "backoff_base_s": "CREDITLENS_BACKOFF_BASE_S",
    "backoff_max_s": "CREDITLENS_BACKOFF_MAX_S",
    "drift_retries": "CREDITLENS_DRIFT_RETRIES",
    "processes": "CREDITLENS_PROCESSES",
    "worker_min_entries": "CREDITLENS_WORKER_MIN_ENTRIES",
}


class ApiSettings(BaseModel):
    """How to reach and read one company's API. The key is a SecretStr: its repr is masked."""

    model_config = ConfigDict(frozen=True)

    base_url: str
    api_key: SecretStr
    range_start_param: str = "startDate"
    range_end_param: str = "endDate"
    range_format: RangeFormat = "date"
    timeout_s: float = Field(default=30.0, gt=0)
    connect_timeout_s: float = Field(default=10.0, gt=0)
    max_retries: int = Field(default=6, ge=0)
    backoff_base_s: float = Field(default=0.25, ge=0)
    backoff_max_s: float = Field(default=30.0, ge=0)
    page_size: int = Field(default=100, ge=1, le=100)
    max_window_days: int = Field(default=366, ge=1, le=366)
    drift_retries: int = Field(default=5, ge=0)
    concurrency: int = Field(default=4, ge=1, le=32)
    # Ledger windows read at once, each in its own process (1: all in the sync's process). Two by
    # default: a second core halves a long backfill, and each worker costs about 150 MB.
    processes: int = Field(default=min(2, os.cpu_count() or 1), ge=1, le=32)
    # A window goes to a worker only when its first page says it holds at least this many
    # entries: starting one costs about a second of imports, which a small window does not repay.
    worker_min_entries: int = Field(default=20_000, ge=0)

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        value = value.strip().rstrip("/")
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"base URL must start with http:// or https://, got {value!r}")
        return value

    @field_validator("api_key")
    @classmethod
    def _non_empty_key(cls, value: SecretStr) -> SecretStr:
        if not value.get_secret_value().strip():
            raise ValueError("the API key is empty")
        return value

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, **overrides: object) -> ApiSettings:
        """Build from CREDITLENS_* variables; one clear ConfigurationError when one is wrong."""
        env = dict(os.environ if env is None else env)
        values: dict[str, object] = {}
        for field, var in ENV.items():
            if env.get(var, "").strip():
                values[field] = env[var].strip()
        values.update({k: v for k, v in overrides.items() if v is not None})
        if "base_url" not in values:
            raise ConfigurationError(f"{ENV['base_url']} is not set: the platform API's base URL")
        if "api_key" not in values:
            raise ConfigurationError(f"{ENV['api_key']} is not set: the company's API key")
        try:
            return cls.model_validate(values)
        except ValueError as exc:
            raise ConfigurationError(describe_validation_error(exc)) from None


def describe_validation_error(exc: ValueError) -> str:
    """One line per wrong setting, naming the setting, never echoing a secret."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc)
    parts = []
    for error in errors():
        field = ".".join(str(p) for p in error.get("loc", ())) or "settings"
        var = ENV.get(field, field)
        parts.append(f"{var}: {error.get('msg', 'invalid')}")
    return "; ".join(parts)


def options_from_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The non-secret API settings present in the environment, for the Dagster resource."""
    env = dict(os.environ if env is None else env)
    return {
        field: env[var].strip()
        for field, var in ENV.items()
        if field not in {"api_key", "base_url"} and env.get(var, "").strip()
    }
