from pipelines.resources.platform_api import PlatformApiResource
from pipelines.resources.warehouse import WarehouseResource

__all__ = ["PlatformApiResource", "WarehouseResource"]
