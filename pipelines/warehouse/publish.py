"""The read-only analyst copy: published once per sync, rewriting only what changed.

Analysts open a copy, never the pipeline's file: DuckDB lets one process write a file or many
read it, and an analyst's open session must not block a sync. The copy is a small DuckDB file of
views (readable by DuckDB 1.4, pipelines/warehouse/analyst_views.py) over Parquet files per
table and account in the folder beside it (pipelines/warehouse/analyst_parts.py). A publish
writes the parts whose rows changed under new names, then renames a new views file over the old
one: a reader sees the old publish or the new one, never half, and the files the previous
publish named stay until the next one, so a session opened before it keeps reading.

A sync writes many times (discovery, each account's landing, snapshots, reconciliation); inside
``publishing_once`` (the CLI's sync, a Dagster run) a request to publish is remembered and done
once, at the end.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb

from pipelines.runtime.failpoints import failpoint
from pipelines.runtime.processes import process_alive
from pipelines.warehouse import analyst_parts as parts
from pipelines.warehouse.analyst_views import (
    catalog_digest,
    changed_views,
    digest,
    statements,
    write_new_views,
    write_views,
)
from pipelines.warehouse.connection import connect
from pipelines.warehouse.disk import DiskFull, free_bytes, is_disk_full, size_text
from pipelines.warehouse.errors import WarehouseError
from pipelines.warehouse.instances import warehouse_exists
from pipelines.warehouse.lake import lake_at
from pipelines.warehouse.lock import file_lock

# A publish under way (its generation follows): left behind only by a killed one.
_UNDER_WAY = ".publishing-"
# The views file itself: about 270 KB whatever the warehouse's size, with room to grow.
VIEWS_FILE_BYTES = 512 * 1024


# A lake's rows in Parquet, about: the estimate of a copy's size where no one file holds them.
LAKE_BYTES_PER_ROW = 64


def _bytes_per_row(path: Path, rows: int) -> float:
    """What the copy will need per row, from the warehouse file's size per row."""
    if lake_at(path) is not None:
        return LAKE_BYTES_PER_ROW
    return path.stat().st_size / max(rows, 1)


def default_analyst_copy(path: Path) -> Path:
    """Beside the warehouse, a DuckDB file whatever the warehouse is (a lake's stand-in is
    ``warehouse.lake``: its copy is ``warehouse.analyst.duckdb``)."""
    suffix = ".duckdb" if lake_at(path) is not None else path.suffix or ".duckdb"
    return path.with_name(f"{path.stem}.analyst{suffix}")


def analyst_parquet_dir(target: Path) -> Path:
    """The copy's data, beside its views file: ``warehouse.analyst.duckdb`` reads
    ``warehouse.analyst.parquet/<table>/account=<name>/part-<generation>-<i>.parquet``, and
    ``.../account=<name>/month=<YYYY-MM>/...`` for the tables that grow by the day."""
    return target.with_name(f"{target.stem}.parquet")


@dataclass(frozen=True)
class Published:
    """What one publish did: the parts it wrote again, those it kept, the files it deleted, and
    the tables whose file lists (their ``parts`` macros) it replaced in a copy of the previous
    views file (None: written whole, or not at all)."""

    target: Path
    rewritten: int
    unchanged: int
    deleted: int
    replaced: tuple[str, ...] | None = None
    # The tables whose rows were read to find what changed: all of them on a file; on a lake
    # those a snapshot wrote since the last publish (analyst_parts.lake_changes).
    fingerprinted: int = 0


class _Once:
    """Publish requests made inside ``publishing_once``, done when the outermost one ends.

    Process-wide, not per thread: a sync's accounts land in worker threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.depth = 0
        self.pending: dict[Path, tuple[Path, Path, float]] = {}

    def enter(self) -> None:
        with self.lock:
            self.depth += 1

    def defer(self, path: Path, target: Path, lock_timeout_s: float) -> bool:
        with self.lock:
            if self.depth == 0:
                return False
            self.pending[target] = (path, target, lock_timeout_s)
            return True

    def leave(self) -> list[tuple[Path, Path, float]]:
        with self.lock:
            self.depth -= 1
            if self.depth > 0:
                return []
            due, self.pending = list(self.pending.values()), {}
            return due


_ONCE = _Once()


def begin_publishing_once() -> None:
    _ONCE.enter()


def end_publishing_once(*, failed: bool = False) -> None:
    """Publishes what was requested since the outermost ``begin``. After a failure what was
    written is still published, but a publish failing then does not hide the first error."""
    for path, target, timeout in _ONCE.leave():
        if failed:
            with contextlib.suppress(WarehouseError):
                publish_now(path, target, timeout)
        else:
            publish_now(path, target, timeout)


@contextlib.contextmanager
def publishing_once() -> Iterator[None]:
    begin_publishing_once()
    try:
        yield
    except BaseException:
        end_publishing_once(failed=True)
        raise
    end_publishing_once()


def publish_analyst_copy(path: Path, target: Path, lock_timeout_s: float) -> Path:
    """Publishes now, or at the end of the enclosing ``publishing_once``."""
    if not _ONCE.defer(path, target, lock_timeout_s):
        publish_now(path, target, lock_timeout_s)
    return target


@dataclass
class _Attempt:
    """One publish's new files, deleted if it fails before the views file names them."""

    generation: int
    named: bool = False
    # Markers of publishes killed before their end, which left files no manifest names: this
    # one walks the whole folder, then removes them.
    crashed: tuple[Path, ...] = ()

    @property
    def after_crash(self) -> bool:
        return bool(self.crashed)

    def start(self, folder: Path) -> None:
        """Marks the publish as under way until ``done``: under the folder's exclusive lock, a
        marker found at the start is a killed publish's."""
        self.crashed = tuple(folder.glob(f"{_UNDER_WAY}*"))
        (folder / f"{_UNDER_WAY}{self.generation}").touch()

    def done(self, folder: Path, *, swept: bool = False) -> None:
        """``swept``: the whole folder was walked, so the killed publishes' files are gone."""
        for marker in [folder / f"{_UNDER_WAY}{self.generation}", *(self.crashed if swept else ())]:
            marker.unlink(missing_ok=True)

    def remove(self, folder: Path) -> None:
        if not self.named:
            for stale in folder.rglob(f"part-{self.generation}*.parquet"):
                with contextlib.suppress(OSError):
                    stale.unlink()
            parts.prune(folder)


def publish_now(path: Path, target: Path, lock_timeout_s: float) -> Published:
    if not warehouse_exists(path):
        raise WarehouseError(f"no warehouse at {path} to publish")
    folder = analyst_parquet_dir(target)
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    attempt: _Attempt | None = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with file_lock(folder, exclusive=True, timeout_s=lock_timeout_s):
            _sweep_partials(target, folder)
            old = parts.load_manifest(folder)
            # Never a name used before, even by a publish that crashed before its manifest.
            attempt = _Attempt(max(old.generation + 1, time.time_ns() // 1_000_000))
            attempt.start(folder)
            return _publish(path, target, folder, partial, lock_timeout_s, old, attempt)
    except BaseException as exc:
        # Whatever stopped it (a full disk, an interrupt) takes its own files with it at once:
        # left for the next publish, they would hold the very space that ran out.
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
        if attempt is not None and not attempt.named:
            attempt.remove(folder)  # its files gone: no leftover for the next one to find
            attempt.done(folder)
        if isinstance(exc, OSError):
            raise WarehouseError(_failure(target, partial, exc)) from None
        if isinstance(exc, duckdb.Error):
            if is_disk_full(exc):
                full = OSError(28, "No space left on device")
                raise DiskFull(_failure(target, folder, full)) from None
            raise WarehouseError(f"cannot publish the analyst copy {target}: {exc}") from None
        raise


def _publish(
    path: Path,
    target: Path,
    folder: Path,
    partial: Path,
    timeout: float,
    old: parts.Manifest,
    attempt: _Attempt,
) -> Published:
    new = parts.Manifest(generation=attempt.generation)
    written: list[str] = []
    with file_lock(path, exclusive=False, timeout_s=timeout), connect(path, True) as con:
        tables, views = parts.catalog(con)
        due: dict[str, dict[str, tuple[int, str]]] = {}
        rows = 0
        snapshot, changed = parts.lake_changes(con, old.lake_snapshot)
        new.lake_snapshot = snapshot
        kept = {
            t.name for t in tables
            if changed is not None and t.name not in changed and t.name in old.parts
            and old.shapes.get(t.name) == t.shape
        }  # fmt: skip
        found = parts.fingerprints(con, [t for t in tables if t.name not in kept])
        scanned = len(tables) - len(kept)
        for name in kept:  # no lake snapshot since the last publish wrote a row of these
            found[name] = {k: (p.rows, p.checksum) for k, p in old.parts[name].items()}
        for table in tables:
            now = found[table.name]
            rows += sum(n for n, _ in now.values())
            new.shapes[table.name] = table.shape
            same_shape = old.shapes.get(table.name) == table.shape
            before = old.parts.get(table.name, {}) if same_shape else {}
            due[table.name] = {
                k: v for k, v in now.items()
                if (b := before.get(k)) is None or (b.rows, b.checksum) != v
            }  # fmt: skip
            new.parts[table.name] = {k: before[k] for k in now if k not in due[table.name]}
        _check_room(_bytes_per_row(path, rows), target, old, due)
        for table in tables:
            files = parts.export(con, folder, table, due[table.name], new.generation)
            for key, names in files.items():
                written.extend(names)
                count, checksum = due[table.name][key]
                size = parts.file_bytes(folder, names)
                new.parts[table.name][key] = parts.Part(count, checksum, names, size)
    sql = statements(folder, new, tables, views)
    new.views = digest(sql)
    new.catalog = catalog_digest(folder, tables, views)
    rewritten = sum(len(d) for d in due.values())
    unchanged = sum(len(p) for p in new.parts.values()) - rewritten
    if not rewritten and new.views == old.views and target.exists() and not attempt.after_crash:
        attempt.done(folder)
        # Nothing to write: the copy is current. The manifest still moves to the lake snapshot
        # read now, so the next publish asks only of the snapshots after it.
        if new.lake_snapshot != old.lake_snapshot and old.views_file:
            parts.save_manifest(folder, dataclasses.replace(old, lake_snapshot=new.lake_snapshot))
        return Published(target, 0, unchanged, 0, fingerprinted=scanned)
    for name in written:
        parts.fsync_path(folder / name)
    replaced: tuple[str, ...] | None = None
    if old.catalog == new.catalog and old.views_file == parts.file_identity(target) != "":
        # The previous views file is the one the old manifest describes, for this catalog.
        patch, replaced = changed_views(folder, old, new, tables)
        write_views(partial, patch, previous=target)
    else:
        write_new_views(partial, sql, folder, new, tables, views)
    parts.fsync_path(partial)
    failpoint("publish")
    os.replace(partial, target)
    attempt.named = True  # the copy names them now: no later failure removes them
    parts.fsync_path(target.parent)  # the rename itself
    new.views_file = parts.file_identity(target)
    new.retired = frozenset(old.files() - new.files())
    parts.save_manifest(folder, new)
    keep = new.files() | old.files()
    walk = old.retired is None or attempt.after_crash  # leftovers no manifest names
    if walk:
        deleted = parts.sweep(folder, keep)
    else:
        deleted = parts.sweep_retired(folder, old.retired or (), keep)
    attempt.done(folder, swept=walk)
    return Published(target, rewritten, unchanged, deleted, replaced, scanned)


def _check_room(
    per_row: float, target: Path, old: parts.Manifest, due: dict[str, dict[str, tuple[int, str]]]
) -> None:
    """Refuse before writing a byte when the changed parts cannot fit beside the old ones: found
    out by writing instead, it is a disk filled to the last byte under everyone else on it.

    A part is estimated from its previous file (scaled by its rows), a new one from the
    warehouse's bytes per row: Parquet is smaller than both, so the estimate errs high."""
    needed = VIEWS_FILE_BYTES
    for table, keys in due.items():
        for key, (rows, _) in keys.items():
            previous = old.parts.get(table, {}).get(key)
            if previous is not None and previous.rows > 0:
                needed += previous.bytes * rows // previous.rows
            else:
                needed += int(per_row * rows)
    free = free_bytes(target.parent)
    if free is not None and free < needed:
        raise DiskFull(
            f"cannot publish the analyst copy {target}: it needs {size_text(needed)} free "
            f"and {target.parent} has {size_text(free)} free; the warehouse itself is written, "
            "and the previous analyst copy stays until there is room"
        )


def _failure(target: Path, partial: Path, exc: OSError) -> str:
    """One line naming the file: an OSError raised on a descriptor (a write that found the disk
    full) names none, and ``[Errno 28] No space left on device`` alone says not where."""
    where = exc.filename if exc.filename is not None else partial
    reason = exc.strerror or str(exc) or type(exc).__name__
    code = f" [Errno {exc.errno}]" if exc.errno is not None else ""
    line = f"cannot publish the analyst copy {target}: {reason}{code} at {where}"
    return line.replace("\r", "\\r").replace("\n", "\\n")  # one line whatever a path holds


def _sweep_partials(target: Path, folder: Path) -> None:
    """Removes partial views files and manifests left by a crash, never a live publisher's."""
    found = [*target.parent.glob(f".{target.name}.*.partial"), *folder.glob(".*.partial")]
    for stale in found:
        pid = stale.name.rsplit(".", 2)[-2]
        if not pid.isdigit() or not process_alive(int(pid)):
            stale.unlink(missing_ok=True)
