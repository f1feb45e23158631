"""No key in Dagster's storage: the ledger, snapshot and audit jobs run against the simulator with
a persistent instance (DAGSTER_HOME in tmp_path), then every file Dagster and the warehouse hold
is searched for every key in every spelling (tests/reliability/secrets_search.py).

A key pasted into the run config in place of a variable's name (``api_key_env``,
``audit_secret_env`` inside a resource's ``settings_json``) is refused with one line while Dagster
resolves the run's config, before it stores the run: no run is created, and the literal is
nowhere under DAGSTER_HOME, neither from ``execute_in_process`` nor from the launchpad's own
path (the GraphQL ``launchPipelineExecution`` mutation against an out-of-process code server).
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from dagster import DagsterInstance, Failure
from pydantic import ValidationError

from pipelines.api.environment import is_env_name
from pipelines.api.errors import ConfigurationError
from pipelines.cli.runner import run_job
from pipelines.cli.sync_command import run_sync
from pipelines.config.account import AccountSettings
from pipelines.config.settings import AUDIT_SECRET_ENV, Settings
from pipelines.definitions import build_definitions
from pipelines.resources.settings_resource import SettingsResource
from simulator import Scenario
from tests.audit.audit_helpers import key_block, write_inventory
from tests.conftest import Simulated
from tests.reliability.secrets_search import files_under, search
from tests.reliability.support import empty_warehouse_at

ROOT = Path(__file__).resolve().parents[2]
# The sync's key has the characters URL-encoding and base64 change; the campaigns key is
# identifier-like, as many real keys are: the kind a looser name rule would have let through.
KEY = "sk_live+Dagster/7e1b5d4f6a8c0e2b4d6f8a1c3e5f=="
PASTED = "ck_live_DagsterPasted4e6a8c0d2f1b3d5f7a9c1e3b"
AUDIT_SECRET = "audit+Dagster/0c6a2f4b8e1d3f5a7c9e=="
KEYS = {"sync key": KEY, "pasted key": PASTED, "audit secret": AUDIT_SECRET}
SCENARIO = Scenario.named(
    "small",
    companies=[
        {
            "name": "acme",
            "history_days": 4,
            "entries_per_day": 20,
            "keys": [
                {"label": "primary", "secret": KEY},
                {"label": "campaigns-only", "scope": "campaigns", "secret": PASTED},
            ],
        }
    ],
)
REFUSED = "must name an environment variable"
# The whole message, spelled out: where the setting is in settings_json and why, never the value.
ONE_LINE = {
    "api_key_env": "accounts.0.api_key_env: must name an environment variable (like "
    "CREDITLENS_API_KEY), not hold a key: refused, value not shown",
    "audit_secret_env": "audit_secret_env: must name an environment variable (like "
    "CREDITLENS_AUDIT_SECRET), not hold a secret: refused, value not shown",
}


@pytest.fixture
def installation(
    simulated: Callable[..., Simulated],
    creditlens_env: Callable[..., Settings],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Path]:
    """The simulator, the CREDITLENS_* variables, an inventory and DAGSTER_HOME; yields it."""
    s = simulated(SCENARIO, demo_key=None)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("Nothing secret here.\n")
    inventory = write_inventory(
        tmp_path,
        key_block("sync", "SYNC_KEY", "full", ("creditlens sync", "server")),
        key_block("widget", "WIDGET_KEY", "campaigns", ("web widget", "client-side")),
    )
    creditlens_env(
        s,
        persistent_dagster=True,
        CREDITLENS_API_KEY=KEY,
        CREDITLENS_AUDIT_INVENTORY=str(inventory),
        CREDITLENS_AUDIT_SCAN=str(repo),
        CREDITLENS_AUDIT_STATE_DIR=str(tmp_path / "state"),
        CREDITLENS_PROCESSES="1",
    )
    for name, value in {
        "SYNC_KEY": KEY,
        "WIDGET_KEY": PASTED,
        AUDIT_SECRET_ENV: AUDIT_SECRET,
    }.items():
        monkeypatch.setenv(name, value)
    home = tmp_path / "dagster"
    home.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    yield home


def pasted_config(resource: str, field: str) -> dict[str, Any]:
    """A resource's config as the launchpad scaffolds it, with a key typed where a name belongs."""
    settings = json.loads(Settings.from_env().model_dump_json())
    if field == "api_key_env":
        settings["accounts"][0]["api_key_env"] = PASTED
    else:
        settings["audit_secret_env"] = PASTED
    config: dict[str, Any] = {"settings_json": json.dumps(settings)}
    return {"resources": {resource: {"config": config}}}


@pytest.mark.parametrize(
    "name",
    ["CREDITLENS_API_KEY", "ACME_KEY", "ACME_AUDIT_SECRET", "OPENAI_API_KEY_2", "K8S_S3_TOKEN"],
)
def test_a_variable_name_is_accepted(name: str) -> None:
    assert is_env_name(name)
    assert AccountSettings(api_key_env=name).api_key_env == name
    assert Settings(audit_secret_env=name).audit_secret_env == name


# What a user pastes: keys, identifier-like or not, and names that break the convention.
NOT_NAMES = [
    PASTED,
    "sk_live_AbC123xyz",
    "AKIAIOSFODNN7EXAMPLE",
    "DEADBEEF0123456789ABCDEF",
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "acme_key",
    "_ACME_KEY",
    "ACME KEY",
    "A" * 65,
    KEY,
    "",
]


@pytest.mark.parametrize("value", NOT_NAMES)
def test_a_value_that_is_not_a_variable_name_is_refused_without_being_shown(value: str) -> None:
    assert not is_env_name(value)
    base = json.loads(Settings().model_dump_json())
    for field, where in (("api_key_env", "accounts.0.api_key_env"), ("audit_secret_env", None)):
        settings = json.loads(json.dumps(base))
        if where:
            settings["accounts"][0][field] = value
        else:
            settings[field] = value
        with pytest.raises(ConfigurationError) as caught:
            SettingsResource(settings_json=json.dumps(settings)).settings()
        assert str(caught.value) == ONE_LINE[field]
    with pytest.raises(ValidationError) as raw:  # a traceback of the model itself
        AccountSettings(api_key_env=value)
    assert value not in str(raw.value) or not value
    with pytest.raises(ConfigurationError) as read:  # settings built without validation
        AccountSettings.model_construct(api_key_env=value, base_url="http://x").api_settings({})
    assert REFUSED in str(read.value) and (value not in str(read.value) or not value)


def test_a_settings_error_never_repeats_what_could_be_a_key() -> None:
    """An unexpected field, a URL and broken JSON: each named, none of their values shown."""
    settings = json.loads(Settings().model_dump_json())
    settings["accounts"][0]["api_key"] = PASTED
    settings["accounts"][0]["base_url"] = f"ftp://user:{PASTED}@example.test"
    with pytest.raises(ConfigurationError) as caught:
        SettingsResource(settings_json=json.dumps(settings)).settings()
    message = str(caught.value)
    assert "accounts.0.api_key: " in message and "CREDITLENS_BASE_URL: " in message
    assert PASTED not in message and "\n" not in message
    with pytest.raises(ConfigurationError) as broken:
        SettingsResource(settings_json='{"audit_secret_env": "' + PASTED).settings()
    assert PASTED not in str(broken.value)
    # a plain value that cannot be a key is still shown, to help whoever typed it
    settings = json.loads(Settings().model_dump_json())
    settings["lookback_days"] = "a week"
    with pytest.raises(ConfigurationError, match="got 'a week'"):
        SettingsResource(settings_json=json.dumps(settings)).settings()


@pytest.mark.slow
def test_runs_leave_no_key_in_dagster_storage_or_the_warehouse(installation: Path) -> None:
    settings = Settings.from_env()
    # A migrated empty warehouse, as a first sync creates it (migrations hold no key): the runs'
    # writes, to the warehouse and to Dagster's storage, are what is searched.
    empty_warehouse_at(settings.warehouse)
    run_sync(settings, None, None)  # raises RunFailed when a job fails
    instance = DagsterInstance.get()
    try:
        audit = run_job(build_definitions(settings), "key_audit_run", instance)
        assert audit.materializations["key_audit"]["keys"] == 2
        jobs = {run.job_name for run in instance.get_runs()}
    finally:
        instance.dispose()
    assert {"ledger_and_snapshot_sync", "reconciliation_run", "key_audit_run"} <= jobs, jobs

    files = files_under(installation, settings.warehouse.parent)
    assert any(p.name == "runs.db" for p in files), "Dagster stored no run"
    assert any(p.suffix == ".duckdb" for p in files), "no warehouse"
    hits, searched = search(KEYS, files, {})
    assert not hits, sorted({(h.where.rsplit("/", 1)[-1], h.key_label, h.spelling) for h in hits})
    assert len(searched) > len(files)  # the databases were read value by value too


@pytest.mark.parametrize(
    ("resource", "field", "job"),
    [
        ("platform_api", "api_key_env", "snapshot_sync"),
        ("key_audit_config", "audit_secret_env", "key_audit_run"),
    ],
)
def test_a_key_pasted_in_run_config_is_refused_before_dagster_stores_the_run(
    installation: Path, resource: str, field: str, job: str
) -> None:
    run_config = pasted_config(resource, field)
    instance = DagsterInstance.get()
    try:
        job_def = build_definitions(Settings.from_env()).resolve_job_def(job)
        with pytest.raises(Failure) as caught:
            job_def.execute_in_process(run_config=run_config, instance=instance)
        runs = instance.get_runs()
    finally:
        instance.dispose()
    message = str(caught.value)
    assert message == ONE_LINE[field], message
    assert runs == [], "the refused run was stored"
    printed = "".join(traceback.format_exception(caught.value))
    hits, _ = search(KEYS, files_under(installation), {"message": message, "traceback": printed})
    assert not hits, sorted({(h.where.rsplit("/", 1)[-1], h.spelling) for h in hits})


@pytest.mark.slow
def test_the_launchpad_refuses_a_pasted_key_before_storing_the_run(installation: Path) -> None:
    """The webserver's own launch path: GraphQL, a code server in its own process."""
    graphql = pytest.importorskip("dagster_graphql.test.utils")
    from dagster_graphql.client.query import LAUNCH_PIPELINE_EXECUTION_MUTATION

    run_config = pasted_config("platform_api", "api_key_env")
    instance = DagsterInstance.get()
    try:
        with graphql.define_out_of_process_context(
            str(ROOT / "pipelines" / "definitions.py"), "defs", instance
        ) as context:
            params = {
                "selector": graphql.infer_job_selector(context, "snapshot_sync"),
                "runConfigData": run_config,
            }
            result = graphql.execute_dagster_graphql(
                context, LAUNCH_PIPELINE_EXECUTION_MUTATION, {"executionParams": params}
            )
        runs = instance.get_runs()
    finally:
        instance.dispose()
    answer = result.data["launchPipelineExecution"]
    assert answer["__typename"] == "PythonError", answer["__typename"]
    # Dagster prefixes the exception's class: "...Failure: <the one line>".
    assert answer["message"].strip().endswith(f"Failure: {ONE_LINE['api_key_env']}"), answer
    assert runs == [], "the refused run was stored"
    hits, _ = search(KEYS, files_under(installation), {"graphql": json.dumps(result.data)})
    assert not hits, sorted({(h.where.rsplit("/", 1)[-1], h.spelling) for h in hits})
