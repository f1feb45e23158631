"""The site's CSV files: one writer, one rule, and a real spreadsheet opens them as written.

The writer's rule in small cases first; then every CSV of a site built from a real sync of the
simulator (whose campaigns include one named ``=HYPERLINK("http://x")``) is opened by LibreOffice
Calc, headless, and compared cell by cell with what was written: numbers are numbers equal to
the exact Decimals (the engine's stored value, rounded to 6 places, equals the written value:
tolerance 0), text is the same text, dates are the same dates, and no cell is a formula.
"""

from __future__ import annotations

import csv
import os
import re
import shutil
from collections.abc import Callable
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from dashboards.csv_files import Name, cell_text, csv_text, spreadsheet_text
from dashboards.display_text import NAME_LIMIT, display_text
from pipelines.cli.report_command import run_report
from pipelines.config.settings import Settings
from tests.conftest import Simulated
from tests.dashboards.spreadsheets import (
    SheetCell,
    open_in_spreadsheet,
    read_csv,
    soffice_available,
)
from tests.dashboards.test_report_finance import synced_company

Start = Callable[..., Simulated]
Env = Callable[..., Settings]
HYPERLINK = '=HYPERLINK("http://x")'
NUMBER = re.compile(r"^-?\d+(\.\d+)?$")
DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
MICRO = Decimal("0.000001")


@pytest.mark.parametrize(
    "text",
    [
        "=1+1",
        "+1",
        "-5",
        "@SUM(A1)",
        "\t=1",
        "\r=1",
        "\uff1d1+1",  # full-width equals
        "\uff0b1",  # full-width plus
        "\uff0d1",  # full-width hyphen-minus
        "\uff20SUM(A1)",  # full-width commercial at
        "\u22125",  # minus sign
        "\u20135",  # en dash
        "\ufe62 1",  # small plus
        "  =1+1",  # spaces do not make it safe
        "\u200b=1+1",  # nor does a zero-width space
        HYPERLINK,
    ],
)
def test_text_a_spreadsheet_would_run_is_quoted(text: str) -> None:
    assert spreadsheet_text(text) == f"'{text}"
    written = cell_text(text)
    # A leading tab or carriage return is shown as its escape (the display rule), which no
    # spreadsheet runs; everything else is quoted.
    assert written.startswith("'") or written.startswith(("\\t", "\\r")), written


@pytest.mark.parametrize(
    "text", ["Winter renewals", "agt_7f3a", "cmp/../x", "(no campaign)", "— none", "日本", "a=b"]
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert spreadsheet_text(text) == text


def test_values_are_written_by_their_type() -> None:
    # Money is a number, negative or not: never quoted, never prefixed.
    assert cell_text(Decimal("-12.500000")) == "-12.500000"
    assert cell_text(Decimal("-0.000000")) == "0.000000"
    assert cell_text(Decimal("1E+3")) == "1000"
    assert cell_text(-3) == "-3"
    assert cell_text(True) == "true" and cell_text(None) == ""
    assert cell_text(date(2026, 3, 1)) == "2026-03-01"
    moment = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)
    assert cell_text(moment) == "2026-03-01T12:00:00.123456Z"
    # Text: controls visible; a 100 KB id whole, the exact value a page cuts for display.
    assert cell_text("agt_\u202elave") == "agt_\\u202elave"
    assert cell_text(Name("c" * 100_000)) == "c" * 100_000
    assert len(display_text("c" * 100_000)) <= NAME_LIMIT  # what a table cell shows instead


def test_a_file_is_utf8_with_a_bom_and_crlf() -> None:
    text = csv_text(["name", "amount"], [['café, "日本"', Decimal("-1.5")], ["=x", None]])
    assert text.startswith("\ufeffname,amount\r\n")
    assert text.endswith("\r\n") and "\n" not in text.replace("\r\n", "")
    rows = list(csv.reader(text.removeprefix("\ufeff").splitlines()))
    assert rows == [["name", "amount"], ['café, "日本"', "-1.5"], ["'=x", ""]]


def _assert_opened_as_written(written: list[list[str]], sheet: list[list[SheetCell]]) -> int:
    """Each written cell as the spreadsheet holds it; returns how many guarded cells it saw."""
    assert len(sheet) == len(written)
    guarded = 0
    for row, cells in zip(written, sheet, strict=True):
        cells = cells + [SheetCell(None, None, "", None)] * (len(row) - len(cells))
        for text, cell in zip(row, cells, strict=True):
            assert cell.formula is None, (text, cell)  # nothing runs
            if text == "":
                assert cell.kind is None, cell
            elif NUMBER.match(text):
                assert cell.kind == "float", (text, cell)
                assert cell.value is not None
                assert Decimal(cell.value).quantize(MICRO) == Decimal(text).quantize(MICRO), (
                    text,
                    cell,
                )
            elif DAY.match(text):
                assert (cell.kind, cell.value) == ("date", text), (text, cell)
            elif text in ("true", "false"):  # a flag: the spreadsheet's own TRUE or FALSE
                assert (cell.kind, cell.text) == ("boolean", text.upper()), (text, cell)
            else:
                assert (cell.kind, cell.text) == ("string", text), (text, cell)
                guarded += text.startswith("'")
    return guarded


@pytest.fixture
def spreadsheet_engine() -> None:
    """LibreOffice Calc, or a skip saying what to install (a failure under
    CREDITLENS_REQUIRE_SPREADSHEET=1, as in CI)."""
    if soffice_available():
        return
    reason = "LibreOffice Calc (soffice) is not installed: apt-get install libreoffice-calc-nogui"
    if os.environ.get("CREDITLENS_REQUIRE_SPREADSHEET") == "1":
        pytest.fail(f"CREDITLENS_REQUIRE_SPREADSHEET=1 but {reason}")
    pytest.skip(reason)


@pytest.mark.slow
@pytest.mark.usefixtures("spreadsheet_engine")
def test_every_csv_opens_in_a_spreadsheet_as_written(
    simulated: Start, creditlens_env: Env, tmp_path: Path
) -> None:
    _, settings = synced_company(simulated, creditlens_env)
    site = run_report(settings, None, None, None)
    work = tmp_path / "sheets"
    work.mkdir()
    files = []
    for download in site.downloads:  # unique names for one conversion run
        name = download.relative_to(site.out_dir).as_posix().replace("/", "__")
        files.append(Path(shutil.copyfile(download, work / name)))
    # The control: text written without the rule is run as a formula by the same engine.
    control = work / "control.csv"
    control.write_text("\ufeffa,b\r\n=1+1,x\r\n", encoding="utf-8", newline="")
    sheets = open_in_spreadsheet([*files, control], work)
    assert sheets[control][1][0].formula is not None, "the engine runs an unguarded formula"
    guarded = 0
    kinds = {"float": 0, "date": 0, "string": 0, "boolean": 0}
    for file in files:
        written = read_csv(file)
        guarded += _assert_opened_as_written(written, sheets[file])
        for row in sheets[file]:
            for cell in row:
                if cell.kind in kinds:
                    kinds[cell.kind] += 1
    assert guarded >= 3, "the formula-named campaign is in several files, each time as text"
    assert all(kinds.values()), kinds
    campaigns = next(f for f in files if f.name.endswith("__campaigns__campaigns.csv"))
    names = {row[0].text for row in sheets[campaigns][1:]}
    assert f"'{HYPERLINK}" in names
    negative = [
        c
        for f in files
        for row in sheets[f]
        for c in row
        if c.kind == "float" and c.value and c.value.startswith("-")
    ]
    assert negative, "negative amounts are numbers in the sheet, not text"
    if os.environ.get("CREDITLENS_KEEP_SHEETS"):  # to look at them, or picture one
        keep = Path(os.environ["CREDITLENS_KEEP_SHEETS"])
        shutil.copytree(work, keep, dirs_exist_ok=True)
