"""Building the offline report site from the warehouse alone (no API calls).

The site is written to a staging directory beside ``out_dir`` and swapped in when complete, so a
reader never sees half a site and pages of a campaign that no longer exists do not linger. A
directory is only ever replaced if it is empty or a site this function wrote (it carries a marker
file): pointing ``out_dir`` at a home directory by mistake fails instead of deleting it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from dashboards import paths, static
from dashboards.pages.account_status import status_files
from dashboards.pages.alerts import alerts_file
from dashboards.pages.common import File
from dashboards.pages.dimensions import dimension_files
from dashboards.pages.findings import placement_counts
from dashboards.pages.key_audit import key_audit_file
from dashboards.pages.overview import overview_file
from dashboards.pages.reconciliation import reconciliation_file
from dashboards.pages.site_index import site_index_file
from dashboards.pages.statement import statement_files
from dashboards.read import ReportError, read_warehouse

MARKER = ".creditlens-site"


@dataclass(frozen=True)
class SiteResult:
    """What a build wrote. Paths are inside ``out_dir``."""

    out_dir: Path
    index_html: Path
    pages: tuple[Path, ...]
    downloads: tuple[Path, ...]
    assets: tuple[Path, ...]
    accounts: tuple[str, ...]
    overviews: dict[str, Path]
    report_months: dict[str, date | None]
    notices: tuple[str, ...]
    # Hidden movements per placement of each account, counted from the rows its reconciliation
    # page lists: what a caller prints about them (the demo) then matches the page.
    placements: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in (*self.pages, *self.downloads, *self.assets))


def build_site(
    warehouse_path: Path,
    out_dir: Path,
    *,
    account: str | None = None,
    month: date | None = None,
    lock_timeout_s: float,
    accounts: Sequence[str] = (),
) -> SiteResult:
    """Reads the warehouse read-only and writes the whole static site to ``out_dir``.

    ``account`` limits the site to one account (ReportError if the warehouse has no data for
    it); ``month`` picks the month the report is about (any day of it; default: the latest full
    month of each account's data; ReportError, naming the months the ledger covers, when no
    account has a statement for it). Every table of every page has a CSV of its rows beside it
    (``downloads``). ``lock_timeout_s``: CREDITLENS_LOCK_TIMEOUT_S, how long to wait for a
    writer to let go of the warehouse. ``accounts``: those of the accounts file, each listed with
    its sync status even without data (pages/account_status.py).
    """
    out_dir = Path(out_dir).resolve()
    _check_replaceable(out_dir)
    data = read_warehouse(
        Path(warehouse_path), account, month, accounts, lock_timeout_s=lock_timeout_s
    )
    files: list[File] = [*site_index_file(data), *status_files(data), *alerts_file(data)]
    if data.key_audit:
        files.extend(key_audit_file(data.key_audit))
    for acct in data.accounts:
        files.extend(overview_file(acct, key_audit=bool(data.key_audit)))
        files.extend(reconciliation_file(acct))
        files.extend(statement_files(acct))
        files.extend(dimension_files(acct))
    staging = out_dir.with_name(f".{out_dir.name}.building-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        staging.mkdir(parents=True)
        (staging / MARKER).write_text("written by creditlens report; replaced on each build\n")
        assets = static.write_assets(staging / paths.ASSETS)
        for file in files:
            target = staging / file.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(file.content, encoding="utf-8", newline="")
        _swap(staging, out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    pages = tuple(out_dir / f.path for f in files if f.path.endswith(".html"))
    return SiteResult(
        out_dir=out_dir,
        index_html=out_dir / paths.SITE_INDEX,
        pages=pages,
        downloads=tuple(out_dir / f.path for f in files if not f.path.endswith(".html")),
        assets=tuple(out_dir / a.relative_to(staging) for a in assets),
        accounts=tuple(a.name for a in data.accounts),
        overviews={a.name: out_dir / paths.overview(a.name) for a in data.accounts},
        report_months={a.name: a.report_month for a in data.accounts},
        notices=tuple(data.notices) + tuple(n for a in data.accounts for n in a.notices),
        placements={a.name: placement_counts(a.breaks) for a in data.accounts},
    )


def _check_replaceable(out_dir: Path) -> None:
    if out_dir.exists() and (
        not out_dir.is_dir() or (any(out_dir.iterdir()) and not (out_dir / MARKER).exists())
    ):
        raise ReportError(
            f"{out_dir} exists and is not a creditlens site: choose an empty or new directory"
        )


def _swap(staging: Path, out_dir: Path) -> None:
    """Old site out of the way, new one in, old one deleted: readers see a whole site."""
    retired = out_dir.with_name(f".{out_dir.name}.retired-{os.getpid()}")
    if out_dir.exists():
        os.replace(out_dir, retired)
    os.replace(staging, out_dir)
    shutil.rmtree(retired, ignore_errors=True)
