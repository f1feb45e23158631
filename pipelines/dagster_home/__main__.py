"""``python -m pipelines.dagster_home``: the instance folder of the current settings, prepared
for `dagster dev` as the CLI prepares it, printed for ``export DAGSTER_HOME=...``."""

from __future__ import annotations

import sys

from pipelines.api.errors import ConfigurationError
from pipelines.config.settings import Settings
from pipelines.dagster_home.home import home_for
from pipelines.dagster_home.instance import instance
from pipelines.runtime.process_exit import leave


def main() -> int:
    """Prints the instance folder of the current settings, prepared for `dagster dev` as the
    CLI prepares it (its configuration, the warehouse's pool declared)."""
    try:
        settings = Settings.from_env()
        home = home_for(settings)
    except ConfigurationError as exc:
        print(f"creditlens: error: {exc}", file=sys.stderr)
        return 2
    if home is None:
        print("the Dagster instance is ephemeral (CREDITLENS_DAGSTER_INSTANCE)", file=sys.stderr)
        return 1
    instance(settings).dispose()
    print(home)
    return 0


if __name__ == "__main__":
    leave(lambda: sys.exit(main()))
