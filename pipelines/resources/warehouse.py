"""The DuckDB warehouse as a Dagster resource (CREDITLENS_WAREHOUSE and its neighbours).

Every asset and check that touches the warehouse runs its body in ``step``: the locks it takes
are recorded as held by its run (so another writer waiting on it can say by whom), its waits on
the lock are logged in the run's event log and reported to the CLI's progress display, and a
known failure ends it as one line (pipelines/orchestration/failures.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dagster import AssetCheckExecutionContext, AssetExecutionContext, InitResourceContext

from pipelines.orchestration.failures import failing_clearly
from pipelines.resources.settings_resource import SettingsResource
from pipelines.runtime import progress
from pipelines.warehouse.errors import WarehouseError
from pipelines.warehouse.lock import LockWait, holding_for, reporting_waits
from pipelines.warehouse.publish import begin_publishing_once, end_publishing_once
from pipelines.warehouse.writer import Warehouse

# The pool of every asset that writes the warehouse: one DuckDB file, one writer at a time.
# Its limit (1) is in pipelines/dagster_home/dagster.yaml; docs/operating.md says how runs queue on
# it.
WAREHOUSE_POOL = "warehouse"


class WarehouseResource(SettingsResource):
    """How long a step waits for the warehouse's lock is CREDITLENS_LOCK_TIMEOUT_S, as for the
    CLI: one setting, no second copy here to disagree with it."""

    @property
    def path(self) -> Path:
        return self.settings().warehouse

    def setup_for_execution(self, context: InitResourceContext) -> None:
        """The steps' requests to publish the analyst copy wait for the end of the run (of the
        step's process, under a multiprocess executor): one publish, not one per write."""
        begin_publishing_once()

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        try:
            end_publishing_once()
        except WarehouseError as exc:  # the run's writes stand; the copy stays the last one
            if context.log is not None:
                context.log.error(str(exc))

    def warehouse(self) -> Warehouse:
        return self.settings().open_warehouse()

    @property
    def lock_timeout_s(self) -> float:
        return self.settings().lock_timeout_s

    def staging_root(self) -> Path:
        return self.settings().staging_root

    @contextmanager
    def step(
        self, context: AssetExecutionContext | AssetCheckExecutionContext, what: str
    ) -> Iterator[None]:
        """The body of a step that reads or writes the warehouse (see the module's docstring)."""

        def report(wait: LockWait) -> None:
            line = wait.sentence()
            context.log.info(line)
            progress.report("warehouse.wait", line=line, waited_s=wait.waited_s)

        with failing_clearly(), holding_for(context.run.run_id, what), reporting_waits(report):
            yield
