"""The platform API as a Dagster resource: one company, one key, one account name.

The key comes from ``EnvVar("CREDITLENS_API_KEY")``: Dagster shows the variable's name, never its
value, in the UI and the event log.
"""

import json

from dagster import ConfigurableResource
from pydantic import Field, SecretStr

from pipelines.api.client import PlatformClient
from pipelines.api.settings import ApiSettings


class PlatformApiResource(ConfigurableResource):
    base_url: str = Field(description="Base URL of the platform API (CREDITLENS_BASE_URL).")
    api_key: str = Field(description="The company's API key (CREDITLENS_API_KEY).")
    account: str = Field(default="default", description="Account name stamped on every row.")
    range_start_param: str = "startDate"
    range_end_param: str = "endDate"
    range_format: str = Field(default="date", description="date or datetime.")
    timeout_s: float = 30.0
    max_retries: int = 6
    concurrency: int = 4
    backoff_base_s: float = 0.25
    backoff_max_s: float = 30.0
    drift_retries: int = 5
    processes: int = Field(
        default=ApiSettings.model_fields["processes"].default,
        description="Ledger windows read at once, each in its own process (CREDITLENS_PROCESSES).",
    )
    worker_min_entries: int = Field(
        default=20_000,
        description="Entries a window needs before it is worth a worker process.",
    )
    summary_balance_field: str = "balance"
    snapshot_fields_json: str = Field(
        default="{}", description="JSON object mapping e.g. consumption.balance to a wire name."
    )

    def api_settings(self) -> ApiSettings:
        return ApiSettings(
            base_url=self.base_url,
            api_key=SecretStr(self.api_key),
            range_start_param=self.range_start_param,
            range_end_param=self.range_end_param,
            range_format=self.range_format,  # type: ignore[arg-type]
            timeout_s=self.timeout_s,
            max_retries=self.max_retries,
            concurrency=self.concurrency,
            backoff_base_s=self.backoff_base_s,
            backoff_max_s=self.backoff_max_s,
            drift_retries=self.drift_retries,
            processes=self.processes,
            worker_min_entries=self.worker_min_entries,
        )

    def client(self) -> PlatformClient:
        return PlatformClient(self.api_settings())

    def snapshot_fields(self) -> dict[str, str]:
        return dict(json.loads(self.snapshot_fields_json or "{}"))
