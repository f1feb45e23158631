"""creditlens's configuration: one model, from which the CLI, the Dagster resources and the
benchmarks are all built.

``Settings`` holds the installation (where the warehouse and reports are, how to reconcile,
what the audit reads) and its accounts; an ``AccountSettings`` (account.py) holds one company's
API: where it is, how to read it, and the NAME of the variable holding its key, never the key
itself, so the whole model can be serialized anywhere. The audit's fingerprint secret is held the
same way. Every field names its CREDITLENS_* variable and its description in its declaration (a
secret's variable is the default of the field naming it): docs/configuration.md is generated from
them (pipelines/config/reference.py).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    field_validator,
    model_validator,
)

from pipelines.api.environment import (
    HIDE_VALUE,
    HOLDS,
    SHOWN_DEFAULT,
    env_field,
    env_var,
    read_env,
    to_env,
)
from pipelines.api.errors import ConfigurationError
from pipelines.config.account import AccountSettings
from pipelines.config.accounts_file import with_accounts_file
from pipelines.config.values import (
    Day,
    PositiveNumber,
    WholeNumber,
    env_secret,
    names_a_variable,
    non_negative_number,
    whole_number,
)
from pipelines.warehouse.instances import (
    DUCKDB_MEMORY_LIMIT_ENV,
    DUCKDB_THREADS_ENV,
    parse_duckdb_threads,
    parse_memory_limit,
)
from pipelines.warehouse.lake import (
    DEFAULT_DIR as DEFAULT_LAKE_DIR,
)
from pipelines.warehouse.lake import (
    is_lake_location,
    lake_for,
    parse_location,
    register,
    stand_in,
)
from pipelines.warehouse.writer import Warehouse
from transforms.entry_type import DEFAULT_DEBIT_TYPE_PATTERN

STAGING_DIR_NAME = ".creditlens-staging"
# The alerts' defaults (docs/alerts.md), named once: the settings below and the alerts' own
# defaults for a caller that passes none (pipelines/alerts/) are these.
ANOMALY_GRACE_HOURS = 2
ANOMALY_OPEN_DAYS = 3
ALERT_EXPIRY_HOURS = 72
DELIVERY_DEADLINE_S = 300
AUDIT_SECRET_ENV = "CREDITLENS_AUDIT_SECRET"
DagsterInstanceKind = Literal["persistent", "ephemeral"]


# Dagster's own rule for an asset owner: an email address, or a team name after "team:".
_OWNER = re.compile(r"(team:\S+|[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,7})")


def _owners(value: Any) -> Any:
    """Owners, comma-separated; each an email or ``team:NAME``, as Dagster accepts them."""
    if isinstance(value, str):
        owners = [o.strip() for o in value.split(",") if o.strip()]
        if not all(_OWNER.fullmatch(o) for o in owners):
            raise ValueError("each owner must be an email address or team:NAME")
        return ",".join(owners)
    return value


def _site_url(value: Any) -> Any:
    """The report site's address: an http(s) URL, named in messages with each account's page."""
    if isinstance(value, str) and value.strip():
        text = value.strip()
        if not re.fullmatch(r"https?://[^\s/]+(/\S*)?", text):
            raise ValueError("must be the site's http:// or https:// address")
        return text
    return value


def _paths(value: Any) -> Any:
    """The audit's scan paths: one variable, separated like PATH (``:``, ``;`` on Windows)."""
    if isinstance(value, str):
        return tuple(Path(p) for p in value.split(os.pathsep) if p.strip())
    return value


AuditSecretVariable = Annotated[
    str,
    names_a_variable(AUDIT_SECRET_ENV, "a secret"),
    Field(json_schema_extra={HIDE_VALUE: True}),
]


class Settings(BaseModel):
    """The installation and its accounts."""

    model_config = ConfigDict(frozen=True, extra="forbid", hide_input_in_errors=True)

    warehouse: Path = env_field(
        "CREDITLENS_WAREHOUSE",
        Path("creditlens.duckdb"),
        description="The DuckDB file the pipeline writes, or a DuckLake location in DuckDB's "
        "syntax, `ducklake:postgres:dbname=... host=... port=... user=...` (its catalog in "
        "PostgreSQL; the password from `PGPASSWORD` or `~/.pgpass`, never in the location): "
        "then what lives beside the file lives in `CREDITLENS_LAKE_DIR` (docs/lake.md).",
        hide_value=True,  # a password may have been pasted into a location
    )
    # Where a lake's neighbours live (its analyst copy, staging, lock, spill folders, Dagster
    # home): declared before ``lake`` so the location's validator can read it.
    lake_dir: Path = env_field(
        "CREDITLENS_LAKE_DIR",
        DEFAULT_LAKE_DIR,
        description="With a DuckLake `CREDITLENS_WAREHOUSE`, this host's folder for what lives "
        "beside a warehouse file otherwise: `warehouse.lake` (a file naming the lake), the "
        "analyst copy, staging, the lock, DuckDB's spill folders and the Dagster home, each "
        "still settable by its own variable (docs/lake.md).",
    )
    lake_data_path: str | None = env_field(
        "CREDITLENS_LAKE_DATA_PATH",
        None,
        shown_default="`<CREDITLENS_LAKE_DIR>/data/`",
        description="Where a DuckLake warehouse keeps its Parquet files: a folder every host "
        "reaches, or `s3://bucket/prefix/` with the `AWS_*` variables. Read when the lake is "
        "created (the catalog stores it; later hosts read it there), and given to every attach "
        "where set (docs/lake.md).",
    )
    # The DuckLake location when CREDITLENS_WAREHOUSE names one; ``warehouse`` is then its
    # stand-in in ``lake_dir`` (pipelines/warehouse/lake.py).
    lake: str | None = None
    analyst_copy: Path | None = env_field(
        "CREDITLENS_ANALYST_COPY",
        None,
        shown_default="`<warehouse>.analyst.duckdb`",
        description="The read-only copy published once per sync: a DuckDB file of views "
        "(readable by DuckDB 1.4 and later) over Parquet files in "
        "`<its name without .duckdb>.parquet/` beside it (docs/analysts.md).",
    )
    reports_dir: Path = env_field(
        "CREDITLENS_REPORTS_DIR",
        Path("creditlens-reports"),
        description="Where `creditlens report` writes the site (docs/reports.md).",
    )
    staging_dir: Path | None = env_field(
        "CREDITLENS_STAGING_DIR",
        None,
        shown_default=f"`<warehouse dir>/{STAGING_DIR_NAME}`",
        description="Where fetched pages are staged before the landing transaction, and the "
        "reconciliation's rows (Parquet) before its one write transaction: a full "
        "reconciliation needs about the size of the enriched ledger there.",
    )
    # None: the ledger starts where history discovery found the company's first entry.
    ledger_start: Day | None = env_field(
        "CREDITLENS_LEDGER_START",
        None,
        shown_default="(discovered)",
        description="Override of where the ledger begins: its first synced day and the first "
        "of its daily partitions. Unset, history discovery finds the company's first entry "
        "(docs/reconciliation.md); before any discovery the partitions reach back to the start "
        "of the year `CREDITLENS_HISTORY_LIMIT` days ago. It (or `--since`) may precede the "
        "first entry: those days are read, empty, and stay partitions.",
    )
    lookback_days: WholeNumber = env_field(
        "CREDITLENS_LOOKBACK_DAYS",
        7,
        description="Days re-read before the last synced day, for late or backdated entries.",
    )
    tolerance: Annotated[Decimal, BeforeValidator(non_negative_number)] = env_field(
        "CREDITLENS_TOLERANCE",
        Decimal(0),
        description="Largest balance gap treated as continuous (as Beancount's tolerance).",
    )
    # None: the reconciliation's own default (pipelines/reconciliation/slices.py).
    reconcile_slice_entries: (
        Annotated[int, whole_number(" (0: the whole ledger at once)"), Field(ge=0)] | None
    ) = env_field(
        "CREDITLENS_RECONCILE_SLICE_ENTRIES",
        None,
        shown_default="`100000`",
        description="Entries reconciled at a time, in whole UTC days with the balance carried "
        "across: reconciliation's memory follows this, not the ledger's size (about 300 MB at "
        "the default). `0` reconciles the whole ledger at once.",
    )
    debit_type_pattern: str = env_field(
        "CREDITLENS_DEBIT_TYPE_PATTERN",
        DEFAULT_DEBIT_TYPE_PATTERN,
        min_length=1,
        description="Under `unsigned`: entry types (regex, case-insensitive) whose amounts "
        "lower the balance.",
    )
    audit_inventory: Path | None = env_field(
        "CREDITLENS_AUDIT_INVENTORY",
        None,
        description="The key audit asset's inventory file (docs/audit.md).",
    )
    audit_scan: Annotated[tuple[Path, ...], BeforeValidator(_paths)] = env_field(
        "CREDITLENS_AUDIT_SCAN",
        (),
        description="The key audit asset's scan paths, separated by `:` (`;` on Windows).",
    )
    # The key fingerprints' secret: the variable holding it, else a file in the state dir.
    audit_secret_env: AuditSecretVariable = Field(
        AUDIT_SECRET_ENV,
        description="The settings a resource carries name this variable (`audit_secret_env`), "
        "never hold the secret: it is read only when the audit runs.",
        json_schema_extra={
            HOLDS: "The per-installation secret of key fingerprints (docs/audit.md); unset, it "
            "is generated once and kept in a file of `CREDITLENS_AUDIT_STATE_DIR`.",
            SHOWN_DEFAULT: "(generated)",
        },
    )
    audit_state_dir: Path = env_field(
        "CREDITLENS_AUDIT_STATE_DIR",
        Path("~/.creditlens"),
        description="Where the key audit keeps its generated secret (docs/audit.md).",
    )
    # A long wait is never a silent one: it is reported from its first moment.
    lock_timeout_s: PositiveNumber = env_field(
        "CREDITLENS_LOCK_TIMEOUT_S",
        600.0,
        description="How long anything waits for the warehouse's lock before failing with one "
        "line naming the holder: every command (`sync`, `breaks`, `report`, `audit`, `demo`), "
        "every reader and every Dagster step. It is the only source of that wait. From its "
        "first moment a wait is reported: who holds the lock (Dagster run, what it writes, pid, "
        "host, since when), again every 15 s, and how long it lasted; the sync's summary gives "
        "it apart from its own time.",
    )
    owners: Annotated[str, BeforeValidator(_owners)] = env_field(
        "CREDITLENS_OWNERS",
        "team:creditlens",
        description="Owners of every asset in Dagster's UI: email addresses or `team:NAME`, "
        "comma-separated.",
    )
    # The daily sync plus a margin for a slow or retried run.
    ledger_stale_after_hours: PositiveNumber = env_field(
        "CREDITLENS_LEDGER_STALE_AFTER_HOURS",
        26.0,
        description="Dagster's freshness policy: the ledger, and the reports that follow it, "
        "show as stale (failing freshness) when not materialized for this long.",
    )
    # pipelines/dagster_home/home.py decides the folder; DAGSTER_HOME, when set, wins.
    dagster_home: Path | None = env_field(
        "CREDITLENS_DAGSTER_HOME",
        None,
        shown_default="`<warehouse dir>/.creditlens-dagster`",
        description="The Dagster instance CLI runs are recorded in, so `dagster dev` over the "
        "same warehouse shows them (docs/operating.md); created with "
        "`pipelines/dagster_home/dagster.yaml` when it has no `dagster.yaml`. `DAGSTER_HOME`, "
        "when set, wins.",
    )
    dagster_instance: DagsterInstanceKind = env_field(
        "CREDITLENS_DAGSTER_INSTANCE",
        "persistent",
        description="`ephemeral`: CLI runs are recorded nowhere (an in-memory instance that "
        "dies with the process), for throwaway syncs; the UI then never sees them. About 1.1 s "
        "faster a sync, 1.5 s on a two-year first sync (`benchmarks/RESULTS.md`).",
    )
    # Each account mostly waits on its own key's rate limit and round trips, so threads, not
    # processes, and more than the cores; bounded, so a file of 500 accounts does not open 500
    # syncs at once.
    account_concurrency: Annotated[int, whole_number(), Field(ge=1, le=256)] = env_field(
        "CREDITLENS_ACCOUNT_CONCURRENCY",
        8,
        description="Accounts synced at once by one `creditlens sync` or Dagster step "
        "(threads: each account waits on its own key's rate limit and round trips, not on the "
        "CPU).",
    )
    # pipelines/warehouse/instances.py reads it when it starts an instance. DuckDB's own default
    # in a container counts the host's cores, not the container's share.
    duckdb_threads: Annotated[int | None, BeforeValidator(parse_duckdb_threads)] = env_field(
        DUCKDB_THREADS_ENV,
        None,
        shown_default="unset: DuckDB's default, a thread per core it detects",
        description="Threads each DuckDB query of creditlens may use. Set it where the cores "
        "DuckDB detects are not the process's to use: in a container with a CPU limit (DuckDB "
        "counts the host's cores), or where several syncs, Dagster steps or test workers share "
        "the machine. polars, which creditlens also computes with, takes its own "
        "`POLARS_MAX_THREADS`.",
    )
    # pipelines/warehouse/instances.py applies it at each open.
    duckdb_memory_limit: Annotated[str | None, BeforeValidator(parse_memory_limit)] = env_field(
        DUCKDB_MEMORY_LIMIT_ENV,
        None,
        shown_default="unset: each step's own limit",
        description="The most memory one DuckDB query of creditlens may hold, in DuckDB's units "
        "(`1GB`, `512MiB`; at least 1MB); past it DuckDB spills to a folder of its own beside "
        "the warehouse (`.creditlens-spill-PID-N`), removed when the query's instance closes. "
        "Each step's own limit is 512MB for most, 256MB for the landing and the analyst copy's "
        "views, 64MB for the reconciliation's commit. Lower it in a container with a small "
        "memory limit; a step whose own limit is lower keeps it.",
    )
    # Late entries still arrive after a UTC day ends.
    anomaly_grace_hours: Annotated[Decimal, BeforeValidator(non_negative_number)] = env_field(
        "CREDITLENS_ANOMALY_GRACE_HOURS",
        Decimal(ANOMALY_GRACE_HOURS),
        description="How long after a UTC day ends its late entries may still arrive: a day is "
        "judged for spend anomalies once it is over by this much, now and at the account's "
        "last successful sync (docs/alerts.md). `0` judges a day as soon as it is over.",
    )
    anomaly_open_days: PositiveNumber = env_field(
        "CREDITLENS_ANOMALY_OPEN_DAYS",
        float(ANOMALY_OPEN_DAYS),
        description="Days a spend anomaly (a notice about a past day) stays open, listed and "
        "its check WARN, before it closes by itself.",
    )
    alert_expiry_hours: PositiveNumber = env_field(
        "CREDITLENS_ALERT_EXPIRY_HOURS",
        float(ALERT_EXPIRY_HOURS),
        description="An alert's message still unsent this long after it was queued is not "
        "sent: recorded as `expired` in the outbox, with one warning. Statements never expire.",
    )
    sync_delivery_deadline_s: PositiveNumber = env_field(
        "CREDITLENS_SYNC_DELIVERY_DEADLINE_S",
        30.0,
        description="How long the delivery after a `creditlens sync` may send; what is left "
        "waits in the outbox for the next run. Each send's timeout is at most what is left.",
    )
    delivery_deadline_s: PositiveNumber = env_field(
        "CREDITLENS_DELIVERY_DEADLINE_S",
        float(DELIVERY_DEADLINE_S),
        description="The same for `creditlens alerts check` and Dagster's `alert_delivery` run.",
    )
    site_url: Annotated[str | None, BeforeValidator(_site_url)] = env_field(
        "CREDITLENS_SITE_URL",
        None,
        shown_default="unset: the page's path under `CREDITLENS_REPORTS_DIR`",
        description="Where people open the report site (`https://...`): each alert's message "
        "links its account's page there.",
    )
    accounts: tuple[AccountSettings, ...] = (AccountSettings(),)
    # The accounts file the accounts were read from (CREDITLENS_CONFIG, else ./creditlens.toml
    # when present; docs/accounts.md), recorded so a run says where its accounts came from.
    # None: the environment's one account. Not an env_field: the variable names a file read
    # before the model, not one of its values, and ``to_env`` writes the accounts themselves.
    config_file: Path | None = None
    # The accounts of the file that ``--account`` left out of this run (``selecting``): their
    # checks' verdicts are carried from the warehouse, so every company's shows. Not an
    # env_field: it is the run's narrowing, not a setting.
    unselected: tuple[str, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _lake_location(cls, data: Any) -> Any:
        """A DuckLake location is kept as ``lake``; ``warehouse`` checks it (so a mistake names
        CREDITLENS_WAREHOUSE) and then becomes its stand-in."""
        if not isinstance(data, dict) or not is_lake_location(data.get("warehouse")):
            return data
        return {**data, "lake": str(data["warehouse"]).strip()}

    @field_validator("warehouse", mode="before")
    @classmethod
    def _valid_lake(cls, value: Any) -> Any:
        return parse_location(value) if is_lake_location(value) else value

    @model_validator(mode="after")
    def _opens_the_lake(self) -> Settings:
        if self.lake is not None:
            # frozen, and this is still its validation: the stand-in replaces the location
            object.__setattr__(self, "warehouse", stand_in(self.lake_dir))
            register(self.warehouse, lake_for(self.lake, self.lake_data_path, self.lake_dir))
        return self

    @field_validator("accounts")
    @classmethod
    def _distinct_names(cls, value: tuple[AccountSettings, ...]) -> tuple[AccountSettings, ...]:
        if not value:
            raise ValueError("at least one account must be configured")
        names = [a.name for a in value]
        if len(set(names)) != len(names):
            raise ValueError(f"account names must be distinct, got {', '.join(names)}")
        return value

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, cwd: Path | None = None) -> Settings:
        """Every field from its variable, the accounts from the accounts file when there is one
        (looked for in ``cwd``, default the working directory); a bad value is one
        ConfigurationError naming it."""
        env = os.environ if env is None else env
        settings: Settings = read_env(cls, env)
        installation = {
            name: env_var(field)
            for name, field in cls.model_fields.items()
            if name not in ("accounts", "config_file")
        }
        return with_accounts_file(settings, env, Path.cwd() if cwd is None else cwd, installation)

    def to_env(self) -> dict[str, str]:
        """The variables a shell would set for these settings (keys excepted: set each
        account's ``api_key_env`` yourself)."""
        env = to_env(self)
        if self.lake is not None:  # the location, not its stand-in
            env[env_var(type(self).model_fields["warehouse"]) or ""] = self.lake
        return env

    def audit_secret(self, env: Mapping[str, str] | None = None) -> SecretStr | None:
        """The key fingerprints' secret when its variable is set, read now as an account's key
        is; None: the audit keeps it in a file of ``audit_state_dir``."""
        return env_secret(self.audit_secret_env, env)

    @property
    def account(self) -> AccountSettings:
        """The one account; the CLI syncs exactly one."""
        if len(self.accounts) != 1:
            names = ", ".join(a.name for a in self.accounts)
            raise ConfigurationError(f"several accounts are configured ({names}): name one")
        return self.accounts[0]

    def selecting(self, names: Sequence[str]) -> Settings:
        """These settings with only the accounts named (``--account``), in the file's order;
        an unknown name is one line listing the configured ones."""
        if not names:
            return self
        known = {a.name for a in self.accounts}
        unknown = [n for n in dict.fromkeys(names) if n not in known]
        if unknown:
            configured = ", ".join(a.name for a in self.accounts)
            raise ConfigurationError(
                f"no account named {', '.join(map(repr, unknown))}; configured: {configured}"
            )
        wanted = set(names)
        return self.model_copy(
            update={
                "accounts": tuple(a for a in self.accounts if a.name in wanted),
                "unselected": (
                    *self.unselected,
                    *(a.name for a in self.accounts if a.name not in wanted),
                ),
            }
        )

    def account_named(self, name: str) -> AccountSettings:
        """The account a resource names; an unknown name is not repeated: it comes from run
        config, where a key may have been pasted, and the message goes to the event log."""
        for account in self.accounts:
            if account.name == name:
                return account
        names = ", ".join(a.name for a in self.accounts)
        raise ConfigurationError(
            f"account is not one of the configured accounts ({names}): value not shown"
        )

    @property
    def staging_root(self) -> Path:
        return self.staging_dir or self.warehouse.parent / STAGING_DIR_NAME

    def open_warehouse(self) -> Warehouse:
        """The warehouse as configured, waiting for its lock CREDITLENS_LOCK_TIMEOUT_S at most:
        the one source of that wait, for every command, asset and reader."""
        return Warehouse(self.warehouse, self.analyst_copy, lock_timeout_s=self.lock_timeout_s)
