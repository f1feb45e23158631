"""The identity of a ledger entry, which the API does not give.

Rule: ``fingerprint`` is the BLAKE2b-128 hex digest of the canonical text of every field of the
entry (account; createdAt as UTC epoch microseconds; type; amount and balanceAfter as
DECIMAL(18,6) text; description; hasDescription; channel; agentId; campaignId; unknown extra fields
excluded so that a field the platform adds later does not change identities). ``occurrence``
numbers the entries of one account and UTC day that share a fingerprint, 1..n: two genuinely
identical entries are both kept, as ``...-1`` and ``...-2``. ``entry_id`` = fingerprint-occurrence.

Both halves of the rule live here. The fingerprint is computed batch by batch; the occurrence is
numbered where whole days exist, in the landing transaction, by the SQL ``identified_sql`` builds
(pipelines/warehouse/landing.py runs it over the staged files). Because a sync always replaces
whole UTC days, the same day read twice (a rerun, overlapping backfills) yields the same ids, and
the occurrence count is exact within the day.

The quarantine's identity is the same rule over what a rejected entry still has: the text it was
received as. ``fingerprint`` is the first 128 bits of SHA-256 over the account and ``raw_json``;
``occurrence`` numbers the account's rows sharing it; ``quarantine_id`` = fingerprint-occurrence.
The raw text names its own createdAt, so a fingerprint stands for one entry wherever a window
placed it: a landing replaces every row of a fingerprint it brings, whatever day an earlier sync
filed it under, and overlapping syncs never double a rejected entry.
"""

from __future__ import annotations

import hashlib
from functools import partial
from operator import methodcaller

import polars as pl

NULL = "\u2400"  # SYMBOL FOR NULL: cannot be confused with an empty string
SEP = "\u241f"  # SYMBOL FOR UNIT SEPARATOR

# The rule itself, spelled here rather than derived from the entry's declared fields: entry_id is
# a public key, so a field added to the API must not change every identity silently. A test holds
# this list to the declared fields, so such a change is a decision, made here.
CANONICAL_FIELDS = (
    "account",
    "created_at",
    "entry_type",
    "amount",
    "description",
    "has_description",
    "channel",
    "agent_id",
    "campaign_id",
    "balance_after",
)


def canonical_text() -> pl.Expr:
    parts = []
    for name in CANONICAL_FIELDS:
        col = pl.col(name)
        if name == "created_at":
            col = col.dt.epoch("us")
        parts.append(col.cast(pl.String).fill_null(NULL))
    return pl.concat_str(parts, separator=SEP)


_BLAKE2B_128 = partial(hashlib.blake2b, digest_size=16)
_HEX = methodcaller("hexdigest")


def with_fingerprint(entries: pl.DataFrame) -> pl.DataFrame:
    """Adds ``entry_day`` (UTC date) and ``fingerprint`` to entries that carry ``account``.

    Every entry of a backfill passes here, so the digests are taken over the canonical text's
    UTF-8 bytes as polars hands them over, through ``map`` rather than a Python loop: a third
    less time than a loop encoding and hashing each text.
    """
    texts = entries.select(canonical_text().cast(pl.Binary)).to_series().to_list()
    return entries.with_columns(
        pl.col("created_at").dt.date().alias("entry_day"),
        pl.Series("fingerprint", list(map(_HEX, map(_BLAKE2B_128, texts))), dtype=pl.String),
    )


def identified_sql(source_sql: str) -> str:
    """The occurrence half of the rule: SQL numbering fingerprinted entries and naming them.

    ``source_sql`` is any relation of fingerprinted entries (the landing passes its staged
    Parquet files). Entries of one account and UTC day that share a fingerprint are numbered
    1..n; they are identical, so the order only makes the numbering deterministic. It runs in
    DuckDB because it needs whole days, and a sync stages whole days only as a set of files.
    """
    return (
        "SELECT *, fingerprint || '-' || occurrence AS entry_id FROM ("
        "SELECT *, CAST(row_number() OVER (PARTITION BY account, entry_day, fingerprint "
        "ORDER BY window_start, page_number, page_position) AS INTEGER) AS occurrence "
        f"FROM {source_sql})"
    )


# SHA-256, not BLAKE2b: the quarantine's fingerprint is taken in DuckDB, which has no BLAKE2b, so
# that the landing and the migration filling rows of older warehouses run the same SQL.
QUARANTINE_FINGERPRINT_SQL = f"left(sha256(account || '{SEP}' || raw_json), 32)"


def quarantine_identified_sql(source_sql: str) -> str:
    """SQL naming quarantined rows: ``fingerprint``, ``occurrence`` and ``quarantine_id``.

    ``source_sql`` is any relation of quarantine rows without those three columns. Rows of one
    account with one fingerprint are the same received text, so they are numbered across days:
    an entry a window put on its first day, because its createdAt could not place it, keeps one
    identity whichever window read it.
    """
    return (
        "SELECT *, fingerprint || '-' || occurrence AS quarantine_id FROM ("
        "SELECT *, CAST(row_number() OVER (PARTITION BY account, fingerprint "
        "ORDER BY window_start, page_number, page_position) AS INTEGER) AS occurrence FROM ("
        f"SELECT *, {QUARANTINE_FINGERPRINT_SQL} AS fingerprint FROM {source_sql}))"
    )
