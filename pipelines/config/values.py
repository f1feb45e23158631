"""The value rules the settings models share: whole numbers, days, positive numbers, and the
name of a variable holding a secret stored in place of the secret.

Each rule refuses with the short text pydantic puts after the field's name, so a bad value is one
line naming its variable (pipelines/api/environment.py's ``describe_validation_error``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, SecretStr

from pipelines.api.environment import HIDE_VALUE, is_env_name, not_an_env_name
from pipelines.api.errors import ConfigurationError
from pipelines.api.options import API_KEY_ENV


def whole_number(hint: str = "") -> BeforeValidator:
    def check(value: Any) -> Any:
        if isinstance(value, str) and not value.strip().isdigit():
            raise ValueError(f"must be a whole number{hint}")
        return value

    return BeforeValidator(check)


DAY_RULE = "must be a date like 2025-01-31"


def iso_day(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return date.fromisoformat(value.strip())
        except ValueError:
            raise ValueError(DAY_RULE) from None
    return value


def non_negative_number(value: Any) -> Any:
    try:
        number = Decimal(str(value).strip())
    except InvalidOperation:
        number = Decimal(-1)
    if not number.is_finite() or number < 0:
        raise ValueError("must be a number >= 0")
    return number


def positive_number(value: Any) -> Any:
    number = non_negative_number(value)
    if number == 0:
        raise ValueError("must be a number > 0")
    return float(number)


def env_secret(var: str, env: Mapping[str, str] | None = None) -> SecretStr | None:
    """The secret held by ``var``, read at the moment it is needed (None when unset or blank):
    secrets are never fields, so nothing that serializes the settings can carry one.

    ``var`` is checked again here, for settings built without validation: a caller saying
    "``var`` is not set" must never be printing a key that was pasted in place of its name."""
    if not is_env_name(var):
        raise ConfigurationError(
            not_an_env_name(API_KEY_ENV, "a secret", subject="the name given for a secret")
        )
    text = (os.environ if env is None else env).get(var, "").strip()
    return SecretStr(text) if text else None


def names_a_variable(example: str, holds: str) -> BeforeValidator:
    """Refuses anything but a variable's name (``pipelines.api.options.is_env_name``) with one
    line that never holds the value: what was typed there may well be the secret itself."""

    def check(value: Any) -> Any:
        if not is_env_name(value):
            raise ValueError(not_an_env_name(example, holds))
        return value

    return BeforeValidator(check)


Day = Annotated[date, BeforeValidator(iso_day)]
WholeNumber = Annotated[int, whole_number(), Field(ge=0)]
PositiveNumber = Annotated[float, BeforeValidator(positive_number)]
# The name of a variable holding a secret, stored instead of the secret: upper case by
# convention (``ENV_NAME_PATTERN``), so that a key pasted in its place is refused, never stored.
KeyVariable = Annotated[
    str,
    names_a_variable(API_KEY_ENV, "a key"),
    Field(json_schema_extra={HIDE_VALUE: True}),
]


def parse_day(text: str, what: str) -> date:
    """A day given on the command line (``--since``), read as the settings read theirs."""
    try:
        return iso_day(text)  # type: ignore[no-any-return]
    except ValueError:
        raise ConfigurationError(f"{what} {DAY_RULE}, got {text!r}") from None
