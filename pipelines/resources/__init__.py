"""Resources every domain shares: the settings, the platform API and the warehouse."""

from __future__ import annotations

from dagster import ConfigurableResource

from pipelines.config.settings import Settings
from pipelines.resources.platform_api import PlatformApiResource
from pipelines.resources.settings_resource import SettingsResource
from pipelines.resources.warehouse import WarehouseResource

__all__ = ["PlatformApiResource", "SettingsResource", "WarehouseResource", "shared_resources"]


def shared_resources(settings: Settings) -> dict[str, ConfigurableResource]:
    """The resource keys the domains' assets ask for by name, bound once for all of them."""
    return {
        "platform_api": PlatformApiResource.of(settings),
        "warehouse": WarehouseResource.of(settings),
    }
