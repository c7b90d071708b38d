"""Decoding of the 64-bit name hashes the job aggregates on (classify.py) back into text.

The small tables (batch_totals, batches, dead_letters) name nearly everything; a hash they do not know
(e.g. an unexpected ledger row of an unknown batch) is looked up in the large tables, filtered on just
those hashes. Two names sharing a hash would merge groups: a collision seen while decoding fails the run
(odds for 64 bits and a million names: about 3e-8).
"""

from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from reconciliation.classify import hashed

_SMALL = {
    "batch_totals": ("correlation_id", "tenant_id", "currency"),
    "batches": ("correlation_id", "tenant_id"),
    "dead_letters": ("correlation_id", "tenant_id", "currency", "reason"),
}
_LARGE = {
    "outbox": ("correlation_id", "tenant_id", "currency"),
    "ledger": ("correlation_id", "tenant_id", "currency"),
    "processed_messages": ("correlation_id", "tenant_id", "currency"),  # a direct publish's currency
    "core_journal": ("tenant_id", "currency"),  # three-way runs only
}


class NameCollisionError(RuntimeError):
    """Two different names hash alike: the job cannot tell their groups apart."""


def _pairs(tables: dict[str, DataFrame], sources: dict[str, tuple[str, ...]]) -> DataFrame:
    """(h, name) for every name column, one scan per table (each task costs, even on tiny files)."""
    frames = [
        tables[name]
        .select(F.explode(F.array(*[F.struct(hashed(c).alias("h"), F.col(c).alias("name")) for c in cols])))
        .select("col.h", "col.name")
        for name, cols in sources.items()
        if name in tables
    ]
    return reduce(DataFrame.unionByName, frames).where(F.col("name").isNotNull())


def _collect(pairs: DataFrame) -> dict[int, str]:
    names: dict[int, str] = {}
    for row in pairs.distinct().collect():
        if names.setdefault(row["h"], row["name"]) != row["name"]:
            raise NameCollisionError(f"{names[row['h']]!r} and {row['name']!r} share hash {row['h']}")
    return names


def resolve_names(tables: dict[str, DataFrame], wanted: set[int]) -> dict[int, str]:
    """Text for every hash in `wanted`."""
    names = _collect(_pairs(tables, _SMALL))
    unknown = wanted - names.keys()
    if unknown:
        found = _collect(_pairs(tables, _LARGE).where(F.col("h").isin(sorted(unknown))))
        for h, name in found.items():
            if names.setdefault(h, name) != name:
                raise NameCollisionError(f"{names[h]!r} and {name!r} share hash {h}")
    return names
