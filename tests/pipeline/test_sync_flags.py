"""A range the flags alone make impossible is refused before anything is read or discovered.

History discovery searches every account's past before a first sync (minutes for an agency), so
a `--since` after `--until`, an `--until` in the future or a date that is not one must be one line
at once, with no request made and no warehouse written, and exit 2 as a bad flag does (README,
Exit codes).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from pipelines.config.settings import Settings
from tests.conftest import Simulated
from tests.pipeline.helpers import cli_in_process


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (lambda today: ["--since", str(today), "--until", str(today - timedelta(days=3))],
         "is after --until"),
        (lambda today: ["--until", str(today + timedelta(days=1))], "is in the future"),
        (lambda today: ["--since", f"{today.year}-13-01"], "--since must be a date like"),
        (lambda today: ["--until", "yesterday"], "--until must be a date like"),
    ],
    ids=["since-after-until", "until-in-the-future", "month-13", "not-a-date"],
)  # fmt: skip
def test_an_impossible_range_is_one_line_before_any_request(
    simulated: Callable[..., Simulated],
    creditlens_env: Callable[..., Settings],
    tmp_path: Path,
    flags: Callable[..., list[str]],
    said: str,
) -> None:
    s = simulated("small")
    settings = creditlens_env(s)
    done = cli_in_process("sync", *flags(s.today))
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2
    assert len(lines) == 1 and lines[0].startswith("creditlens: error: "), done.stderr
    assert said in lines[0]
    assert s.sim.traffic.requests == 0, "the flags were checked after the API was asked"
    assert not settings.warehouse.exists()
