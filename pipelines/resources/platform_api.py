"""The platform API of the configured accounts as a Dagster resource.

Each key is read from its account's ``api_key_env`` variable when a client is opened, in the
process that runs the step: it never enters the resource's config, the run config or the event
log, where Dagster would keep it.
"""

from __future__ import annotations

from pipelines.api.client import PlatformClient
from pipelines.config.account import AccountSettings
from pipelines.resources.settings_resource import SettingsResource


class PlatformApiResource(SettingsResource):
    def accounts(self) -> tuple[AccountSettings, ...]:
        """Every configured account, in the accounts file's order."""
        return self.settings().accounts

    def account_settings(self) -> AccountSettings:
        """The one account of a single-account installation."""
        return self.settings().account

    def client(self, account: AccountSettings | None = None) -> PlatformClient:
        return PlatformClient((account or self.account_settings()).api_settings())
