"""README's data dictionary, regenerated from the schema.

`python -m pipelines.warehouse.dictionary` prints it; `--write README.md` replaces the part of
README between the data-dictionary markers, so the README cannot drift from the COMMENTs.
"""

import sys
from pathlib import Path

from pipelines.warehouse.schema import data_dictionary

START = "<!-- data-dictionary:start -->"
END = "<!-- data-dictionary:end -->"


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
