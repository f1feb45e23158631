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
from pipelines.api.settings import BASE_URL_ENV
from pipelines.audit.classify import assess
from pipelines.audit.endpoints import ENDPOINTS, Outcome
from pipelines.audit.inventory import (
    KeyEntry,
    KeyUnavailable,
    Place,
    load_inventory,
    resolve_key,
)
from pipelines.audit.key_fingerprint import key_fingerprint, last4, load_secret
from pipelines.audit.probe import audit_settings, check_settings, probe_key
from pipelines.audit.report import AuditReport, EndpointResult, KeyResult, ScanHit
from pipelines.audit.scan import DEFAULT_MAX_FILE_BYTES, check_roots, place_covers, scan
from pipelines.settings import Settings

log = logging.getLogger(__name__)

T = TypeVar("T")


def run_audit(
    inventory_path: Path | str,
    scan_paths: Sequence[Path | str] = (),
    *,
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
    """Audit every key of the inventory. Raises InventoryError, ScanPathError or
    ConfigurationError for a run that cannot be meaningful; everything about a key is a result.

    Base URL of a key: its own ``base_url``, else ``base_url`` here, else the configured
    account's (CREDITLENS_BASE_URL), else the inventory's top-level ``base_url``. ``settings``
    default to those of ``env``; the keys themselves are read from ``env`` as the inventory says,
    and so is the fingerprint secret as the settings say (else its file, in ``state_dir`` or the
    settings' state dir), unless ``secret`` is given.
    """
    environ: Mapping[str, str] = os.environ if env is None else env
    settings = settings or Settings.from_env(environ)
    account = settings.account
    # The deployment's ledger range parameters: an audit probes the API the sync reads.
    overrides = {
        "range_start_param": account.api.range_start_param,
        "range_end_param": account.api.range_end_param,
        "range_format": account.api.range_format,
        **(api_settings_overrides or {}),
    }
    inventory = load_inventory(inventory_path)
    roots = [Path(p).expanduser() for p in scan_paths]
    check_roots(roots)
    default_url = base_url or account.base_url or inventory.base_url
    urls = {e.name: _base_url(e, default_url, inventory.path) for e in inventory.keys}
    for url in dict.fromkeys(urls.values()):
        check_settings(url, overrides)
    secret = secret if secret is not None else load_secret(state_dir, environ, settings)

    keys: dict[str, str] = {}
    unavailable: dict[str, str] = {}
    for entry in inventory.keys:
        try:
            keys[entry.name] = resolve_key(entry, environ)
        except KeyUnavailable as exc:
            unavailable[entry.name] = str(exc)
    redactor = Redactor(list(keys.values()))

    def probe(entry: KeyEntry) -> tuple[EndpointResult, ...]:
        if entry.name in unavailable:
            return ()
        client_settings = audit_settings(urls[entry.name], keys[entry.name], overrides)
        results = probe_key(client_settings, redactor, day)
        log.info(
            "audited key %s (%s): %s",
            redactor.scrub(entry.name),
            key_fingerprint(keys[entry.name], secret),
            ", ".join(f"{r.endpoint}={r.outcome.value}" for r in results),
        )
        return results

    with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(inventory.keys)))) as pool:
        probed = dict(zip(inventory.keys, pool.map(probe, inventory.keys), strict=True))

    ids = {name: (key_fingerprint(k, secret), last4(k)) for name, k in keys.items()}
    hits_by_key: dict[str, list[ScanHit]] = {}
    scan_stats = None
    if roots:
        raw_hits, scan_stats = scan(roots, {n: needles(k) for n, k in keys.items()}, max_file_bytes)
        base_dir = inventory.path.parent
        # The spec gives a company one key, so several entries may hold the same key: a copy
        # is accounted for when any of them lists the place.
        places: dict[str, list[Place]] = {}
        for entry in inventory.keys:
            if entry.name in keys:
                places.setdefault(keys[entry.name], []).extend(entry.places)
        for raw in raw_hits:
            fp, tail = ids[raw.key]
            hits_by_key.setdefault(raw.key, []).append(
                ScanHit(
                    key_name=raw.key,
                    fingerprint=fp,
                    last4=tail,
                    path=str(raw.path),
                    line=raw.line,
                    column=raw.column,
                    encoding=raw.encoding,
                    listed=any(place_covers(p, raw.path, base_dir) for p in places[keys[raw.key]]),
                )
            )

    results: list[KeyResult] = []
    for entry in inventory.keys:
        fp, tail = ids.get(entry.name, (None, ""))
        results.append(
            assess(
                entry,
                fingerprint=fp,
                last4=tail,
                base_url=urls[entry.name],
                endpoints=probed[entry] or _not_probed(),
                hits=hits_by_key.get(entry.name, ()),
                unavailable=unavailable.get(entry.name),
            )
        )
    report = AuditReport(
        run_id=run_id or uuid.uuid4().hex,
        audited_at=datetime.now(UTC),
        inventory=str(inventory.path),
        keys=tuple(results),
        scan_hits=tuple(h for name in hits_by_key for h in hits_by_key[name]),
        **({"scan": scan_stats} if scan_stats else {}),
    )
    return scrub(report, redactor)


def _base_url(entry: KeyEntry, default: str | None, inventory: Path) -> str:
    url = entry.base_url or default
    if not url:
        raise ConfigurationError(
            f"{inventory}: key {entry.name!r}: no base URL: pass --base-url, set "
            f"{BASE_URL_ENV}, or add base_url to the inventory"
        )
    return url.rstrip("/")


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
