"""README is the front door and the docs are where the reference lives: both are held here.

README stays short enough to read in five minutes (the two Quick start commands, the five jobs
each with its page, every command, the exit codes, where to read on); every relative link of
README.md and docs/*.md reaches a file, and every ``#anchor`` a heading, as GitHub renders them.
The generated pages are held equal to the code beside their generators' tests
(tests/pipeline/test_settings.py, test_schema.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import typer

from pipelines.cli.main import app

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))
MAX_README_LINES = 300
QUICK_START = (
    "pip install -c requirements.lock -e . && creditlens demo\n"
    'pip install -c requirements.lock -e ".[test]" && pytest\n'
)
JOBS = ("1. Sync", "2. Reconcile", "3. Report", "4. Audit", "5. Alert and close")
FENCE = re.compile(r"^(```|~~~)")
LINK = re.compile(r"\[(?:[^\]\\]|\\.)*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
INLINE_CODE = re.compile(r"`[^`\n]*`")


def prose(text: str) -> Iterator[str]:
    """The lines of ``text`` outside fenced code blocks, where Markdown is rendered."""
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        if not fenced:
            yield line


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text lower-cased, links and code marks dropped, every
    character but letters, digits, ``_``, ``-`` and spaces removed, spaces made dashes."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text.replace("`", ""))
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading's anchor in ``text``; a repeated one is numbered, as GitHub does."""
    found: set[str] = set()
    for line in prose(text):
        if heading := re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line):
            base = slug(heading.group(1))
            name, n = base, 0
            while name in found:
                n += 1
                name = f"{base}-{n}"
            found.add(name)
    return found


def broken_links(page: Path, text: str) -> list[str]:
    """The relative links of ``text`` (the content of ``page``) that reach no file or heading."""
    broken = []
    for line in prose(text):
        for target in LINK.findall(INLINE_CODE.sub("", line)):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, ...
                continue
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists():
                broken.append(f"{target}: no such file")
            elif anchor and file.suffix == ".md" and anchor not in anchors(file.read_text()):
                broken.append(f"{target}: no heading #{anchor} in {file.name}")
    return broken


def section(text: str, heading: str) -> str:
    """The part of ``text`` under ``heading``, up to the next heading of its level or above."""
    level = heading.split(" ", 1)[0]
    body = text.split(f"\n{heading}\n", 1)[1]
    return re.split(rf"\n#{{1,{len(level)}}} ", body, maxsplit=1)[0]


def commands() -> list[str]:
    """Every `creditlens` command and subcommand, as the CLI declares them."""

    def walk(command: object, prefix: tuple[str, ...]) -> Iterator[str]:
        subcommands = getattr(command, "commands", None)
        if not subcommands:
            yield " ".join(prefix)
            return
        for name, sub in subcommands.items():
            yield from walk(sub, (*prefix, name))

    return list(walk(typer.main.get_command(app), ("creditlens",)))


def test_readme_is_a_front_door() -> None:
    text = README.read_text(encoding="utf-8")
    lines = len(text.splitlines())
    assert lines <= MAX_README_LINES, f"README.md is {lines} lines: move the reference to docs/"
    quick = section(text, "## Quick start")
    assert re.findall(r"```bash\n(.*?)```", quick, flags=re.S)[0] == QUICK_START
    jobs = section(text, "## What it does")
    assert re.findall(r"^### (.+)$", jobs, flags=re.M) == list(JOBS)
    for job in JOBS:
        assert "](docs/" in section(jobs, f"### {job}"), f"{job}: no link to its page"


def test_readme_lists_every_command_and_the_exit_codes() -> None:
    text = README.read_text(encoding="utf-8")
    table = section(text, "## Commands")
    rows = [line for line in table.splitlines() if line.startswith("| `creditlens ")]
    for command in commands():
        assert any(re.match(rf"\| `{command}( |`)", row) for row in rows), command
    codes = section(text, "### Exit codes")
    assert re.findall(r"^\| (\d) \|", codes, flags=re.M) == ["0", "1", "2", "3"]


def test_readme_says_where_every_docs_page_is() -> None:
    read_on = section(README.read_text(encoding="utf-8"), "## Where to read on")
    missing = [p.name for p in PAGES if f"](docs/{p.name})" not in read_on]
    assert not missing, f"README's Where to read on does not name: {missing}"


def test_every_link_of_readme_and_docs_reaches_its_file_and_heading() -> None:
    broken = {
        str(page.relative_to(ROOT)): found
        for page in [README, *PAGES]
        if (found := broken_links(page, page.read_text(encoding="utf-8")))
    }
    assert not broken, broken


def test_a_broken_link_or_anchor_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Other\n\n## The `sync` command: step 1\n")
    text = (
        "# Page\n\n[ok](other.md#the-sync-command-step-1) [self](#page) [web](https://x.test)\n"
        "[gone](missing.md) [bad](other.md#nowhere) `[code](missing.md)`\n"
        "```\n[fenced](missing.md)\n```\n"
    )
    page.write_text(text)
    assert broken_links(page, text) == [
        "missing.md: no such file",
        "other.md#nowhere: no heading #nowhere in other.md",
    ]
    assert anchors("# A\n## A\n```\n# not a heading\n```\n") == {"a", "a-1"}
