"""Options of the platform client: how to reach and read one company's API.

Everything the spec leaves "not shown" that a real deployment could do differently is here,
with the default creditlens chose (docs/contracts.md). Each field that a variable can change
names that variable in its declaration (``env_field``, pipelines/api/environment.py), so the
environment reader, the error messages and ``to_env`` all follow the declaration.
"""

from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from pipelines.api.environment import describe_validation_error, env_field
from pipelines.api.errors import ConfigurationError

RangeFormat = Literal["date", "datetime"]

BASE_URL_ENV = "CREDITLENS_BASE_URL"
API_KEY_ENV = "CREDITLENS_API_KEY"


def http_url(value: str) -> str:
    value = value.strip().rstrip("/")
    if not value.startswith(("http://", "https://")):
        raise ValueError("must start with http:// or https://")
    return value


class ApiOptions(BaseModel):
    """How to read one company's API, every option but where it is and the key.

    Kept apart from the secret so it can travel anywhere (Dagster's run config, logs, worker
    processes' arguments) without a key riding along.
    """

    # hide_input_in_errors: a ValidationError printed whole (a traceback) shows no value; the
    # one-line messages come from describe_validation_error, which decides what may be shown.
    model_config = ConfigDict(frozen=True, extra="forbid", hide_input_in_errors=True)

    range_start_param: str = env_field("CREDITLENS_RANGE_START_PARAM", "startDate")
    range_end_param: str = env_field("CREDITLENS_RANGE_END_PARAM", "endDate")
    range_format: RangeFormat = env_field("CREDITLENS_RANGE_FORMAT", "date")
    timeout_s: float = env_field("CREDITLENS_TIMEOUT", 30.0, gt=0)
    connect_timeout_s: float = Field(default=10.0, gt=0)
    # The timeout bounds each read, so a server trickling a byte at a time never trips it: these
    # bound the whole. A request (connect, headers, body) ends by its deadline and is retried like
    # a timeout; a ledger window, retries and re-reads included, ends by its own, or fails.
    request_deadline_s: float = env_field("CREDITLENS_REQUEST_DEADLINE_S", 60.0, gt=0)
    window_deadline_s: float = env_field("CREDITLENS_WINDOW_DEADLINE_S", 3600.0, gt=0)
    # The largest body held, once decompressed (a page of 100 entries is about 30 KB): a gzip
    # bomb is refused at this size, and retried like a timeout.
    max_response_bytes: int = env_field("CREDITLENS_MAX_RESPONSE_BYTES", 32 * 1024 * 1024, ge=1)
    max_retries: int = env_field("CREDITLENS_MAX_RETRIES", 6, ge=0)
    backoff_base_s: float = env_field("CREDITLENS_BACKOFF_BASE_S", 0.25, ge=0)
    backoff_max_s: float = env_field("CREDITLENS_BACKOFF_MAX_S", 30.0, ge=0)
    page_size: int = Field(default=100, ge=1, le=100)
    max_window_days: int = Field(default=366, ge=1, le=366)
    drift_retries: int = env_field("CREDITLENS_DRIFT_RETRIES", 5, ge=0)
    # Ledger requests of one key in flight when a sync starts; from there the key's limiter
    # (pipelines/api/pacing.py) moves it by what the API answers, up to max_concurrency.
    concurrency: int = env_field("CREDITLENS_CONCURRENCY", 4, ge=1, le=32)
    # 32 in flight is 400 requests a second at an 80 ms round trip: above the per-key rates API
    # gateways grant (tens a second), and about what one process parses (a page costs 1.2-1.6 ms
    # of CPU), so more would only queue. A starting level above it starts at it.
    max_concurrency: int = env_field("CREDITLENS_MAX_CONCURRENCY", 32, ge=1, le=256)
    # Requests in flight to one API host from this process, all keys together: an agency syncing
    # 50 accounts at once would otherwise open 50 x max_concurrency connections. 64 lets two keys
    # run at their maximum and stays far below what one client may hold open at a gateway.
    host_concurrency: int = env_field("CREDITLENS_HOST_CONCURRENCY", 64, ge=1, le=1024)
    # Ledger windows read at once, each in its own process (1: all in the sync's process). Two by
    # default: a second core halves a long backfill, and each worker costs about 150 MB.
    processes: int = env_field("CREDITLENS_PROCESSES", min(2, os.cpu_count() or 1), ge=1, le=32)
    # A window goes to a worker only when its first page says it holds at least this many
    # entries: starting one costs about a second of imports, which a small window does not repay.
    worker_min_entries: int = env_field("CREDITLENS_WORKER_MIN_ENTRIES", 20_000, ge=0)

    def connect(self, base_url: str, api_key: str) -> ApiSettings:
        """These options with a place and a key; one ConfigurationError line when one is bad."""
        try:
            return ApiSettings(**self.model_dump(), base_url=base_url, api_key=SecretStr(api_key))
        except ValidationError as exc:
            raise ConfigurationError(describe_validation_error(exc, ApiSettings)) from None


class ApiSettings(ApiOptions):
    """How to reach and read one company's API. The key is a SecretStr: its repr is masked."""

    base_url: str = env_field(BASE_URL_ENV, hide_value=True)
    api_key: SecretStr = env_field(API_KEY_ENV)

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        return http_url(value)

    @field_validator("api_key")
    @classmethod
    def _non_empty_key(cls, value: SecretStr) -> SecretStr:
        if not value.get_secret_value().strip():
            raise ValueError("the API key is empty")
        return value
