"""What a hostile upstream's text does to the report site: seen, never obeyed, never multiplied.

Ids and names from tests/reliability/hostile.py's server carry NUL, a terminal escape, bidi
overrides and isolates, and two ids of 100 KB; a real sync lands them (in process, through the
Dagster jobs) and the site is built from that warehouse alone.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from typing import Any

import pytest

from dashboards.display_text import NAME_LIMIT
from dashboards.site import SiteResult, build_site
from pipelines.cli.sync_command import run_sync
from pipelines.config.settings import Settings
from tests.reliability.hostile import CAMPAIGN, HostileServer, Reply, entry

LONG_CAMPAIGN = "c" * 100_000
LONG_AGENT = "A" * 99_999 + "Z"
RLO_AGENT = "agt_\u202elave\u202c"  # shows as "agt_eval" when obeyed
AGENTS = ("agt_1", RLO_AGENT, "agt\x00nul", "agt_\x1b[31mred", LONG_AGENT)
CAMPAIGNS = ("cmp_1", LONG_CAMPAIGN, "cmp_\u2067isolated\u2069")
CAMPAIGN_NAMES = [
    {"id": "cmp_1", "name": "Winter\u202e renewals\x00"},
    {"id": "cmp_\u2067isolated\u2069", "name": "Isolated"},
]
# Nothing of these may reach a page or a figure as the character itself.
RAW = ("\x00", "\x1b", "\u202e", "\u202c", "\u2067", "\u2069")


@dataclass
class Report:
    site: SiteResult
    pages: dict[str, str]  # site path -> text, every HTML page and download


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Report]:
    tmp = tmp_path_factory.mktemp("hostile-report")
    with HostileServer() as server, pytest.MonkeyPatch.context() as env:
        balance = 100_000
        for day in range(1, 23):
            for hour, (agent, campaign) in enumerate(
                zip(AGENTS, CAMPAIGNS * 2, strict=False), start=8
            ):
                balance -= 1
                server.entries.append(
                    entry(
                        f"2026-11-{day:02}T{hour:02}:00:00Z",
                        "-1",
                        str(balance),
                        agent_id=agent,
                        campaign_id=campaign,
                        channel="Phone\u202e",
                    )
                )
        server.balance = str(balance)
        server.routes[CAMPAIGN] = lambda _: Reply(body=CAMPAIGN_NAMES)
        for name in list(os.environ):
            if name.startswith("CREDITLENS_") or name == "DAGSTER_HOME":
                env.delenv(name)
        for name, value in {
            "CREDITLENS_BASE_URL": server.url,
            "CREDITLENS_API_KEY": "k" * 28,
            "CREDITLENS_WAREHOUSE": str(tmp / "w.duckdb"),
            "CREDITLENS_REPORTS_DIR": str(tmp / "reports"),
            "CREDITLENS_LEDGER_START": "2026-11-01",
            "CREDITLENS_MAX_RETRIES": "1",
            "CREDITLENS_BACKOFF_BASE_S": "0.01",
            # Its runs recorded in an ephemeral Dagster instance, as tests/conftest.py's are: a
            # persistent one costs a second or more a sync, and the site is built from the
            # warehouse alone.
            "CREDITLENS_DAGSTER_INSTANCE": "ephemeral",
        }.items():
            env.setenv(name, value)
        settings = Settings.from_env()
        run_sync(settings, "2026-11-01", "2026-11-22")
    site = build_site(settings.warehouse, tmp / "site", month=date(2026, 11, 1), lock_timeout_s=60)
    files = [*site.pages, *site.downloads]
    yield Report(site, {str(p.relative_to(site.out_dir)): p.read_text() for p in files})


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


FIGURE = re.compile(r'<script type="application/json"[^>]*>(.*?)</script>', re.DOTALL)


@pytest.mark.slow
def test_controls_and_bidi_overrides_are_shown_never_obeyed(report: Report) -> None:
    for path, text in report.pages.items():
        assert not [c for c in RAW if c in text], path
        for payload in FIGURE.findall(text):  # JSON escapes would turn back into the character
            assert not [s for s in _strings(json.loads(payload)) if any(c in s for c in RAW)], path
    agents = next(t for p, t in report.pages.items() if p.endswith("agents/index.html"))
    for shown in (r"agt_\u202elave\u202c", r"agt\x00nul", r"agt_\x1b[31mred"):
        assert shown in agents  # visible, as the key audit shows a file name


@pytest.mark.slow
def test_a_100_kb_id_is_cut_where_shown_and_whole_once(report: Report) -> None:
    pages = {p: t for p, t in report.pages.items() if p.endswith(".html")}
    size = sum(len(t.encode()) for t in pages.values())
    # The CSV beside a table naming an id carries it whole: the exact value finance looks up.
    csvs = [t for p, t in report.pages.items() if p.endswith(".csv")]
    for long in (LONG_CAMPAIGN, LONG_AGENT):
        assert any(long in text for text in csvs)
    for long in (LONG_CAMPAIGN, LONG_AGENT):
        copies = sum(t.count(long) for t in pages.values())
        assert copies == 1, copies  # whole on its own page, not once per page naming it
    campaign_page = next(t for p, t in pages.items() if "/campaigns/cccc" in p)
    title = re.search(r"<h1>(.*?)</h1>", campaign_page, re.DOTALL)
    assert title and len(title.group(1)) <= NAME_LIMIT + len("Campaign ") + 20
    assert "c…[" in title.group(1)  # cut, and named by the hash of the whole
    index = next(t for p, t in pages.items() if p.endswith("campaigns/index.html"))
    assert re.search(r'<span title="c{900,}', index)  # the tooltip says more than the cell
    # Two ids, 200 KB between them, on the 20 pages that name them: bounded by the two copies
    # kept whole, not multiplied by the pages.
    assert size < 2 * 100_000 + 200_000, size
    print(f"reliability: hostile report {len(pages)} pages, {size:,} bytes with two 100 KB ids")
