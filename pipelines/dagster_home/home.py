"""Where Dagster records creditlens's runs, so the CLI and the UI share one history.

A CLI run recorded in an instance that dies with the process leaves nothing for `dagster dev` to
show: a sync that landed a year of ledger looked like no partition was ever materialized, and an
engineer would backfill it again. So the CLI records its runs in a persistent instance by
default: DAGSTER_HOME when set (Dagster's own variable), else CREDITLENS_DAGSTER_HOME, else a
folder beside the warehouse. ``CREDITLENS_DAGSTER_INSTANCE=ephemeral`` keeps nothing, for
throwaway runs (benchmarks/RESULTS.md measures the difference).

The instance is configured by ``pipelines/dagster_home/dagster.yaml`` (the warehouse's concurrency
pool), copied into a folder that has no configuration yet, which also spares every run Dagster's
"No dagster.yaml found" warning. ``python -m pipelines.dagster_home`` (``__main__.py``) prepares
the folder as the CLI does and prints it, for ``export DAGSTER_HOME=...`` before ``dagster dev``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from pipelines.config.settings import Settings

DAGSTER_YAML = Path(__file__).with_name("dagster.yaml")
HOME_NAME = ".creditlens-dagster"
DAGSTER_HOME_ENV = "DAGSTER_HOME"


def home_for(settings: Settings, env: Mapping[str, str] | None = None) -> Path | None:
    """The instance folder CLI runs are recorded in; None for an ephemeral instance."""
    if settings.dagster_instance == "ephemeral":
        return None
    given = (os.environ if env is None else env).get(DAGSTER_HOME_ENV, "").strip()
    home = Path(given) if given else settings.dagster_home or settings.warehouse.parent / HOME_NAME
    return home.expanduser().resolve()  # Dagster wants an absolute path


def prepare(home: Path) -> Path:
    """Creates the folder and gives it creditlens's dagster.yaml unless it has its own."""
    home.mkdir(parents=True, exist_ok=True)
    if not any((home / name).exists() for name in ("dagster.yaml", "dagster.yml")):
        partial = home / f".dagster.yaml.{os.getpid()}.partial"
        partial.write_bytes(DAGSTER_YAML.read_bytes())
        os.replace(partial, home / "dagster.yaml")  # whole or absent, for a concurrent reader
    return home
