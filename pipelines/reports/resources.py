"""The report site's view of the settings: where it is written (CREDITLENS_REPORTS_DIR)."""

from __future__ import annotations

from pathlib import Path

from pipelines.resources.settings_resource import SettingsResource


class ReportsResource(SettingsResource):
    @property
    def out_dir(self) -> Path:
        return self.settings().reports_dir
