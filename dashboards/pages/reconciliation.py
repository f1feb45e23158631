"""Where the ledger does not explain the balance: the rules used, where the history begins,
every hidden movement and, apart from them, every breakdown mismatch.

The findings' own wording lives in dashboards/pages/findings.py, shared with the overview, so
both pages describe a finding the same way.
"""

from __future__ import annotations

from dashboards import paths
from dashboards.markup import Html, esc, facts, para, quoted, section
from dashboards.model import Account, Break, ReconciliationRun
from dashboards.money import exact_money_text, money_text
from dashboards.pages.common import Downloads, File, account_crumbs, page_file, when
from dashboards.pages.findings import (
    KIND_MEANING,
    mismatches_section,
    movements_section,
    placement_counts,
    placements_text,
)
from dashboards.pages.history_start import history_section

SIGN_MEANING = {
    "signed": "signed: debits are negative amounts, credits positive",
    "unsigned": "unsigned: amounts are magnitudes, the entry type gives the direction",
}

__all__ = ["KIND_MEANING", "SIGN_MEANING", "reconciliation_file"]


def reconciliation_file(account: Account) -> list[File]:
    path = paths.reconciliation(account.name)
    downloads = Downloads(path)
    run = account.reconciliation
    body: list[Html] = []
    if run is None:
        body.append(
            para(
                "No reconciliation has run for this account yet: the findings below (if any) "
                "cannot be trusted to be complete.",
                "warn",
            )
        )
    else:
        body.append(section("How the ledger was checked", _rules(run, account.breaks)))
    if not account.breaks and not account.mismatches and run is not None:
        body.append(
            para(
                "No breaks: every balance change is explained by a ledger entry, and the summary "
                "and breakdown agree with the ledger.",
                "ok",
            )
        )
    if any(f.break_id is None for f in (*account.breaks, *account.mismatches)):
        body.append(
            para(
                "These findings come from a reconciliation made before findings had ids: run "
                "`creditlens sync` with this version of creditlens to reconcile again; then each "
                "can be acknowledged.",
                "warn",
            )
        )
    body.append(history_section(account))
    body.append(movements_section(account, downloads))
    body.append(mismatches_section(account, downloads))
    crumbs = account_crumbs(account.name)
    page = page_file(
        path, "Reconciliation", body, account=account.name, crumbs=crumbs, sortable=True
    )
    return [page, *downloads.files]


def _rules(run: ReconciliationRun, breaks: list[Break]) -> Html:
    convention = SIGN_MEANING.get(run.sign_convention, run.sign_convention)
    if run.sign_inferred:
        convention += (
            f" (inferred from the data: {run.pairs_explained_signed or 0:,} consecutive pairs "
            f"continuous if signed, {run.pairs_explained_unsigned or 0:,} if unsigned)"
        )
    else:
        convention += " (configured)"
    tolerance = (
        "0: every difference is a break"
        if not run.tolerance
        # A setting, shown as configured: rounded to 0.01, 0.000001 would read as 0.00.
        else f"{exact_money_text(run.tolerance)} credits (as configured): smaller differences "
        "count as continuous"
    )
    if run.hidden_movements is None:  # a run from before every placement was counted
        found = f"{run.continuity_breaks:,} between entries"
    else:
        # Per placement, counted from the table's own rows (placement_counts): a count
        # by kind would put a movement inside a tie "between entries" where the table does not.
        placements = placements_text(placement_counts(breaks)) if breaks else "none"
        found = (
            f"{run.hidden_movements:,} ({placements}; gross {money_text(run.hidden_gross)}, "
            f"net {money_text(run.hidden_net)} credits)"
        )
    return facts(
        [
            ("Checked at", when(run.checked_at)),
            ("Sign convention", convention),
            ("Tolerance", tolerance),
            ("Entries reconciled", f"{run.entries:,}"),
            ("Hidden movements found", found),
            ("Tie groups left ambiguous", f"{run.ambiguous_ties:,}"),
            ("Opening balance check", _status(run.opening_status, run.opening_message)),
            ("Summary check", _status(run.summary_status, run.summary_message)),
            ("Breakdown check", _status(run.breakdown_status, run.breakdown_message)),
        ]
    )


def _status(status: str | None, message: str | None) -> Html:
    """The check's status and its stored message, figures shown to 0.01 (verbatim on hover)."""
    head = esc(status or "not run")
    return Html(f"{head}: {quoted(message)}") if message else head
