"""One audit run: read the inventory, probe every key, scan the paths, judge.

Keys exist in clear only inside this function's locals and the client's header; what leaves
it is an AuditReport, scrubbed once more of every spelling of every key as a last guard.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, TypeVar

from pipelines.api.errors import ConfigurationError
from pipelines.api.redact import Redactor, needles
from pipelines.audit.classify import assess
from pipelines.audit.endpoints import ENDPOINTS, Outcome
from pipelines.audit.git_scan import scan_git
from pipelines.audit.inventory import (
    Inventory,
    KeyEntry,
    KeyUnavailable,
    Place,
    resolve_key,
)
from pipelines.audit.key_fingerprint import key_fingerprint, last4, load_secret
from pipelines.audit.key_plan import LEDGER_ENDPOINT, KeyPlan, key_inventory, key_plan
from pipelines.audit.probe import audit_settings, check_settings, probe_key
from pipelines.audit.report import AuditReport, EndpointResult, KeyResult, ScanHit, ScanStats
from pipelines.audit.scan import (
    DEFAULT_MAX_FILE_BYTES,
    RawHit,
    ScanPathError,
    check_roots,
    place_covers,
    scan,
)
from pipelines.config.settings import Settings
from pipelines.warehouse.writer import Warehouse

log = logging.getLogger(__name__)

T = TypeVar("T")


class AuditCrash(RuntimeError):
    """Something unexpected broke the run (odd input, a bug): the audit could not run, which
    is exit 2, never the "finding found" of exit 1. The message is scrubbed of every key."""


def run_audit(
    inventory_path: Path | str | Inventory | None,
    scan_paths: Sequence[Path | str] = (),
    *,
    git_repos: Sequence[Path | str] = (),
    base_url: str | None = None,
    settings: Settings | None = None,
    api_settings_overrides: Mapping[str, Any] | None = None,
    secret: bytes | None = None,
    env: Mapping[str, str] | None = None,
    state_dir: Path | None = None,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    concurrency: int = 4,
    day: date | None = None,
    run_id: str | None = None,
) -> AuditReport:
    """Audit every key of the inventory. Raises InventoryError, ScanPathError (GitScanError for
    a history that cannot be read) or ConfigurationError for a run that cannot be meaningful,
    and AuditCrash, scrubbed of every key, for anything unexpected; everything about a key is
    a result.

    ``inventory_path`` None: the inventory is derived from the settings' accounts file, one
    key per account (``derived_inventory``); without an accounts file that is a
    ConfigurationError. ``scan_paths`` are files and folders to search; ``git_repos`` are
    repositories whose whole history is searched (pipelines/audit/git_scan.py), their hits
    carrying the commit.

    Each key is probed with the ledger range parameters of its account (``match_account``):
    the one whose name is the entry's, else the one at the key's base URL, else the only one;
    with several accounts and none matching, the API's defaults, which the key's note says.
    Base URL of a key: its own ``base_url``, else ``base_url`` here, else its account's, else
    CREDITLENS_BASE_URL (for a key no account matches), else the inventory's top-level
    ``base_url``. ``settings`` default to those of ``env``; the keys themselves are read from
    ``env`` as the inventory says, and so is the fingerprint secret as the settings say (else
    its file, in ``state_dir`` or the settings' state dir), unless ``secret`` is given.
    """
    environ: Mapping[str, str] = os.environ if env is None else env
    settings = settings or Settings.from_env(environ)
    inventory = key_inventory(inventory_path, settings)
    roots = [Path(p).expanduser() for p in scan_paths]
    repos = [Path(p).expanduser() for p in git_repos]
    check_roots(roots)
    check_roots(repos)
    plans = {
        e.name: key_plan(e, inventory, settings, base_url, environ, api_settings_overrides or {})
        for e in inventory.keys
    }
    for plan in plans.values():
        check_settings(plan.url, plan.options)
    secret = secret if secret is not None else load_secret(state_dir, environ, settings)

    keys: dict[str, str] = {}
    unavailable: dict[str, str] = {}
    for entry in inventory.keys:
        try:
            keys[entry.name] = resolve_key(entry, environ)
        except KeyUnavailable as exc:
            unavailable[entry.name] = str(exc)
    redactor = Redactor(list(keys.values()))
    try:
        report = _audit(
            inventory,
            _Run(keys, unavailable, plans, secret, redactor, day),
            roots,
            repos,
            max_file_bytes,
            concurrency,
            run_id or uuid.uuid4().hex,
        )
    except (ScanPathError, ConfigurationError):
        raise
    except Exception as exc:
        # Odd input (a file name, a server answer) must not surface as a traceback, nor exit
        # as a finding; the text is scrubbed, since it might quote a key.
        text = redactor.scrub(f"{type(exc).__name__}: {exc}")
        raise AuditCrash(f"the audit crashed ({text})") from None
    return scrub(report, redactor)


@dataclasses.dataclass(frozen=True)
class _Run:
    """What every step of one run needs; the keys in clear live here and nowhere else (kept
    out of its repr, so a traceback or a debugger's summary does not show them)."""

    keys: dict[str, str] = dataclasses.field(repr=False)
    unavailable: dict[str, str]
    plans: dict[str, KeyPlan]
    secret: bytes = dataclasses.field(repr=False)
    redactor: Redactor = dataclasses.field(repr=False)
    day: date | None


def _audit(
    inventory: Inventory,
    run: _Run,
    roots: list[Path],
    repos: list[Path],
    max_file_bytes: int,
    concurrency: int,
    run_id: str,
) -> AuditReport:
    keys, redactor = run.keys, run.redactor
    # Each key's (fingerprint, last 4): for the log, the scan and the results.
    ids = {name: (key_fingerprint(k, run.secret), last4(k)) for name, k in keys.items()}

    def probe(entry: KeyEntry) -> tuple[EndpointResult, ...]:
        if entry.name in run.unavailable:
            return ()
        plan = run.plans[entry.name]
        client_settings = audit_settings(plan.url, keys[entry.name], plan.options)
        results = probe_key(client_settings, redactor, run.day)
        if plan.defaults:
            log.warning("key %s: %s", redactor.scrub(entry.name), redactor.scrub(plan.defaults))
            results = tuple(_explained(r, plan.defaults) for r in results)
        log.info(
            "audited key %s (%s): %s",
            redactor.scrub(entry.name),
            ids[entry.name][0],
            ", ".join(f"{r.endpoint}={r.outcome.value}" for r in results),
        )
        return results

    with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(inventory.keys)))) as pool:
        probed = dict(zip(inventory.keys, pool.map(probe, inventory.keys), strict=True))

    hits, scan_stats = _scan(inventory, keys, ids, roots, repos, max_file_bytes)
    hits_by_key: dict[str, list[ScanHit]] = {}
    for hit in hits:
        hits_by_key.setdefault(hit.key_name, []).append(hit)

    results: list[KeyResult] = []
    for entry in inventory.keys:
        fp, tail = ids.get(entry.name, (None, ""))
        plan = run.plans[entry.name]
        result = assess(
            entry,
            fingerprint=fp,
            last4=tail,
            base_url=plan.url,
            endpoints=probed[entry] or _not_probed(),
            hits=hits_by_key.get(entry.name, ()),
            unavailable=run.unavailable.get(entry.name),
            scan=scan_stats,
        )
        if plan.note:
            note = "; ".join(n for n in (result.note, plan.note) if n)
            result = dataclasses.replace(result, note=note)
        results.append(result)
    return AuditReport(
        run_id=run_id,
        audited_at=datetime.now(UTC),
        inventory=str(inventory.path),
        keys=tuple(results),
        scan_hits=tuple(hits),
        **({"scan": scan_stats} if scan_stats else {}),
    )


def _scan(
    inventory: Inventory,
    keys: dict[str, str],
    ids: dict[str, tuple[str, str]],
    roots: list[Path],
    repos: list[Path],
    max_file_bytes: int,
) -> tuple[list[ScanHit], ScanStats | None]:
    """Scan files and git histories; every raw hit becomes a ScanHit by fingerprint."""
    if not roots and not repos:
        return [], None
    wanted = {n: needles(k) for n, k in keys.items()}
    found: list[RawHit] = []
    stats: list[ScanStats] = []
    if roots:
        raw_hits, scan_stats = scan(roots, wanted, max_file_bytes)
        found.extend(raw_hits)
        stats.append(scan_stats)
    for repo in repos:
        raw_hits, scan_stats = scan_git(repo, wanted, max_file_bytes)
        found.extend(raw_hits)
        stats.append(scan_stats)
    base_dir = inventory.path.parent
    # The spec gives a company one key, so several entries may hold the same key: a copy
    # is accounted for when any of them lists the place.
    places: dict[str, list[Place]] = {}
    for entry in inventory.keys:
        if entry.name in keys:
            places.setdefault(keys[entry.name], []).extend(entry.places)
    hits: list[ScanHit] = []
    for raw in found:
        fp, tail = ids[raw.key]
        # A git hit's path is already the repository's top folder joined with the tree path.
        path = Path(raw.path)
        hits.append(
            ScanHit(
                key_name=raw.key,
                fingerprint=fp,
                last4=tail,
                path=str(path),
                line=raw.line,
                column=raw.column,
                encoding=raw.encoding,
                listed=any(place_covers(p, path, base_dir) for p in places[keys[raw.key]]),
                suppressed=raw.suppressed,
                commit=raw.commit,
            )
        )
    return hits, _merge(stats)


# Settings a scan ran under, not counts of what it saw: merged scans share them.
LIMITS = frozenset({"max_file_bytes", "min_key_chars"})


def _merge(stats: list[ScanStats]) -> ScanStats:
    """One ScanStats for files and histories: counts add up, lists join, limits agree."""
    if len(stats) == 1:
        return stats[0]
    merged: dict[str, Any] = {}
    for f in dataclasses.fields(ScanStats):
        values = [getattr(s, f.name) for s in stats]
        if f.name in LIMITS:
            merged[f.name] = max(values)
        elif all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            merged[f.name] = sum(values)
        elif all(isinstance(v, tuple) for v in values):
            merged[f.name] = tuple(dict.fromkeys(x for v in values for x in v))
        else:
            merged[f.name] = values[0]
    return ScanStats(**merged)


def _explained(result: EndpointResult, note: str) -> EndpointResult:
    """The ledger's refusal of a query (a 400 for parameters it does not know) with the reason
    the query was the API's default one: the "probe incomplete" finding then says why."""
    status = result.http_status
    if result.endpoint != LEDGER_ENDPOINT or result.outcome is not Outcome.UNKNOWN:
        return result
    if status is None or not 400 <= status < 500 or status == 429:
        return result
    return dataclasses.replace(result, reason=f"{result.reason} ({note})")


def _not_probed() -> tuple[EndpointResult, ...]:
    return tuple(
        EndpointResult(e.name, e.path, Outcome.UNKNOWN, None, "not probed: key unavailable")
        for e in ENDPOINTS
    )


def scrub(value: T, redactor: Redactor) -> T:
    """Last guard: rewrite every text in the report without any spelling of any key.

    Inventory texts (names, places) and file paths come from people; a key pasted into one
    of them must not travel into a report.
    """
    if isinstance(value, str):
        return redactor.scrub(value)  # type: ignore[return-value]
    if isinstance(value, tuple):
        return tuple(scrub(v, redactor) for v in value)  # type: ignore[return-value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {
            f.name: scrub(getattr(value, f.name), redactor) for f in dataclasses.fields(value)
        }
        return dataclasses.replace(value, **changes)  # type: ignore[return-value]
    return value


def land_audit(report: AuditReport, warehouse: Warehouse) -> Path:
    """The run's keys and findings in one transaction (so a page never shows keys without
    their findings), then the analyst copy; the CLI and the Dagster asset both land this way."""
    warehouse.append_tables(report.tables())
    warehouse.publish_analyst_copy()
    return warehouse.path
