"""The one way settings are read from the environment, and the one line a bad value makes.

Generic over pydantic models: each field a variable sets names it in its declaration
(``env_field``), so the reader, ``to_env`` and the error messages follow the declaration instead
of a list kept beside it. The client's options (options.py) and the installation's settings
(pipelines/config/) are both read through it; it sits beside the client, at the bottom, so the
client needs nothing above it.
"""

from __future__ import annotations

import json
import os
import re
import types
import typing
from collections.abc import Callable, Mapping
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, SecretStr, ValidationError
from pydantic.fields import FieldInfo

from pipelines.api.errors import ConfigurationError

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
    return not any(is_key_like(part) for part in text.split("_"))


def is_key_like(part: str) -> bool:
    """Whether one part of a name (between separators) looks like generated key material: the
    one rule for a variable's name here and for a name in the accounts file."""
    mixed = any(c.isdigit() for c in part) and any(c.isalpha() for c in part)
    return len(part) > LONGEST_PART or (mixed and len(part) >= KEY_LIKE_PART)


def not_an_env_name(example: str, holds: str = "a key", subject: str = "") -> str:
    """The one line refusing a value that is not a variable's name, after ``subject`` (the
    setting, when the caller does not prefix it itself); the value is never in it."""
    text = (
        f"must name an environment variable (like {example}), not hold {holds}: "
        "refused, value not shown"
    )
    return f"{subject} {text}" if subject else text


# What the configuration reference (docs/configuration.md) shows as a field's default when its
# value says nothing to a reader (None standing for "derived", a machine-dependent number).
SHOWN_DEFAULT = "shown_default"
# What the secret a field NAMES is, for a field holding a variable's name in place of a secret:
# the reference documents the variable that holds it.
HOLDS = "holds"


def env_field(
    var: str,
    default: Any = ...,
    *,
    description: str,
    hide_value: bool = False,
    shown_default: str | None = None,
    **constraints: Any,
) -> Any:
    """A field that the environment variable ``var`` sets (an empty value counts as unset);
    ``description`` is what the configuration reference says of it (docs/configuration.md is
    generated from it, so each setting is described once, here); ``hide_value``: error messages
    name the variable but never repeat what it was given; ``shown_default``: the reference's
    default, when the value itself would mislead."""
    extra: dict[str, Any] = {"env": var}
    if hide_value:
        extra[HIDE_VALUE] = True
    if shown_default is not None:
        extra[SHOWN_DEFAULT] = shown_default
    return Field(default, description=description, json_schema_extra=extra, **constraints)


def env_var(field: FieldInfo) -> str | None:
    extra = field.json_schema_extra
    return extra.get("env") if isinstance(extra, dict) else None  # type: ignore[return-value]


def env_name(model: type[BaseModel], name: str) -> str:
    """The variable that sets ``model.name``, for messages about it."""
    return env_var(model.model_fields[name]) or name


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


def field_at(model: type[BaseModel], loc: tuple[Any, ...]) -> FieldInfo | None:
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


def value_hidden(field: FieldInfo) -> bool:
    """A secret, or a field a secret could be pasted into (see ``HIDE_VALUE``)."""
    nested = [field.annotation, *typing.get_args(field.annotation)]
    extra = field.json_schema_extra
    return SecretStr in nested or (isinstance(extra, dict) and bool(extra.get(HIDE_VALUE)))


def variable_or_location(loc: tuple[Any, ...], field: FieldInfo | None) -> str:
    """How the environment names a wrong setting: its variable, else where it is in the model."""
    return (env_var(field) if field else None) or ".".join(map(str, loc)) or "settings"


def describe_validation_error(
    exc: ValidationError,
    model: type[BaseModel],
    name_of: Callable[[tuple[Any, ...], FieldInfo | None], str] = variable_or_location,
) -> str:
    """One line naming each wrong setting (by its variable, or as ``name_of`` says: the accounts
    file names a field as written in its table), with the value given only when it is plain and
    cannot be a secret: never for a secret, a variable's name (a key may have been pasted there),
    a URL, an unexpected key, or a "missing" error (whose input is the whole model, which may
    hold the key)."""
    parts = []
    for error in exc.errors():
        loc = tuple(error.get("loc", ()))
        field = field_at(model, loc)
        text = f"{name_of(loc, field)}: {error.get('msg', 'invalid').removeprefix('Value error, ')}"
        value = error.get("input")
        if isinstance(value, Path):
            value = str(value)
        plain = isinstance(value, str | int | float | Decimal) and not isinstance(value, bool)
        shown = error.get("type") not in ("missing", "extra_forbidden")
        if field is not None and plain and shown and not value_hidden(field):
            text += f", got {value!r}"
        parts.append(" ".join(text.split()))
    return "; ".join(parts)
