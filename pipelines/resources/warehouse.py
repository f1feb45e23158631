"""The DuckDB warehouse as a Dagster resource (CREDITLENS_WAREHOUSE)."""

from pathlib import Path

from dagster import ConfigurableResource
from pydantic import Field

from pipelines.warehouse.writer import Warehouse


class WarehouseResource(ConfigurableResource):
    path: str = Field(description="DuckDB file the pipeline writes (CREDITLENS_WAREHOUSE).")
    analyst_copy: str = Field(
        default="", description="Read-only copy for analysts; default <name>.analyst.duckdb."
    )
    staging_dir: str = Field(default="", description="Where fetched pages are staged.")
    lock_timeout_s: float = 600.0

    def warehouse(self) -> Warehouse:
        return Warehouse(
            Path(self.path),
            Path(self.analyst_copy) if self.analyst_copy else None,
            self.lock_timeout_s,
        )

    def staging_root(self) -> Path:
        return (
            Path(self.staging_dir)
            if self.staging_dir
            else Path(self.path).parent / ".creditlens-staging"
        )
