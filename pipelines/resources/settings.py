"""The one Settings model as the base of every creditlens Dagster resource.

A resource carries the settings serialized: nothing secret is in them (an account names the
variable holding its key, never the key), so Dagster may show them in the UI and the run config.
Resources subclass this one and derive what they need from ``settings()`` instead of
re-declaring fields, so a default lives in one place.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Self

from dagster import ConfigurableResource
from pydantic import Field, ValidationError

from pipelines.api.errors import ConfigurationError
from pipelines.api.settings import describe_validation_error
from pipelines.settings import Settings


class SettingsResource(ConfigurableResource):
    settings_json: str = Field(
        description="creditlens's settings as JSON, read from the CREDITLENS_* variables when "
        "the definitions were loaded; API keys are named by their variable, never included."
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
        raise ConfigurationError(describe_validation_error(exc, Settings)) from None
