"""Asking the API, endpoint by endpoint, what one key can read.

Each call asks for as little as possible (a one-day, one-entry ledger page). Only a 401 counts
as "rejected" and only a 403 as "forbidden": a timeout, a rate limit or a broken body says
nothing about the key, so it is "unknown", never "rejected".
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, date, datetime
from typing import Any

from pydantic import SecretStr, ValidationError

from pipelines.api.client import PlatformClient
from pipelines.api.environment import describe_validation_error
from pipelines.api.errors import (
    ApiError,
    ConfigurationError,
    Forbidden,
    ProblemError,
    Unauthorized,
)
from pipelines.api.options import ApiSettings
from pipelines.api.redact import Redactor
from pipelines.audit.endpoints import ENDPOINTS, Endpoint, Outcome
from pipelines.audit.report import EndpointResult

log = logging.getLogger(__name__)

# An audit wants an answer per endpoint, not a patient sync: no retries, short timeouts.
AUDIT_DEFAULTS: dict[str, Any] = {"max_retries": 0, "timeout_s": 5.0}
_PLACEHOLDER_KEY = "audit-settings-check"


def audit_settings(
    base_url: str, key: str, overrides: Mapping[str, Any] | None = None
) -> ApiSettings:
    """Client settings for probing one key: audit timeouts, then ``overrides``, where the caller
    passes the deployment's ledger range parameters (``run_audit`` takes them from Settings)."""
    values: dict[str, Any] = dict(AUDIT_DEFAULTS)
    overrides = dict(overrides or {})
    for forbidden in ("api_key", "base_url"):
        if forbidden in overrides:
            raise ConfigurationError(
                f"api_settings_overrides may not set {forbidden}: it comes from the inventory"
            )
    values.update(overrides)
    values.setdefault("connect_timeout_s", min(float(values["timeout_s"]), 10.0))
    try:
        return ApiSettings(base_url=base_url, api_key=SecretStr(key), **values)
    except ValidationError as exc:
        raise ConfigurationError(describe_validation_error(exc, ApiSettings)) from None


def check_settings(base_url: str, overrides: Mapping[str, Any] | None) -> None:
    """Fail the whole run early on bad overrides, rather than once per key."""
    audit_settings(base_url, _PLACEHOLDER_KEY, overrides)


def ledger_params(settings: ApiSettings, day: date) -> dict[str, Any]:
    if settings.range_format == "datetime":
        start, end = f"{day.isoformat()}T00:00:00Z", f"{day.isoformat()}T23:59:59.999999Z"
    else:
        start = end = day.isoformat()
    return {
        settings.range_start_param: start,
        settings.range_end_param: end,
        "pageNumber": 1,
        "pageSize": 1,
    }


def probe_key(
    settings: ApiSettings, redactor: Redactor, day: date | None = None
) -> tuple[EndpointResult, ...]:
    """One GET per endpoint; every failure becomes an outcome, never an exception."""
    day = day or datetime.now(UTC).date()
    with PlatformClient(settings) as client:
        return tuple(
            _probe(client, endpoint, ledger_params(settings, day), redactor)
            for endpoint in ENDPOINTS
        )


def _probe(
    client: PlatformClient, endpoint: Endpoint, ledger: dict[str, Any], redactor: Redactor
) -> EndpointResult:
    params = ledger if endpoint.name == "transactions" else None
    try:
        # get_json, not get_bytes: a 2xx whose body is not JSON (a login page from a proxy,
        # a truncated answer) proves nothing about what the key reads.
        client.get_json(endpoint.path, params)
    except Unauthorized as exc:
        return _result(endpoint, Outcome.REJECTED, exc.status, _title(exc), redactor)
    except Forbidden as exc:
        return _result(endpoint, Outcome.FORBIDDEN, exc.status, _title(exc), redactor)
    except ProblemError as exc:
        return _result(endpoint, Outcome.UNKNOWN, exc.status, _title(exc), redactor)
    except ApiError as exc:
        return _result(endpoint, Outcome.UNKNOWN, None, str(exc), redactor)
    except Exception as exc:  # an audit reports what it could not check, it does not crash
        log.warning("probing %s failed unexpectedly: %s", endpoint.path, type(exc).__name__)
        return _result(
            endpoint, Outcome.UNKNOWN, None, f"unexpected {type(exc).__name__}", redactor
        )
    return _result(endpoint, Outcome.READABLE, None, "", redactor)


def _title(exc: ProblemError) -> str:
    text = f"{exc.status} {exc.title}" if exc.title else f"HTTP {exc.status}"
    return f"{text}: {exc.detail}" if exc.detail else text


def _result(
    endpoint: Endpoint, outcome: Outcome, status: int | None, reason: str, redactor: Redactor
) -> EndpointResult:
    return EndpointResult(
        endpoint=endpoint.name,
        path=endpoint.path,
        outcome=outcome,
        http_status=status,
        reason=redactor.scrub(reason),
    )
