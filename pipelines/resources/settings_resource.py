"""The one Settings model as the base of every creditlens Dagster resource.

A resource carries the settings serialized: nothing secret is in them (an account names the
variable holding its key, never the key), so Dagster may show them in the UI and the run config.
Resources subclass this one and derive what they need from ``settings()`` instead of
re-declaring fields, so a default lives in one place.

The settings are validated when Dagster processes a run's config, before it stores the run: a
key pasted into the launchpad in place of a variable's name (``api_key_env``) is refused there
with one line, so it never reaches the run storage or the event log. Pydantic's own validators
on a resource run only when the resource is built, inside the run, after Dagster has stored the
run config; only a config type's ``post_process`` runs early enough, hence ``SettingsJsonType``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any, Self

from dagster import ConfigurableResource, Failure

# Only a config type's post_process runs before Dagster stores a run's config: none is exported.
from dagster._config.config_type import ConfigScalar, ConfigScalarKind
from pydantic import Field, ValidationError
from pydantic_core import core_schema

from pipelines.api.environment import describe_validation_error
from pipelines.api.errors import ConfigurationError
from pipelines.config.settings import Settings


class SettingsJsonType(ConfigScalar):
    """Dagster's config type of ``settings_json``: a string, which must be valid settings.

    Dagster calls ``post_process`` while resolving a run's config (``ResolvedRunConfig.build``),
    in the process that plans the run (the code server for the launchpad, the caller for
    ``execute_in_process``), before ``create_run`` writes the run config to its storage. A bad
    value raises ``Failure`` with the one line of ``describe_validation_error``, which names the
    setting and never repeats a value that could be a key. ``PostProcessingError``, Dagster's own
    way, is not used: its message quotes the original value, i.e. the whole JSON.

    Also a pydantic annotation (``__get_pydantic_core_schema__``): the field stays a ``str`` for
    pydantic, while Dagster's schema conversion takes this instance as the field's config type.
    """

    def __init__(self) -> None:
        super().__init__(
            key="CreditlensSettingsJson",
            given_name="CreditlensSettingsJson",
            scalar_kind=ConfigScalarKind.STRING,
            description="creditlens's settings as JSON; secrets are named by their variable.",
        )

    def post_process(self, value: Any) -> Any:
        problem = settings_problem(value) if isinstance(value, str) else "settings: not a string"
        if problem is not None:
            # Raised outside any except block: no exception chained to this one holds the JSON.
            raise Failure(description=problem)
        return value

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> core_schema.CoreSchema:
        return core_schema.str_schema()


if TYPE_CHECKING:
    SettingsJson = str
else:
    SettingsJson = SettingsJsonType()


def settings_problem(text: str) -> str | None:
    """The one line saying why ``text`` are not valid settings, or None when they are."""
    try:
        _parse(text)
    except ConfigurationError as exc:
        return str(exc)
    return None


class SettingsResource(ConfigurableResource):
    settings_json: SettingsJson = Field(
        description="creditlens's settings as JSON, read from the CREDITLENS_* variables when "
        "the definitions were loaded; API keys are named by their variable (api_key_env, "
        "upper case like CREDITLENS_API_KEY), never included: a key here is refused."
    )

    @classmethod
    def of(cls, settings: Settings, **fields: Any) -> Self:
        return cls(settings_json=settings.model_dump_json(), **fields)

    def settings(self) -> Settings:
        return _parse(self.settings_json)


@lru_cache(maxsize=8)
def _parse(text: str) -> Settings:
    """Validated once per distinct JSON: every asset asks, and the answer never changes."""
    try:
        return Settings.model_validate_json(text)
    except ValidationError as exc:  # a hand-edited run config
        message = describe_validation_error(exc, Settings)
    raise ConfigurationError(message)
