"""README's data dictionary, generated from the same descriptions as the COMMENTs.

`python -m pipelines.warehouse.dictionary` prints it; `--write README.md` replaces the part of
README between the data-dictionary markers, so the README cannot drift from the COMMENTs.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pipelines.warehouse.schema import all_tables

START = "<!-- data-dictionary:start -->"
END = "<!-- data-dictionary:end -->"


def data_dictionary() -> str:
    out = []
    for table in all_tables():
        out.append(f"### `{table.name}` ({table.kind})\n\n{table.doc}\n")
        out.append("| column | type | meaning |\n|---|---|---|")
        for c in table.columns:
            out.append(f"| `{c.name}` | {c.type}{' NOT NULL' if c.not_null else ''} | {c.doc} |")
        out.append("")
    return "\n".join(out)


def write(readme: Path) -> None:
    text = readme.read_text()
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    readme.write_text(f"{head}{START}\n{data_dictionary()}\n{END}{tail}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--write":
        write(Path(sys.argv[2]))
    else:
        print(data_dictionary())
