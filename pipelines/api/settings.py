"""Settings of the platform client, and the one way settings are read from the environment.

Everything the spec leaves "not shown" that a real deployment could do differently is here,
with the default creditlens chose (docs/contracts.md). Each field that a variable can change
names that variable in its declaration (``env_field``), so the environment reader, the error
messages and ``to_env`` all follow the declaration instead of a list kept beside it.
"""

from __future__ import annotations

import json
import os
import re
import types
import typing
from collections.abc import Mapping
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator
from pydantic.fields import FieldInfo

from pipelines.api.errors import ConfigurationError

RangeFormat = Literal["date", "datetime"]

BASE_URL_ENV = "CREDITLENS_BASE_URL"
API_KEY_ENV = "CREDITLENS_API_KEY"


# Fields whose value an error message must not repeat: a user may have pasted a key there (a
# variable's name in place of the key it names), or a URL may carry credentials.
HIDE_VALUE = "hide_value"
# An environment variable's name, by convention: an upper-case letter, then upper-case letters,
# digits and underscores, 64 characters at most. A part between underscores of 12 or more
# characters mixing letters and digits, or of more than 24, looks like generated key material
# (an AWS key id, a hex token) and is refused too: no variable is named like that, and a name
# that is refused can never be echoed as "X is not set".
ENV_NAME_PATTERN = re.compile(r"[A-Z][A-Z0-9_]{0,63}")
KEY_LIKE_PART = 12
LONGEST_PART = 24


def is_env_name(text: object) -> bool:
    """Whether ``text`` can be the name of a variable holding a secret (``ENV_NAME_PATTERN``):
    checked before a name is stored or printed, so a key pasted in its place is neither."""
    if not isinstance(text, str) or not ENV_NAME_PATTERN.fullmatch(text):
        return False
    for part in text.split("_"):
        mixed = any(c.isdigit() for c in part) and any(c.isalpha() for c in part)
        if len(part) > LONGEST_PART or (mixed and len(part) >= KEY_LIKE_PART):
            return False
    return True


def not_an_env_name(example: str, holds: str = "a key", subject: str = "") -> str:
    """The one line refusing a value that is not a variable's name, after ``subject`` (the
    setting, when the caller does not prefix it itself); the value is never in it."""
    text = (
        f"must name an environment variable (like {example}), not hold {holds}: "
        "refused, value not shown"
    )
    return f"{subject} {text}" if subject else text


def env_field(var: str, default: Any = ..., *, hide_value: bool = False, **constraints: Any) -> Any:
    """A field that the environment variable ``var`` sets (an empty value counts as unset);
    ``hide_value``: error messages name the variable but never repeat what it was given."""
    extra: dict[str, Any] = {"env": var}
    if hide_value:
        extra[HIDE_VALUE] = True
    return Field(default, json_schema_extra=extra, **constraints)


def env_var(field: FieldInfo) -> str | None:
    extra = field.json_schema_extra
    return extra.get("env") if isinstance(extra, dict) else None  # type: ignore[return-value]


def env_name(model: type[BaseModel], name: str) -> str:
    """The variable that sets ``model.name``, for messages about it."""
    return env_var(model.model_fields[name]) or name


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


# -- the environment, read and written through the declarations ---------------------------------


def _model_in(annotation: Any) -> tuple[type[BaseModel] | None, bool]:
    """The settings model a field holds, and whether it holds a tuple of them."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            if arg is not type(None):
                return _model_in(arg)
    if origin in (tuple, list):
        return _model_in(typing.get_args(annotation)[0])[0], True
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    return None, False


def values_from_env(model: type[BaseModel], env: Mapping[str, str]) -> dict[str, Any]:
    """The raw text of every field of ``model`` whose variable is set, nested models included.

    A tuple of models (the accounts) holds exactly one element here: the environment describes
    one of them, with the single-account variables.
    """
    values: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        var = env_var(field)
        if var is not None:
            if text := env.get(var, "").strip():
                values[name] = text
            continue
        nested, many = _model_in(field.annotation)
        if nested is None:
            continue
        inner = values_from_env(nested, env)
        if many:
            values[name] = [inner]
        elif inner:
            values[name] = inner
    return values


def env_vars(model: type[BaseModel]) -> list[str]:
    """Every variable that sets a field of ``model`` or of the models it holds."""
    names: list[str] = []
    for field in model.model_fields.values():
        if (var := env_var(field)) is not None:
            names.append(var)
        elif (nested := _model_in(field.annotation)[0]) is not None:
            names += env_vars(nested)
    return names


def read_env(model: type[BaseModel], env: Mapping[str, str] | None = None) -> Any:
    """``model`` built from the environment; any bad value is one ConfigurationError line."""
    values = values_from_env(model, os.environ if env is None else env)
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        raise ConfigurationError(describe_validation_error(exc, model)) from None


def _env_text(value: Any) -> str:
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    if isinstance(value, tuple | list):
        return os.pathsep.join(str(v) for v in value)
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


def to_env(settings: BaseModel) -> dict[str, str]:
    """The variables that give ``settings`` back through ``read_env``: the fields set
    explicitly, never a secret (a key is named by its variable, the caller sets it)."""
    env: dict[str, str] = {}
    for name in settings.model_fields_set:
        field = type(settings).model_fields[name]
        value = getattr(settings, name)
        var = env_var(field)
        if var is not None:
            if value is not None and not isinstance(value, SecretStr):
                env[var] = _env_text(value)
            continue
        nested, many = _model_in(field.annotation)
        if nested is None:
            continue
        if many:
            if len(value) != 1:
                raise ConfigurationError(f"the environment describes one {name[:-1]}, not several")
            value = value[0]
        env.update(to_env(value))
    return env


def _field_at(model: type[BaseModel], loc: tuple[Any, ...]) -> FieldInfo | None:
    """The field an error's location points at; None when a name in it is not a field (an
    unexpected key, whose value may be anything, a pasted key included)."""
    found: FieldInfo | None = None
    current: type[BaseModel] | None = model
    for part in loc:
        if not isinstance(part, str):
            continue
        if current is not None:
            if part not in current.model_fields:
                return None
            found = current.model_fields[part]
            current = _model_in(found.annotation)[0]
    return found


def _value_hidden(field: FieldInfo) -> bool:
    """A secret, or a field a secret could be pasted into (see ``HIDE_VALUE``)."""
    nested = [field.annotation, *typing.get_args(field.annotation)]
    extra = field.json_schema_extra
    return SecretStr in nested or (isinstance(extra, dict) and bool(extra.get(HIDE_VALUE)))


def describe_validation_error(exc: ValidationError, model: type[BaseModel] = ApiSettings) -> str:
    """One line naming each wrong setting by its variable, with the value given only when it is
    plain and cannot be a secret: never for a secret, a variable's name (a key may have been
    pasted there), a URL, an unexpected key, or a "missing" error (whose input is the whole
    model, which may hold the key)."""
    parts = []
    for error in exc.errors():
        loc = tuple(error.get("loc", ()))
        field = _field_at(model, loc)
        name = (env_var(field) if field else None) or ".".join(map(str, loc)) or "settings"
        text = f"{name}: {error.get('msg', 'invalid').removeprefix('Value error, ')}"
        value = error.get("input")
        if isinstance(value, Path):
            value = str(value)
        plain = isinstance(value, str | int | float | Decimal) and not isinstance(value, bool)
        shown = error.get("type") not in ("missing", "extra_forbidden")
        if field is not None and plain and shown and not _value_hidden(field):
            text += f", got {value!r}"
        parts.append(" ".join(text.split()))
    return "; ".join(parts)
