"""The DuckDB warehouse as a Dagster resource (CREDITLENS_WAREHOUSE and its neighbours)."""

from __future__ import annotations

from pathlib import Path

from pipelines.resources.settings import SettingsResource
from pipelines.warehouse.writer import Warehouse


class WarehouseResource(SettingsResource):
    lock_timeout_s: float = 600.0

    @property
    def path(self) -> Path:
        return self.settings().warehouse

    def warehouse(self) -> Warehouse:
        return self.settings().open_warehouse(self.lock_timeout_s)

    def staging_root(self) -> Path:
        return self.settings().staging_root
