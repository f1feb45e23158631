"""The data dictionary, docs/data-dictionary.md, generated from the same descriptions as the
COMMENTs.

Every table, view and column is described once, in its declaration (``*_tables.py``), which
gives its DDL, its COMMENT and this page; so the page cannot drift from the schema analysts query
(tests/pipeline/test_schema.py compares them).

    python -m pipelines.warehouse.dictionary                                  # prints the page
    python -m pipelines.warehouse.dictionary --write docs/data-dictionary.md  # writes it
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from pipelines.warehouse.schema import all_tables

PAGE = Path("docs/data-dictionary.md")
COMMAND = f"python -m pipelines.warehouse.dictionary --write {PAGE}"


def data_dictionary() -> str:
    """Each table and view: its description, then its columns with type and meaning."""
    out = []
    for table in all_tables():
        out.append(f"### `{table.name}` ({table.kind})\n\n{table.doc}\n")
        out.append("| column | type | meaning |\n|---|---|---|")
        for c in table.columns:
            out.append(f"| `{c.name}` | {c.type}{' NOT NULL' if c.not_null else ''} | {c.doc} |")
        out.append("")
    return "\n".join(out)


def page() -> str:
    """The whole page: what it is, an index of every relation, then ``data_dictionary()``."""
    index = [
        f"| [`{t.name}`](#{t.name}-{t.kind}) | {t.kind} |"
        for t in sorted(all_tables(), key=lambda t: t.name)
    ]
    return "\n".join(
        [
            "# Data dictionary",
            "",
            f"<!-- Generated from the schema's declarations: do not edit; run `{COMMAND}`. -->",
            "",
            "Every table, view and column of the warehouse, and of the analyst copy, which has "
            "the same names, columns, types and comments ([analysts.md](analysts.md)). The text "
            "is each one's `COMMENT` in DuckDB (`SELECT * FROM duckdb_columns()`), declared once "
            "in `pipelines/warehouse/*_tables.py`; this page is generated from the same "
            f"declarations (`{COMMAND}`), and a test fails when it differs from them. The schema "
            "is versioned (`schema_version`); names are a public interface.",
            "",
            "| relation | kind |",
            "|---|---|",
            *index,
            "",
            "## Tables and views, in the order migrations create them",
            "",
            data_dictionary(),
        ]
    )


def main(argv: Sequence[str]) -> int:
    if len(argv) == 2 and argv[0] == "--write":
        Path(argv[1]).write_text(page(), encoding="utf-8")
    elif not argv:
        print(page(), end="")
    else:
        print(f"usage: {COMMAND}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
