"""Every private Dagster name creditlens uses (``dagster._...``), why no public one serves, and
what of it we rely on, checked against the installed Dagster (requirements.lock pins it).

Dagster's public API is ``dagster``'s own exports; the rest may change in any release without a
word. Where the public API offers the same thing we use it (``EventLogEntry``, the events, the
instance); each name left is a row of ``PRIVATE`` below: its module and name, the files that
use it (the production ones say why in a comment right above the import), the reason, and a
check of what we rely on (the name imports, the signatures we call or override, the attributes
and constants we read, the parts Dagster builds an instance from). Where our code repeats or
replaces a piece of Dagster's (an event log storing a batch as Dagster stores each event), the
row pins that piece's source by a digest taken from the pinned Dagster: a new Dagster that
changes it fails here, naming what of ours copies it, instead of changing silently what our
storages write. Upgrading Dagster: read each failure, bring our code in line, then update the
row (a digest is ``digest(...)`` of the new source).

The tests may use Dagster's internals where they test them; they are rows too. A private import
found in pipelines/, benchmarks/ or tests/ that no row lists fails this file, as does a row whose
files no longer use its name, and a production import without its reason above it.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import inspect
import textwrap
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest
import yaml
from dagster import (
    AssetSelection,
    DagsterEventType,
    DagsterInstance,
    Definitions,
    Failure,
    ScheduleDefinition,
    asset,
    define_asset_job,
    validate_run_config,
)

from pipelines.dagster_home.batching import ENTRY_COLUMNS
from pipelines.dagster_home.ephemeral import ephemeral_instance
from pipelines.dagster_home.home import prepare
from pipelines.dagster_home.one_connection import OneConnection
from pipelines.dagster_home.storage import (
    DEFAULT_COMPUTE_LOGS,
    DEFAULT_STORAGE,
    NO_COMPUTE_LOGS,
    BatchingSqliteEventLogStorage,
    BatchingSqliteStorage,
    OneConnectionSqliteRunStorage,
    creditlens_instance,
)
from pipelines.orchestration.runs import (
    PARTITION_RANGE_END_TAG,
    PARTITION_RANGE_START_TAG,
)
from pipelines.resources.settings_resource import SettingsResource

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = ("pipelines", "benchmarks")
SCANNED = (*PRODUCTION, "tests")


def digest(obj: Any) -> str:
    """What a row pins of a piece of Dagster: its source, dedented, hashed."""
    source = textwrap.dedent(inspect.getsource(inspect.unwrap(obj)))
    return hashlib.sha256(source.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Copied:
    """A piece of Dagster that ``ours`` repeats or replaces, pinned by its source's digest."""

    module: str
    qualname: str
    digest: str
    ours: str


# How a row's files use its name: imported, named as a class in an instance's configuration
# (a string), or its value spelled in our own constant.
Use = Literal["import", "named", "spelled"]


@dataclass(frozen=True)
class Private:
    module: str
    name: str
    used_in: tuple[str, ...]
    reason: str
    relies_on: Callable[[Any, Path], None]  # the name, and a scratch folder of its own
    copied: tuple[Copied, ...] = ()
    use: Use = "import"

    @property
    def label(self) -> str:
        return f"{self.module}.{self.name}"


# --- what a row relies on ----------------------------------------------------------------------


def _leading(func: Any, *names: str) -> None:
    """``func``'s first parameters are ``names``, in that order (we pass them so)."""
    found = list(inspect.signature(func).parameters)[: len(names)]
    assert found == list(names), f"{func.__qualname__}'s parameters are {found}, not {names}"


def _has(obj: Any, *names: str) -> None:
    missing = [name for name in names if not hasattr(obj, name)]
    assert not missing, f"{obj!r} has no {missing}"


def _asset_job_type(cls: Any, tmp: Path) -> None:
    job = define_asset_job("probe", selection=AssetSelection.all())
    assert isinstance(job, cls), f"define_asset_job returns {type(job)}"
    accepted = inspect.signature(ScheduleDefinition.__init__).parameters["job"].annotation
    assert cls in typing.get_args(accepted) or cls.__name__ in str(accepted), (
        f"ScheduleDefinition's job is {accepted}"
    )


def _config_scalar(cls: Any, tmp: Path) -> None:
    _leading(cls.__init__, "self", "key", "given_name", "scalar_kind")
    assert "post_process" in {n for c in cls.__mro__ for n in vars(c)}, "no post_process"

    @asset
    def probe(settings: SettingsResource) -> None:
        """Needs the resource, so its config is resolved before the run is stored."""

    job = Definitions(
        assets=[probe],
        jobs=[define_asset_job("probe_job", [probe])],
        resources={"settings": SettingsResource(settings_json="{}")},
    ).resolve_job_def("probe_job")
    bad = {"resources": {"settings": {"config": {"settings_json": "not json"}}}}
    with pytest.raises(Failure, match=r"^settings"):
        validate_run_config(job, bad)  # post_process, before any run exists


def _string_kind(kind: Any, tmp: Path) -> None:
    assert kind.STRING.value == "STRING"


def _asset_events(events: Any, tmp: Path) -> None:
    assert isinstance(events, set | frozenset) and events, f"{events!r}"
    assert all(isinstance(e, DagsterEventType) for e in events), f"{events!r}"
    assert {
        DagsterEventType.ASSET_MATERIALIZATION,
        DagsterEventType.ASSET_OBSERVATION,
        DagsterEventType.ASSET_MATERIALIZATION_PLANNED,
    } <= events


def _asset_key_table(table: Any, tmp: Path) -> None:
    columns = set(table.c.keys())
    assert {"asset_key", *ENTRY_COLUMNS} <= columns, f"its columns are {sorted(columns)}"


def _part_of_dagster_ephemeral(attribute: str) -> Callable[[Any, Path], None]:
    """The class of a part of ``DagsterInstance.ephemeral()``: ``ephemeral_instance`` builds
    the same instance from the same parts (its storages aside)."""

    def check(cls: Any, tmp: Path) -> None:
        with DagsterInstance.ephemeral() as stock:
            part = getattr(stock, attribute)
            assert type(part) is cls, f"DagsterInstance.ephemeral()'s {attribute} is {type(part)}"

    return check


def _instance_kind(kind: Any, tmp: Path) -> None:
    assert kind.EPHEMERAL
    _leading(
        DagsterInstance.__init__,
        "self",
        "instance_type",
        "local_artifact_storage",
        "run_storage",
        "event_storage",
        "run_coordinator",
        "compute_log_manager",
        "run_launcher",
    )
    with ephemeral_instance() as ours:
        assert ours.is_ephemeral


def _in_memory_event_log(cls: Any, tmp: Path) -> None:
    _part_of_dagster_ephemeral("event_log_storage")(cls, tmp)
    _leading(cls._connect, "self")
    storage = cls()
    try:
        _has(storage, "_engine", "_handlers", "_storage_id", "_held_conn")
        assert storage._storage_id == 0 and not storage._handlers
        url = storage._engine.url  # a named, shared in-memory database: ours opens it again
        assert url.query.get("mode") == "memory" and url.query.get("cache") == "shared", url
    finally:
        storage.dispose()


def _in_memory_runs(cls: Any, tmp: Path) -> None:
    _part_of_dagster_ephemeral("run_storage")(cls, tmp)
    storage = cls()  # built without arguments, as ours is
    try:
        _has(storage, "_engine", "connect", "dispose")
    finally:
        storage.dispose()


def _cursor(cls: Any, tmp: Path) -> None:
    _leading(cls.from_storage_id, "storage_id")
    cursor = str(cls.from_storage_id(7))
    assert cls.parse(cursor).storage_id() == 7, cursor


def _artifact_storage(cls: Any, tmp: Path) -> None:
    with DagsterInstance.ephemeral() as stock:
        part = stock._local_artifact_storage  # no public accessor
        assert type(part) is cls, f"DagsterInstance.ephemeral()'s artifact storage is {part}"


def _instance_ref(cls: Any, tmp: Path) -> None:
    _leading(cls.from_dir, "base_dir")
    home = prepare(tmp / "home")
    ref = cls.from_dir(str(home))
    storage, logs = ref.storage_data, ref.compute_logs_data
    assert (storage.module_name, storage.class_name) == DEFAULT_STORAGE, f"{storage}"
    assert (logs.module_name, logs.class_name) == DEFAULT_COMPUTE_LOGS, f"{logs}"
    assert yaml.safe_load(storage.config_yaml)["base_dir"] == str(home), storage.config_yaml
    with DagsterInstance.from_ref(ref._replace(compute_logs_data=NO_COMPUTE_LOGS)) as swapped:
        assert type(swapped.compute_log_manager).__name__ == NO_COMPUTE_LOGS.class_name


def _sqlite_event_log(cls: Any, tmp: Path) -> None:
    _leading(cls.__init__, "self", "base_dir", "inst_data")
    _leading(cls.conn_string_for_shard, "self", "shard_name")
    _leading(cls._initdb, "self", "engine")
    _leading(cls.run_connection, "self", "run_id")
    _leading(cls.index_transaction, "self")
    _leading(cls.prepare_insert_event, "self", "event")
    _leading(cls._store_asset_event_tags, "self", "conn", "events", "event_ids")
    _leading(cls._has_asset_key_index_cols_on_connection, "self", "conn")
    _leading(cls._get_asset_entry_values, "self", "event", "event_id", "has_asset_key_index_cols")
    _leading(cls.has_table, "self", "table_name")
    assert cls.store_event_batch.__qualname__ == "EventLogStorage.store_event_batch", (
        "Dagster's SQLite log stores a batch its own way now: measure whether "
        "pipelines/dagster_home/batching.py still saves anything"
    )
    storage = BatchingSqliteEventLogStorage(str(tmp / "runs"))
    try:
        _has(storage, "_db_lock", "_initialized_dbs")
        assert "index" in storage._shards, "the index database was not opened through ours"
    finally:
        storage.dispose()


def _sqlite_runs(cls: Any, tmp: Path) -> None:
    _leading(cls.__init__, "self", "conn_string", "inst_data")
    _leading(cls.connect, "self")
    stock = cls.from_local(str(tmp / "history"))
    try:
        _has(stock, "_conn_string", "inst_data")
    finally:
        stock.dispose()


def _busy_timeout(seconds: Any, tmp: Path) -> None:
    assert isinstance(seconds, int | float) and seconds > 0, f"{seconds!r}"
    OneConnection("sqlite://", foreign_keys=False, timeout=seconds).close()


def _sqlite_storage(cls: Any, tmp: Path) -> None:
    _leading(cls.__init__, "self", "base_dir", "inst_data")
    _leading(cls.from_config_value, "inst_data", "config_value")
    ours = BatchingSqliteStorage(str(tmp / "storage"))
    try:
        _has(ours, "_run_storage", "_event_log_storage")
        assert isinstance(ours.event_log_storage, BatchingSqliteEventLogStorage)
        assert isinstance(ours.run_storage, OneConnectionSqliteRunStorage)
    finally:
        ours.dispose()


def _class_data(cls: Any, tmp: Path) -> None:
    assert cls._fields == ("module_name", "class_name", "config_yaml"), cls._fields
    # A folder's default storage and compute logs, swapped by their configuration for ours.
    with creditlens_instance(prepare(tmp / "cli-home")) as ours:
        assert isinstance(ours.event_log_storage, BatchingSqliteEventLogStorage)
        assert type(ours.compute_log_manager).__name__ == NO_COMPUTE_LOGS.class_name


def _tag_value(ours: str) -> Callable[[Any, Path], None]:
    def check(value: Any, tmp: Path) -> None:
        assert value == ours, f"Dagster's tag is {value!r}, ours {ours!r}"

    return check


def _loadable(cls: Any, tmp: Path) -> None:
    assert inspect.isclass(cls), f"{cls!r}"


def _command(command: Any, tmp: Path) -> None:
    assert callable(command) and hasattr(command, "commands"), f"{command!r} is no command group"
    assert "definitions" in command.commands, sorted(command.commands)


# --- the table ---------------------------------------------------------------------------------

EVENT_LOG = "dagster._core.storage.event_log"
SQL_LOG = f"{EVENT_LOG}.sql_event_log"
SQLITE_LOG = f"{EVENT_LOG}.sqlite.sqlite_event_log"
IN_MEMORY_LOG = f"{EVENT_LOG}.in_memory"
BATCHING = "pipelines/dagster_home/batching.py"
EPHEMERAL = "pipelines/dagster_home/ephemeral.py"
STORAGE = "pipelines/dagster_home/storage.py"
NO_STORAGE_CLASS = "Dagster exports no storage class; the CLI's storages subclass its own"
EPHEMERAL_PART = "DagsterInstance.ephemeral() takes no storage of ours: built from its parts"

PRIVATE: tuple[Private, ...] = (
    Private(
        "dagster._core.definitions.unresolved_asset_job_definition",
        "UnresolvedAssetJobDefinition",
        ("pipelines/orchestration/schedules.py",),
        "the type define_asset_job returns (AssetJob, a type hint): Dagster exports the function",
        _asset_job_type,
    ),
    Private(
        "dagster._config.config_type",
        "ConfigScalar",
        ("pipelines/resources/settings_resource.py",),
        "only a config type's post_process refuses bad settings before Dagster stores the run",
        _config_scalar,
    ),
    Private(
        "dagster._config.config_type",
        "ConfigScalarKind",
        ("pipelines/resources/settings_resource.py",),
        "the kind of that config type (a string): not exported",
        _string_kind,
    ),
    Private(
        "dagster._core.events",
        "ASSET_EVENTS",
        (BATCHING,),
        "the events Dagster's SQL event logs index as asset events; batching.py writes those",
        _asset_events,
        (
            Copied(SQL_LOG, "SqlEventLogStorage.store_event", "de3a3bc9f65a1e97", BATCHING),
            Copied(SQLITE_LOG, "SqliteEventLogStorage.store_event", "41dae9e57125fda6", BATCHING),
        ),
    ),
    Private(
        "dagster._core.events",
        "EngineEventData",
        ("tests/dagster/test_one_connection.py",),
        "a test writes engine events by hand; Dagster exports no event data class",
        _loadable,
    ),
    Private(
        "dagster._core.storage.event_log.schema",
        "AssetKeyTable",
        (BATCHING,),
        "the index's asset table, whose rows store_event writes; no table schema is exported",
        _asset_key_table,
        (
            Copied(SQL_LOG, "SqlEventLogStorage._store_asset_event", "3fae23ead0b5e1f9", BATCHING),
            Copied(
                SQL_LOG, "SqlEventLogStorage._get_asset_entry_values", "98c8f2e601f7b330", BATCHING
            ),
        ),
    ),
    Private(
        "dagster._core.instance",
        "InstanceType",
        (EPHEMERAL,),
        f"the kind DagsterInstance's constructor asks for; {EPHEMERAL_PART}",
        _instance_kind,
        (
            Copied(
                "dagster._core.instance.factory",
                "create_ephemeral_instance",
                "c088e32a905e0c0b",
                f"{EPHEMERAL}: ephemeral_instance",
            ),
        ),
    ),
    Private(
        "dagster._core.launcher.sync_in_memory_run_launcher",
        "SyncInMemoryRunLauncher",
        (EPHEMERAL,),
        EPHEMERAL_PART,
        _part_of_dagster_ephemeral("run_launcher"),
    ),
    Private(
        "dagster._core.run_coordinator.sync_in_memory_run_coordinator",
        "SyncInMemoryRunCoordinator",
        (EPHEMERAL,),
        EPHEMERAL_PART,
        _part_of_dagster_ephemeral("run_coordinator"),
    ),
    Private(
        "dagster._core.storage.noop_compute_log_manager",
        "NoOpComputeLogManager",
        (EPHEMERAL, STORAGE),
        f"{EPHEMERAL_PART}; named in a folder's configuration, as a CLI run copies no output",
        _part_of_dagster_ephemeral("compute_log_manager"),
    ),
    Private(
        "dagster._core.storage.root",
        "TemporaryLocalArtifactStorage",
        (EPHEMERAL,),
        EPHEMERAL_PART,
        _artifact_storage,
    ),
    Private(
        EVENT_LOG,
        "InMemoryEventLogStorage",
        (
            EPHEMERAL,
            "tests/dagster/test_event_batching.py",
            "tests/dagster/test_instance_lifetime.py",
        ),
        f"{NO_STORAGE_CLASS} (the tests compare ours with it)",
        _in_memory_event_log,
        (
            Copied(
                IN_MEMORY_LOG, "InMemoryEventLogStorage.store_event", "2c2801741e8c9047", BATCHING
            ),
            Copied(
                IN_MEMORY_LOG, "InMemoryEventLogStorage._connect", "d3124b2978e872b4", EPHEMERAL
            ),
            Copied(
                IN_MEMORY_LOG, "InMemoryEventLogStorage.has_table", "20cc0889f699b8f0", EPHEMERAL
            ),
        ),
    ),
    Private(
        f"{EVENT_LOG}.base",
        "EventLogCursor",
        (EPHEMERAL,),
        "the cursor the in-memory log's store_event tells a watcher; not exported",
        _cursor,
    ),
    Private(
        f"{EVENT_LOG}.base",
        "EventLogStorage",
        ("tests/dagster/test_event_batching.py",),
        "the event logs' base class, the type of what a test compares; not exported",
        _loadable,
    ),
    Private(
        "dagster._core.storage.runs",
        "InMemoryRunStorage",
        (EPHEMERAL, "tests/dagster/test_instance_lifetime.py"),
        NO_STORAGE_CLASS,
        _in_memory_runs,
        (
            Copied(
                "dagster._core.storage.runs.in_memory",
                "InMemoryRunStorage.connect",
                "dc0b7d0d07210095",
                "pipelines/dagster_home/one_connection.py",
            ),
        ),
    ),
    Private(
        "dagster._core.instance.ref",
        "InstanceRef",
        (STORAGE,),
        "a folder's configuration as Dagster reads it, to swap a part before opening it",
        _instance_ref,
    ),
    Private(
        SQLITE_LOG,
        "SqliteEventLogStorage",
        (STORAGE, "tests/dagster/test_event_batching.py"),
        f"{NO_STORAGE_CLASS} (the tests compare ours with it)",
        _sqlite_event_log,
        (Copied(SQLITE_LOG, "SqliteEventLogStorage._connect", "32c43750d4b7e288", STORAGE),),
    ),
    Private(
        "dagster._core.storage.runs.sqlite.sqlite_run_storage",
        "SqliteRunStorage",
        (STORAGE, "tests/dagster/test_storage_revisions.py"),
        NO_STORAGE_CLASS,
        _sqlite_runs,
        (
            Copied(
                "dagster._core.storage.runs.sqlite.sqlite_run_storage",
                "SqliteRunStorage.connect",
                "931c35576848ac1a",
                "pipelines/dagster_home/one_connection.py",
            ),
        ),
    ),
    Private(
        "dagster._core.storage.sqlite",
        "SQLITE_BUSY_TIMEOUT_SECONDS",
        (STORAGE,),
        "the busy timeout Dagster's SQLite storages use, kept for our connections; not exported",
        _busy_timeout,
    ),
    Private(
        "dagster._core.storage.sqlite_storage",
        "DagsterSqliteStorage",
        (STORAGE,),
        "a folder's default storage (DEFAULT_STORAGE), subclassed to hold ours; not exported",
        _sqlite_storage,
        (
            Copied(
                "dagster._core.storage.sqlite_storage",
                "DagsterSqliteStorage.__init__",
                "c97bec75cbbed38d",
                f"{STORAGE}: BatchingSqliteStorage",
            ),
        ),
    ),
    Private(
        "dagster._core.storage.local_compute_log_manager",
        "LocalComputeLogManager",
        (STORAGE,),
        "a folder's default compute logs (DEFAULT_COMPUTE_LOGS), named to be replaced",
        _loadable,
        use="named",
    ),
    Private(
        "dagster._serdes",
        "ConfigurableClassData",
        (STORAGE,),
        "how an instance's configuration names a class (InstanceRef's fields); not exported",
        _class_data,
    ),
    Private(
        "dagster._core.storage.tags",
        "ASSET_PARTITION_RANGE_START_TAG",
        ("pipelines/orchestration/runs.py",),
        "a run tag Dagster stores and shows but exports no constant for: spelled there",
        _tag_value(PARTITION_RANGE_START_TAG),
        use="spelled",
    ),
    Private(
        "dagster._core.storage.tags",
        "ASSET_PARTITION_RANGE_END_TAG",
        ("pipelines/orchestration/runs.py",),
        "a run tag Dagster stores and shows but exports no constant for: spelled there",
        _tag_value(PARTITION_RANGE_END_TAG),
        use="spelled",
    ),
    Private(
        "dagster._core.storage.asset_check_execution_record",
        "AssetCheckExecutionRecordStatus",
        ("tests/dagster/test_shared_history.py",),
        "a test reads a check's stored status as the UI does; not exported",
        _loadable,
    ),
    Private(
        "dagster._core.loader",
        "LoadingContextForTest",
        ("tests/dagster/test_account_assets.py",),
        "a test asks what the UI shows of a check, which needs a loading context; not exported",
        _loadable,
    ),
    Private(
        "dagster._core.op_concurrency_limits_counter",
        "GlobalOpConcurrencyLimitsCounter",
        ("tests/dagster/test_pool.py",),
        "a test asks the run queue's own counter whether a run waits on the pool; not exported",
        _loadable,
    ),
    Private(
        "dagster._cli",
        "cli",
        ("tests/pipeline/test_sync.py",),
        "a test runs `dagster definitions validate` in its process; the command is not exported",
        _command,
    ),
)


# --- the checks --------------------------------------------------------------------------------


def _resolve(module: str, qualname: str) -> Any:
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _blame(row: Private) -> str:
    verb = "relies" if len(row.used_in) == 1 else "rely"
    return f"{', '.join(row.used_in)} {verb} on it: {row.reason}"


@pytest.mark.parametrize("row", PRIVATE, ids=[row.label for row in PRIVATE])
def test_each_private_name_still_gives_what_we_rely_on(row: Private, tmp_path: Path) -> None:
    try:
        obj = _resolve(row.module, row.name)
    except (ImportError, AttributeError) as exc:
        pytest.fail(f"{row.label} no longer imports ({exc}); {_blame(row)}")
    try:
        row.relies_on(obj, tmp_path)
    except Exception as exc:  # any way the check fails names the row
        pytest.fail(f"{row.label} changed: {exc!r}; {_blame(row)}")


COPIES = [(row, copy) for row in PRIVATE for copy in row.copied]


@pytest.mark.parametrize(
    ("row", "copy"), COPIES, ids=[f"{c.module}.{c.qualname}" for _, c in COPIES]
)
def test_the_dagster_code_we_repeat_or_replace_is_unchanged(row: Private, copy: Copied) -> None:
    try:
        found = digest(_resolve(copy.module, copy.qualname))
    except (ImportError, AttributeError, OSError, TypeError) as exc:
        pytest.fail(f"{copy.module}.{copy.qualname} is gone ({exc}); {copy.ours} repeats it")
    assert found == copy.digest, (
        f"Dagster changed {copy.module}.{copy.qualname} (digest {found}, was {copy.digest}), "
        f"which {copy.ours} repeats or replaces (through {row.label}: {row.reason}): read the "
        "new source, bring ours in line, then update the digest in this table"
    )


# --- every private name in the tree is a row ---------------------------------------------------


@dataclass(frozen=True)
class Found:
    path: str
    module: str
    name: str  # "" for a module named in a string
    line: int
    use: Use


def _private(module: str) -> bool:
    return module.startswith("dagster._")


def private_uses(path: Path, source: str | None = None) -> list[Found]:
    """The private Dagster names a file imports (anywhere in it, under TYPE_CHECKING or in a
    function too) and, in production code, the private modules its strings name."""
    text = path.read_text(encoding="utf-8") if source is None else source
    name = path.relative_to(ROOT).as_posix() if path.is_absolute() else path.as_posix()
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                if _private(node.module) or (node.module == "dagster" and alias.name[0] == "_"):
                    found.append(Found(name, node.module, alias.name, node.lineno, "import"))
        elif isinstance(node, ast.Import):
            found += [
                Found(name, alias.name, "", node.lineno, "import")
                for alias in node.names
                if _private(alias.name)
            ]
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and _private(node.value)
            and name.startswith(PRODUCTION)
        ):
            found.append(Found(name, node.value, "", node.lineno, "named"))
    return found


def _every_use() -> list[Found]:
    files = sorted(p for top in SCANNED for p in (ROOT / top).rglob("*.py"))
    return [use for path in files for use in private_uses(path)]


def _listed(use: Found) -> bool:
    return any(
        row.module == use.module and use.path in row.used_in and use.name in (row.name, "")
        for row in PRIVATE
        if row.use != "spelled"
    )


def test_every_private_dagster_name_in_the_tree_is_a_row() -> None:
    unlisted = [f"{u.path}:{u.line}: {u.module} {u.name}" for u in _every_use() if not _listed(u)]
    assert not unlisted, (
        "a private Dagster name without its row in PRIVATE (its reason, what we rely on); use "
        f"Dagster's public API where it offers the same: {unlisted}"
    )


def test_every_row_is_still_used_where_it_says() -> None:
    uses = {(u.path, u.module, u.name) for u in _every_use()}
    stale = [
        f"{row.label} in {path}"
        for row in PRIVATE
        if row.use != "spelled"
        for path in row.used_in
        if (path, row.module, row.name) not in uses and (path, row.module, "") not in uses
    ]
    assert not stale, f"rows whose files no longer use their name: {stale}"


def test_each_production_import_says_why_right_above_it() -> None:
    silent = []
    for use in _every_use():
        if use.use != "import" or not use.path.startswith(PRODUCTION):
            continue
        lines = (ROOT / use.path).read_text(encoding="utf-8").splitlines()
        above = lines[use.line - 2].strip() if use.line > 1 else ""
        if not above.startswith("# "):
            silent.append(f"{use.path}:{use.line}: {use.module} {use.name}")
    assert not silent, f"a private import without its one-line reason right above: {silent}"


def test_the_scan_sees_each_way_of_naming_a_private_module() -> None:
    source = (
        "from dagster._core.events import ASSET_EVENTS\n"
        "import dagster._check\n"
        "from dagster import _check\n"
        "def f():\n"
        "    from dagster._cli import cli\n"
        "MODULE = 'dagster._core.storage.root'\n"
        "PUBLIC = 'dagster'\n"
    )
    found = private_uses(Path("pipelines/probe.py"), source)
    assert sorted((u.module, u.name, u.use) for u in found) == [
        ("dagster", "_check", "import"),
        ("dagster._check", "", "import"),
        ("dagster._cli", "cli", "import"),
        ("dagster._core.events", "ASSET_EVENTS", "import"),
        ("dagster._core.storage.root", "", "named"),
    ]
    assert not any(_listed(u) for u in found), "a name in an unlisted file passed as listed"
    assert not private_uses(Path("tests/probe.py"), "MODULE = 'dagster._core.storage.root'\n")
