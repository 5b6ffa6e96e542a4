"""What changed in a table between the version an output was tokenized from and the version read now: the files an
incremental run must tokenize, the files whose rows are already in the output under other files (a compaction),
and the commits that removed or rewrote rows already tokenized (which an incremental run cannot follow).

A commit changes data or it does not: Delta marks each added and removed file with ``dataChange`` (false for
OPTIMIZE, a compaction), Iceberg names each snapshot's operation (``replace`` for a compaction; ``append``,
``overwrite`` and ``delete`` change data). A file a compaction wrote holds rows of the files it removed: when those
were all tokenized, the new file is *covered* (recorded, never tokenized again); when some were not, its rows
cannot be told apart and the change is refused like a delete.

Example: tokenized at version 1 with files ``a``, ``b``; version 2 appends ``c``; version 3 compacts ``a`` and
``b`` into ``d``: :func:`table_changes` gives ``new = [c]``, ``covered = [d]``, ``rewrites = []``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence
from urllib.parse import unquote

from pipelines.read.tables import TableSnapshot, local_path
from tokenizer.errors import InputError


@dataclass
class TableChanges:
    """``new``: paths of the snapshot's files whose rows are not in the output; ``covered``: paths of files whose
    rows are (compaction outputs); ``rewrites``: ``(version, path)`` of every tokenized or covered file a commit
    removed with its rows (a delete, an update, an overwrite), in commit order; ``covers``: each covered file ->
    the tokenized files whose rows it holds."""

    new: list[str] = field(default_factory=list)
    covered: list[str] = field(default_factory=list)
    rewrites: list[tuple[int, str]] = field(default_factory=list)
    covers: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class _Commit:
    """One commit between the two versions: its version, and ``(path, data_change)`` of its added and removed
    files."""

    version: int
    added: tuple[tuple[str, bool], ...]
    removed: tuple[tuple[str, bool], ...]


def table_changes(snapshot: TableSnapshot, tokenized: Iterable[str], since: int,
                  catalog: Mapping[str, Any] | None = None, covers: Mapping[str, Sequence[str]] | None = None
                  ) -> TableChanges:
    """The :class:`TableChanges` from version ``since`` (Delta version, Iceberg snapshot id) to ``snapshot``, for
    an output holding the rows of the files ``tokenized`` (paths as :class:`~pipelines.read.tables.TableFile`
    gives them; a covered file among them holds the rows of the files ``covers`` names)."""
    done = set(tokenized)
    lineage = {path: set(sources) for path, sources in (covers or {}).items()}
    present = [f.path for f in snapshot.files]
    if since == snapshot.version:
        return TableChanges(new=[p for p in present if p not in done])
    commits = _delta_commits(snapshot, since) if snapshot.kind == "delta" else \
        _iceberg_commits(snapshot, since, catalog or {})
    covered: set[str] = set()

    def held(path: str) -> bool:  # its rows are in the output
        return path in done or path in covered

    rewrites: list[tuple[int, str]] = []
    for commit in commits:
        rewrites += [(commit.version, path) for path, changes in commit.removed if changes and held(path)]
        compacted = [path for path, changes in commit.removed if not changes]
        outputs = [path for path, changes in commit.added if not changes]
        if outputs and compacted:
            if all(held(path) for path in compacted):
                sources = set().union(*(sources_of(path, lineage) for path in compacted))
                covered.update(outputs)
                lineage.update((path, set(sources)) for path in outputs)
            else:  # tokenized rows and new ones in one file: the tokenized ones count as removed
                rewrites += [(commit.version, path) for path in compacted if held(path)]
        covered.difference_update(path for path, _ in commit.removed)
    kept = [p for p in present if p in covered and p not in done]
    return TableChanges(new=[p for p in present if not held(p)], covered=kept, rewrites=rewrites,
                        covers={p: sorted(lineage[p]) for p in kept})


def sources_of(path: str, covers: Mapping[str, Sequence[str]]) -> set[str]:
    """``path`` and the tokenized files whose rows it holds (its ``covers`` entry, for a compaction's file):
    ``sources_of("c", {"c": ["a", "b"]}) == {"a", "b", "c"}``."""
    return {path, *covers.get(path, ())}


def refuse_rewrites(changes: TableChanges, snapshot: TableSnapshot, since: int) -> None:
    """Raise :class:`InputError` naming the commits and files when ``changes`` removed tokenized rows (without
    ``--on-table-change retokenize``)."""
    if not changes.rewrites:
        return
    shown = "; ".join(f"version {v}: {os.path.basename(p)}" for v, p in changes.rewrites[:4])
    more = f" and {len(changes.rewrites) - 4} more" if len(changes.rewrites) > 4 else ""
    raise InputError(f"table {snapshot.table} changed rows already tokenized between version {since} and "
                     f"{snapshot.version} (files removed with their rows: {shown}{more}): the output would keep "
                     "rows the table no longer has; pass --on-table-change retokenize to tokenize the shards that "
                     "hold them again, or --mode overwrite to tokenize the current version whole")


# ----------------------------------------------------------------------------------------------------- Delta Lake
def _delta_commits(snapshot: TableSnapshot, since: int) -> list[_Commit]:
    """The commits ``since + 1 .. snapshot.version`` from the table's ``_delta_log/`` JSON files."""
    from pipelines.read.arrow_read import arrow_filesystem

    if snapshot.version < since:
        raise InputError(f"Delta table {snapshot.table} is at version {snapshot.version}, before the version {since} "
                         f"the output was tokenized from: give --table-version {since} or later, or --mode overwrite")
    root = local_path(snapshot.table).rstrip("/")
    filesystem, inner = arrow_filesystem(root)
    commits = []
    for version in range(since + 1, snapshot.version + 1):
        name = f"{inner}/_delta_log/{version:020d}.json"
        try:
            with filesystem.open_input_stream(name) as handle:
                lines = handle.read().decode("utf-8").splitlines()
        except (OSError, FileNotFoundError):
            raise InputError(f"Delta table {snapshot.table}: the log no longer holds version {version} (cleaned up), "
                             f"so the changes since version {since} are unknown: rerun with --mode overwrite") \
                from None
        added, removed = [], []
        for line in lines:
            action = json.loads(line) if line.strip() else {}
            for kind, into in (("add", added), ("remove", removed)):
                if kind in action:
                    path = os.path.join(root, unquote(action[kind]["path"]))
                    into.append((path, bool(action[kind].get("dataChange", True))))
        commits.append(_Commit(version, tuple(added), tuple(removed)))
    return commits


# --------------------------------------------------------------------------------------------------- Apache Iceberg
def _iceberg_commits(snapshot: TableSnapshot, since: int, catalog: Mapping[str, Any]) -> list[_Commit]:
    """The snapshots after ``since`` up to ``snapshot`` (its ancestors), each as the files it added and removed;
    a ``replace`` snapshot changes no data. The table is loaded from the catalog once for all of them."""
    from pipelines.read.tables import load_iceberg_table, loaded_iceberg_snapshot

    table = load_iceberg_table(snapshot.table, catalog)
    chain, current = [], table.snapshot_by_id(snapshot.version)
    while current is not None and current.snapshot_id != since:
        chain.append(current)
        current = table.snapshot_by_id(current.parent_snapshot_id) if current.parent_snapshot_id else None
    if current is None:
        raise InputError(f"Iceberg table {snapshot.table}: snapshot {since}, which the output was tokenized from, "
                         f"is not an ancestor of snapshot {snapshot.version}: rerun with --mode overwrite")
    before = {f.path for f in loaded_iceberg_snapshot(table, snapshot.table, since).files}
    commits = []
    for step in reversed(chain):
        after = {f.path for f in loaded_iceberg_snapshot(table, snapshot.table, step.snapshot_id).files}
        operation = getattr(step.summary.operation, "value", str(step.summary.operation)) if step.summary else ""
        changes = operation != "replace"
        commits.append(_Commit(step.snapshot_id, tuple((p, changes) for p in sorted(after - before)),
                               tuple((p, changes) for p in sorted(before - after))))
        before = after
    return commits
