"""Classification from outcomes: status, exposure beyond scope, severity, actionable findings."""

from __future__ import annotations

import pytest

from pipelines.audit.report import KeyStatus
from pipelines.warehouse.severity import Severity
from tests.audit.audit_factories import (
    CAMPAIGNS_ONLY,
    FULL_ACCESS,
    REVOKED,
    F,
    R,
    U,
    X,
    entry,
    hit,
    judged,
)

SERVER = ("billing-service", "server")
BROWSER = ("web/static/widget.js", "client-side")


def rules(result: object) -> dict[str, Severity]:
    return {f.rule_id: f.severity for f in result.findings}  # type: ignore[attr-defined]


def test_campaigns_key_reading_billing_on_a_server_is_high() -> None:
    result = judged(entry("k", "campaigns", SERVER), FULL_ACCESS)
    assert result.status is KeyStatus.ACTIVE
    assert result.exposure == ("consumption", "breakdown", "subscription", "transactions")
    assert result.billing_exposed
    assert rules(result) == {"CLA001": Severity.HIGH}
    (finding,) = result.findings
    assert "Rotate it" in finding.message and "restricted to campaigns" in finding.message
    assert "0123456789abcdef" in finding.message and "1c3e" in finding.message
    assert [loc.place for loc in finding.locations] == ["billing-service"]


def test_billing_beyond_scope_used_client_side_is_critical() -> None:
    result = judged(entry("k", "campaigns", SERVER, BROWSER), FULL_ACCESS)
    assert result.severity is Severity.CRITICAL
    assert rules(result) == {"CLA001": Severity.CRITICAL, "CLA002": Severity.CRITICAL}
    assert result.client_side_or_public


def test_full_key_on_a_server_reads_billing_in_scope_and_is_fine() -> None:
    result = judged(entry("k", "full", SERVER), FULL_ACCESS)
    assert result.billing_readable and not result.exposure
    assert result.severity is Severity.NONE and result.findings == ()


def test_full_key_in_public_is_critical_because_anyone_reads_the_ledger() -> None:
    result = judged(entry("k", "full", ("github.com/acme/web", "public")), FULL_ACCESS)
    assert rules(result) == {"CLA002": Severity.CRITICAL}
    assert "Treat it as leaked" in result.findings[0].message


def test_restricted_key_is_active_without_exposure() -> None:
    result = judged(entry("k", "campaigns", SERVER), CAMPAIGNS_ONLY)
    assert result.status is KeyStatus.ACTIVE
    assert result.billing_readable == () and result.severity is Severity.NONE


def test_restricted_key_client_side_is_medium() -> None:
    result = judged(entry("k", "campaigns", BROWSER), CAMPAIGNS_ONLY)
    assert rules(result) == {"CLA002": Severity.MEDIUM}


def test_revoked_key_is_rejected_and_low() -> None:
    result = judged(entry("k", "campaigns", BROWSER), REVOKED)
    assert result.status is KeyStatus.REJECTED
    assert rules(result) == {"CLA004": Severity.LOW}
    assert "revoked or invalid" in result.findings[0].message


@pytest.mark.parametrize(
    "results", [(U, U, U, U, U), (X, X, U, X, X), (U, F, F, F, F), (X, F, F, F, F)]
)
def test_unknown_is_never_rejected(results: tuple) -> None:
    result = judged(entry("k", "campaigns", SERVER), results)
    assert result.status is KeyStatus.UNKNOWN


def test_rate_limited_billing_endpoints_make_an_active_key_incomplete_not_safe() -> None:
    result = judged(entry("k", "campaigns", BROWSER), (R, U, U, F, F))
    assert result.status is KeyStatus.ACTIVE
    assert rules(result) == {"CLA002": Severity.MEDIUM, "CLA005": Severity.MEDIUM}
    incomplete = next(f for f in result.findings if f.rule_id == "CLA005")
    assert "429" in incomplete.message and "Rerun" in incomplete.message


def test_unknown_key_on_a_server_is_low() -> None:
    result = judged(entry("k", "campaigns", SERVER), (U, U, U, U, U))
    assert rules(result) == {"CLA005": Severity.LOW}


def test_active_key_found_in_an_unlisted_file_is_a_finding_per_file() -> None:
    hits = (
        hit("/repo/app.env", listed=False, line=3),
        hit("/repo/app.env", listed=False, line=9, encoding="base64"),
        hit("/repo/b.txt", listed=False),
        hit("/srv/billing-service/.env", listed=True),
    )
    result = judged(entry("k", "full", SERVER), FULL_ACCESS, hits)
    unlisted = [f for f in result.findings if f.rule_id == "CLA003"]
    assert [f.severity for f in unlisted] == [Severity.HIGH, Severity.HIGH]
    assert [loc.line for loc in unlisted[0].locations] == [3, 9]
    assert "add the place to the inventory" in unlisted[0].message
    assert result.places_found == ("/repo/app.env", "/repo/b.txt", "/srv/billing-service/.env")


def test_unlisted_copies_of_restricted_and_revoked_keys_rank_lower() -> None:
    copy = (hit("/repo/app.env", listed=False),)
    assert rules(judged(entry(), CAMPAIGNS_ONLY, copy))["CLA003"] is Severity.MEDIUM
    assert rules(judged(entry(), REVOKED, copy))["CLA003"] is Severity.LOW


def test_billing_scope_reading_billing_is_in_scope() -> None:
    result = judged(entry("k", "billing", SERVER), (F, R, R, R, R))
    assert result.exposure == () and result.severity is Severity.NONE
