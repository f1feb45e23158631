"""The key audit's view of the settings: the inventory and the paths to scan."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from pipelines.resources.settings_resource import SettingsResource


class KeyAuditResource(SettingsResource):
    timeout_s: float = Field(default=5.0, gt=0, description="Seconds to wait for each probe.")

    @property
    def inventory(self) -> Path | None:
        return self.settings().audit_inventory

    @property
    def scan_paths(self) -> tuple[Path, ...]:
        return self.settings().audit_scan
