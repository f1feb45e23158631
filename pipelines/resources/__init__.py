"""Resources every domain shares: the settings, the platform API and the warehouse."""

from __future__ import annotations

from dagster import ConfigurableResource

from pipelines.resources.platform_api import PlatformApiResource
from pipelines.resources.settings import SettingsResource
from pipelines.resources.warehouse import WarehouseResource
from pipelines.settings import Settings

__all__ = ["PlatformApiResource", "SettingsResource", "WarehouseResource", "shared_resources"]


def shared_resources(settings: Settings) -> dict[str, ConfigurableResource]:
    """The resource keys the domains' assets ask for by name, bound once for all of them."""
    return {
        "platform_api": PlatformApiResource.of(settings),
        "warehouse": WarehouseResource.of(settings),
    }
