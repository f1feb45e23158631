"""The platform API of one account as a Dagster resource.

The key is read from the account's ``api_key_env`` variable when a client is opened, in the
process that runs the step: it never enters the resource's config, the run config or the event
log, where Dagster would keep it.
"""

from __future__ import annotations

from pydantic import Field

from pipelines.api.client import PlatformClient
from pipelines.resources.settings import SettingsResource
from pipelines.settings import AccountSettings


class PlatformApiResource(SettingsResource):
    account: str = Field(description="The account (CREDITLENS_ACCOUNT) whose API this reads.")

    def account_settings(self) -> AccountSettings:
        return self.settings().account_named(self.account)

    def client(self) -> PlatformClient:
        return PlatformClient(self.account_settings().api_settings())
