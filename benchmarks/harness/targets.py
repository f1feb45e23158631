"""A benchmark's targets: each a figure measured against a bound, printed pass or MISS.

Never a test assertion: a missed target is printed beside its figure and written to the JSON.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def target(name: str, measured: str, passed: bool) -> dict[str, Any]:
    return {"target": name, "measured": measured, "passed": passed}


def print_targets(targets: Iterable[dict[str, Any]]) -> None:
    for t in targets:
        print(f"  {'pass' if t['passed'] else 'MISS'}  {t['target']}: {t['measured']}")
