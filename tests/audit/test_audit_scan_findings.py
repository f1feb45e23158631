"""What the scan did not do becomes a finding: a key too short to search for, files it could
not read; and what someone accepted in the file (an allow marker) never does."""

from __future__ import annotations

from pathlib import Path

from pipelines.api.redact import needles
from pipelines.audit import rules
from pipelines.audit.classify import assess
from pipelines.audit.report import KeyResult, ScanHit, ScanStats
from pipelines.audit.scan import ALLOW_MARKER, MIN_SCAN_KEY_CHARS, scan
from pipelines.warehouse.severity import Severity
from tests.audit.audit_factories import CAMPAIGNS_ONLY, REVOKED, entry, outcomes

KEY = "sk_live_4f9c+2a7e/1b3d=5f6a8c0e2b4d6f8a1c3e"
SHORT = "k1"


def judge(stats: ScanStats, hits: tuple[ScanHit, ...] = (), revoked: bool = False) -> KeyResult:
    return assess(
        entry("k", "campaigns", ("billing-service", "server")),
        fingerprint="0123456789abcdef",
        last4="",
        base_url="http://127.0.0.1:1",
        endpoints=outcomes(*(REVOKED if revoked else CAMPAIGNS_ONLY)),
        hits=hits,
        scan=stats,
    )


def test_a_short_key_is_not_searched_for_and_a_finding_says_why(tmp_path: Path) -> None:
    # "k1" lies inside desk1, bank1 and task1: substring hits would be noise, not copies.
    for name, text in (("a.txt", "desk1\n"), ("b.txt", "bank1 and task1\n"), ("c.env", KEY)):
        (tmp_path / name).write_text(text)
    assert len(SHORT) < MIN_SCAN_KEY_CHARS
    hits, stats = scan([tmp_path], {"k": needles(SHORT), "full": needles(KEY)})
    assert [(h.key, h.path.name) for h in hits] == [("full", "c.env")]
    assert stats.short_keys == ("k",)
    assert stats.min_key_chars == MIN_SCAN_KEY_CHARS
    assert stats.files_scanned == 3
    result = judge(stats)
    (finding,) = [f for f in result.findings if f.rule_id == rules.KEY_NOT_SCANNED.id]
    assert finding.severity is Severity.MEDIUM
    assert f"shorter than {MIN_SCAN_KEY_CHARS} characters" in finding.message
    assert "not searched for" in finding.message
    assert "Rotate it to a full-length key" in finding.message
    assert result.severity >= Severity.MEDIUM


def test_the_short_key_rule_names_the_key_it_skipped(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("desk1 bank1 task1\n")
    _, stats = scan([tmp_path], {"k": needles("k1")})
    assert stats.short_keys == ("k",)
    assert [f.rule_id for f in judge(stats).findings] == ["CLA007"]
    assert [f.severity for f in judge(stats, revoked=True).findings] == [
        Severity.LOW,  # key-rejected
        Severity.LOW,  # a dead short key matters less
    ]
    other = ScanStats(short_keys=("someone-else",), min_key_chars=MIN_SCAN_KEY_CHARS)
    assert judge(other).findings == ()


def test_a_key_of_the_minimum_length_is_searched_for(tmp_path: Path) -> None:
    key = "x" * (MIN_SCAN_KEY_CHARS - 1) + "y"
    (tmp_path / "a.env").write_text(f"K={key}\n")
    hits, stats = scan([tmp_path], {"k": needles(key)})
    assert [h.line for h in hits] == [1] and stats.short_keys == ()


def test_an_allow_marker_suppresses_hits_on_its_line_only(tmp_path: Path) -> None:
    marker = ALLOW_MARKER.decode()
    (tmp_path / "fixture.py").write_text(
        f'KEY = "{KEY}"  # {marker}: a documented test fixture\nOTHER = "{KEY}"\n'
    )
    (tmp_path / "docs.md").write_text(f"<!-- {marker} -->\n{KEY}\n")
    hits, stats = scan([tmp_path], {"k": needles(KEY)})
    got = {(h.path.name, h.line, h.suppressed) for h in hits}
    assert got == {("fixture.py", 1, True), ("fixture.py", 2, False), ("docs.md", 2, False)}
    assert stats.suppressed == 1


def scan_hit(path: str, line: int, suppressed: bool, commit: str | None = None) -> ScanHit:
    return ScanHit("k", "0123456789abcdef", "", path, line, 5, "plain", False, suppressed, commit)


def test_suppressed_hits_never_become_findings() -> None:
    result = judge(ScanStats(), (scan_hit("/r/a.py", 1, True), scan_hit("/r/b.py", 4, True)))
    assert result.findings == ()
    result = judge(ScanStats(), (scan_hit("/r/a.py", 1, True), scan_hit("/r/a.py", 2, False)))
    (finding,) = result.findings
    assert finding.rule_id == rules.UNLISTED_PLACE.id
    assert [(loc.path, loc.line) for loc in finding.locations] == [("/r/a.py", 2)]


def test_a_history_hit_names_its_commit() -> None:
    commit = "a" * 40
    (finding,) = judge(ScanStats(), (scan_hit("/r/old.env", 1, False, commit),)).findings
    assert "/r/old.env in git commit aaaaaaaaaaaa" in finding.message
    assert [loc.commit for loc in finding.locations] == [commit]


def test_an_incomplete_scan_is_a_finding_that_lists_what_was_not_read() -> None:
    stats = ScanStats(
        skipped_unreadable=1,
        skipped_unreadable_dirs=1,
        unreadable_files=("/r/secret.env",),
        unreadable_dirs=("/r/locked",),
    )
    (finding,) = judge(stats).findings
    assert finding.rule_id == rules.SCAN_INCOMPLETE.id == "CLA008"
    assert finding.severity >= Severity.MEDIUM
    assert "could not read 1 file and 1 folder" in finding.message
    assert "/r/secret.env" in finding.message and "/r/locked" in finding.message
    assert "read access" in finding.message
    assert [loc.path for loc in finding.locations] == ["/r/locked", "/r/secret.env"]
    assert judge(ScanStats(files_scanned=3)).findings == ()


def test_the_new_rules_are_registered_for_sarif() -> None:
    ids = [r.id for r in rules.RULES]
    assert ids[-2:] == ["CLA007", "CLA008"]
    assert rules.BY_ID["CLA008"].name == "scan-incomplete"
    assert rules.BY_ID["CLA008"].default >= Severity.MEDIUM
