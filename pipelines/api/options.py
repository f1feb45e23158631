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

    range_start_param: str = env_field(
        "CREDITLENS_RANGE_START_PARAM",
        "startDate",
        description="Name of the ledger's range-start query parameter.",
    )
    range_end_param: str = env_field(
        "CREDITLENS_RANGE_END_PARAM",
        "endDate",
        description="Name of the ledger's range-end query parameter.",
    )
    range_format: RangeFormat = env_field(
        "CREDITLENS_RANGE_FORMAT",
        "date",
        description="`date` (`2025-01-31`) or `datetime` (`2025-01-31T23:59:59.999999Z`, "
        "inclusive).",
    )
    timeout_s: float = env_field(
        "CREDITLENS_TIMEOUT", 30.0, gt=0, description="Seconds to wait for a response."
    )
    connect_timeout_s: float = Field(
        default=10.0, gt=0, description="Seconds to wait for a connection."
    )
    # The timeout bounds each read, so a server trickling a byte at a time never trips it: these
    # bound the whole.
    request_deadline_s: float = env_field(
        "CREDITLENS_REQUEST_DEADLINE_S",
        60.0,
        gt=0,
        description="Deadline of a whole request (connect, headers, body), where the timeout "
        "bounds each read (a server trickling bytes never trips it): a request ends by it and "
        "is retried like a timeout.",
    )
    window_deadline_s: float = env_field(
        "CREDITLENS_WINDOW_DEADLINE_S",
        3600.0,
        gt=0,
        description="Deadline of a whole ledger window, retries and re-reads included: past it "
        "the window fails.",
    )
    max_response_bytes: int = env_field(
        "CREDITLENS_MAX_RESPONSE_BYTES",
        32 * 1024 * 1024,
        ge=1,
        shown_default="`33554432` (32 MiB)",
        description="The largest response body held once decompressed (a page of 100 entries "
        "is about 30 KB): a larger one (a gzip bomb) is refused at this size and retried like "
        "a timeout.",
    )
    max_retries: int = env_field(
        "CREDITLENS_MAX_RETRIES",
        6,
        ge=0,
        description="Retries of a request after 429, 5xx, timeouts, resets or malformed bodies "
        "(never after 400, 401, 403, 404, 422).",
    )
    backoff_base_s: float = env_field(
        "CREDITLENS_BACKOFF_BASE_S",
        0.25,
        ge=0,
        description="Exponential backoff's first wait, with full jitter; a `Retry-After` is "
        "honoured (up to 120 s).",
    )
    backoff_max_s: float = env_field(
        "CREDITLENS_BACKOFF_MAX_S", 30.0, ge=0, description="Exponential backoff's longest wait."
    )
    page_size: int = Field(
        default=100, ge=1, le=100, description="Ledger entries asked per page, 1 to 100."
    )
    max_window_days: int = Field(
        default=366, ge=1, le=366, description="Days read per ledger window, 1 to 366."
    )
    drift_retries: int = env_field(
        "CREDITLENS_DRIFT_RETRIES",
        5,
        ge=0,
        description="Re-reads of a window whose pages drifted before giving up with a clear error.",
    )
    # The key's limiter (pipelines/api/pacing.py) moves the level by what the API answers.
    concurrency: int = env_field(
        "CREDITLENS_CONCURRENCY",
        4,
        ge=1,
        le=32,
        description="Requests of one key in flight when a sync starts; from there the key's "
        "limiter adapts to what the API answers (more while responses come back fast and "
        "unrefused, half as many after a 429, fewer as latency rises), pages and windows of one "
        "account read side by side. A level above `CREDITLENS_MAX_CONCURRENCY` starts at it.",
    )
    # 32 in flight is 400 requests a second at an 80 ms round trip: above the per-key rates API
    # gateways grant (tens a second), and about what one process parses (a page costs 1.2-1.6 ms
    # of CPU), so more would only queue.
    max_concurrency: int = env_field(
        "CREDITLENS_MAX_CONCURRENCY",
        32,
        ge=1,
        le=256,
        description="The most requests of one key in flight the limiter goes to (32 at an 80 ms "
        "round trip is 400 requests a second).",
    )
    # An agency syncing 50 accounts at once would otherwise open 50 x max_concurrency
    # connections. 64 lets two keys run at their maximum and stays far below what one client may
    # hold open at a gateway.
    host_concurrency: int = env_field(
        "CREDITLENS_HOST_CONCURRENCY",
        64,
        ge=1,
        le=1024,
        description="Requests in flight to one API host from one process, every account's key "
        "together, so an agency's 50 accounts on one host do not flood it (docs/scale-out.md).",
    )
    # Two by default: a second core halves a long backfill.
    processes: int = env_field(
        "CREDITLENS_PROCESSES",
        min(2, os.cpu_count() or 1),
        ge=1,
        le=32,
        shown_default="`2` (1 on one core)",
        description="Ledger windows read at once, each in its own process: the sync reads the "
        "first window itself and hands each later window of 28 days or more that holds at least "
        "`CREDITLENS_WORKER_MIN_ENTRIES` entries to a spawned worker (a backfill); each worker "
        "costs about 150 MB. `1` reads everything in the sync's own process.",
    )
    # Starting a worker costs about a second of imports, which a small window does not repay.
    worker_min_entries: int = env_field(
        "CREDITLENS_WORKER_MIN_ENTRIES",
        20_000,
        ge=0,
        description="Entries a window must hold (its first page says) before a worker process "
        "is worth starting (about a second of imports).",
    )

    def connect(self, base_url: str, api_key: str) -> ApiSettings:
        """These options with a place and a key; one ConfigurationError line when one is bad."""
        try:
            return ApiSettings(**self.model_dump(), base_url=base_url, api_key=SecretStr(api_key))
        except ValidationError as exc:
            raise ConfigurationError(describe_validation_error(exc, ApiSettings)) from None


class ApiSettings(ApiOptions):
    """How to reach and read one company's API. The key is a SecretStr: its repr is masked."""

    base_url: str = env_field(
        BASE_URL_ENV, hide_value=True, description="Base URL of the platform API."
    )
    api_key: SecretStr = env_field(API_KEY_ENV, description="The company's API key.")

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
