"""``--on-table-change retokenize``: which committed shards a table change makes wrong, and which of the table's
files a run must read again to rebuild them, so that the output keeps every current row once.

A shard holds the rows of the input files its task read (the manifest keeps them per shard). When a commit removed
the rows of a tokenized file ``r`` (a delete or an update rewrote it), every shard holding ``r``'s rows is dropped;
the other files those shards held are read again (when the table still has them), and so is every file whose rows
stand for theirs: a compaction's output covers the tokenized files it was made from, so reading it again means the
shards of all those files go too. This repeats until nothing new is affected; then the dropped shards' rows are
exactly the rows of the files read again (plus those the table removed).

Example: shards ``s1`` (files ``a``, ``b``) and ``s2`` (``c``); a delete rewrites ``a`` into ``a2``: ``s1`` is
dropped, ``b`` read again (``a2`` is a new file anyway), ``s2`` kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from pipelines.read.table_changes import sources_of
from pipelines.tokenize.commit import Replaced
from tokenizer.errors import InputError


@dataclass(frozen=True)
class Retokenize:
    """``replaced``: the shards to drop and the recorded inputs whose rows they held; ``reread``: the paths of the
    table's current files to tokenize again."""

    replaced: Replaced
    reread: list[str]


def plan_retokenize(runs: Sequence[Mapping], removed: Iterable[str], covers: Mapping[str, Sequence[str]],
                    present: Sequence[str]) -> Retokenize:
    """The :class:`Retokenize` for the manifest's ``runs`` when the table removed the rows of ``removed``
    (tokenized or covered paths); ``covers``: every covered file -> its sources; ``present``: the current
    version's files, in order. An output whose shards do not name their inputs is refused."""
    affected = set().union(*(sources_of(path, covers) for path in removed))
    shards = [shard for run in runs for shard in run["shards"]]
    while True:
        dropped = [shard for shard in shards if affected & set(shard.get("inputs", ()))]
        unnamed = [shard["stem"] for shard in shards if "inputs" not in shard]
        if unnamed:
            raise InputError(f"--on-table-change retokenize: shards {', '.join(unnamed[:3])} do not record which "
                             "input files they hold (written by an earlier shardpiece or from Spark's reader): "
                             "rerun with --mode overwrite")
        held = set().union(*(shard["inputs"] for shard in dropped)) if dropped else set()
        reread = [path for path in present if sources_of(path, covers) & (held | affected)]
        grown = affected | held | set().union(*(sources_of(path, covers) for path in reread))
        if grown == affected:
            return Retokenize(Replaced(frozenset(shard["stem"] for shard in dropped),
                                       frozenset(affected | set(reread))), reread)
        affected = grown
