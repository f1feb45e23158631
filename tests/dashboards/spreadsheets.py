"""Reading the site's CSV files back: as Python's csv module reads them, and as a real
spreadsheet engine (LibreOffice Calc, headless) opens them.

LibreOffice converts each CSV to a flat OpenDocument spreadsheet (``.fods``, one XML file),
which the standard library parses: every cell's type (float, date, string), its value as the
engine stored it, the text it displays, and whether it holds a formula. The import filter says
what a user picks in the import dialog: comma-separated, double quotes, Unicode (UTF-8).
Each conversion runs with a profile of its own, so concurrent runs never share one.
"""

from __future__ import annotations

import csv
import shutil
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

SOFFICE = "/usr/bin/soffice"
# Comma, double quote, UTF-8 (76), from line 1: what "Unicode (UTF-8)" in the dialog means.
CSV_FILTER = "CSV:44,34,76,1"
_TABLE = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"
_OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
_TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"


def soffice_available() -> bool:
    return Path(SOFFICE).is_file() or shutil.which("soffice") is not None


def read_csv(path: Path) -> list[list[str]]:
    """The file's rows; it must be UTF-8 with a BOM and CRLF line ends."""
    raw = path.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf"), f"{path} has no UTF-8 BOM"
    assert raw.endswith(b"\r\n") and b"\n" not in raw.replace(b"\r\n", b""), f"{path}: not CRLF"
    with path.open(newline="", encoding="utf-8-sig") as handle:
        return list(csv.reader(handle))


def read_records(path: Path) -> list[dict[str, str]]:
    header, *rows = read_csv(path)
    return [dict(zip(header, row, strict=True)) for row in rows]


@dataclass(frozen=True)
class SheetCell:
    """A cell as the spreadsheet holds it."""

    kind: str | None  # float, date, string, ... (None: an empty cell)
    value: str | None  # office:value or office:date-value
    text: str  # what the cell displays
    formula: str | None


def open_in_spreadsheet(files: list[Path], work: Path) -> dict[Path, list[list[SheetCell]]]:
    """Each CSV as LibreOffice Calc opens it, in one conversion run. File names must differ."""
    assert len({f.name for f in files}) == len(files), "name clash in one conversion"
    out = work / "converted"
    profile = work / "profile"
    command = [
        shutil.which("soffice") or SOFFICE,
        f"-env:UserInstallation={profile.as_uri()}",
        "--headless",
        f"--infilter={CSV_FILTER}",
        "--convert-to",
        "fods",
        "--outdir",
        str(out),
        *map(str, files),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    sheets = {}
    for file in files:
        converted = out / f"{file.stem}.fods"
        assert converted.is_file(), (file, done.stdout, done.stderr)
        sheets[file] = _cells(converted)
    return sheets


def convert(file: Path, work: Path, to: str) -> Path:
    """One file converted by LibreOffice (for a picture of a sheet: ``png``)."""
    profile = work / "profile"
    subprocess.run(
        [
            shutil.which("soffice") or SOFFICE,
            f"-env:UserInstallation={profile.as_uri()}",
            "--headless",
            "--convert-to",
            to,
            "--outdir",
            str(work),
            str(file),
        ],
        capture_output=True,
        timeout=300,
        check=True,
    )
    return work / f"{file.stem}.{to.split(':')[0]}"


def _cells(path: Path) -> list[list[SheetCell]]:
    rows: list[list[SheetCell]] = []
    for row in ET.parse(path).iter(f"{_TABLE}table-row"):
        repeat_rows = int(row.get(f"{_TABLE}number-rows-repeated", "1"))
        cells: list[SheetCell] = []
        for cell in row:
            if cell.tag not in (f"{_TABLE}table-cell", f"{_TABLE}covered-table-cell"):
                continue
            repeat = int(cell.get(f"{_TABLE}number-columns-repeated", "1"))
            kind = cell.get(f"{_OFFICE}value-type")
            value = cell.get(f"{_OFFICE}value") or cell.get(f"{_OFFICE}date-value")
            text = "\n".join("".join(p.itertext()) for p in cell.iter(f"{_TEXT}p"))
            formula = cell.get(f"{_TABLE}formula")
            cells.extend([SheetCell(kind, value, text, formula)] * min(repeat, 64))
        while cells and cells[-1].kind is None:  # the sheet's blank columns to the right
            cells.pop()
        if cells:
            rows.extend([cells] * min(repeat_rows, 1))
    return rows
