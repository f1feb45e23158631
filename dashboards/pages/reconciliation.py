"""Where the ledger does not explain the balance: every break, and the rules used to find them."""

from __future__ import annotations

from decimal import Decimal

from dashboards import paths
from dashboards.markup import Html, facts, para, section
from dashboards.model import Account, ReconciliationRun
from dashboards.money import money_text
from dashboards.pages.common import File, account_crumbs, page_file, when
from dashboards.tables import Column, money_cell, numeric_columns, table, text_cell

KIND_MEANING = {
    "continuity": "a hidden movement between two consecutive entries",
    "summary": "the latest /Consumption balance against the ledger's last balanceAfter",
    "breakdown": "the current period's breakdown against the ledger's debits",
}
SIGN_MEANING = {
    "signed": "signed: debits are negative amounts, credits positive",
    "unsigned": "unsigned: amounts are magnitudes, the entry type gives the direction",
}


def reconciliation_file(account: Account) -> File:
    path = paths.reconciliation(account.name)
    run = account.reconciliation
    body: list[Html] = []
    if run is None:
        body.append(
            para(
                "No reconciliation has run for this account yet: the breaks below (if any) "
                "cannot be trusted to be complete.",
                "warn",
            )
        )
    else:
        body.append(section("How the ledger was checked", _rules(run)))
    breaks = account.breaks
    if not breaks:
        body.append(
            para(
                "No breaks: every balance change is explained by a ledger entry, and the summary "
                "and breakdown agree with the ledger."
                if run is not None
                else "No breaks recorded.",
                "ok",
            )
        )
    else:
        hidden = sum((b.gap or Decimal(0) for b in breaks if b.kind == "continuity"), Decimal(0))
        body.append(
            para(
                f"{len(breaks):,} break(s) found; continuity gaps add up to {money_text(hidden)} "
                "credits of hidden movements.",
                "warn",
            )
        )
    body.append(
        section(
            "Breaks",
            table(
                "Every break from the latest reconciliation",
                [
                    Column("Kind"),
                    Column("From (break_start)"),
                    Column("To (break_end)"),
                    *numeric_columns("Expected", "Observed", "Gap"),
                    Column("Agent / campaign / channel"),
                    Column("Order certain"),
                    Column("Detail"),
                ],
                [
                    [
                        text_cell(b.kind),
                        text_cell(when(b.break_start)),
                        text_cell(when(b.break_end)),
                        money_cell(b.expected),
                        money_cell(b.observed),
                        money_cell(b.gap),
                        text_cell(
                            " / ".join(v or "—" for v in (b.agent_id, b.campaign_id, b.channel))
                            if b.kind == "breakdown"
                            else ""
                        ),
                        text_cell(_certainty(b.ambiguous)),
                        text_cell(b.detail or ""),
                    ]
                    for b in breaks
                ],
                empty="None.",
            ),
            _kinds(),
        )
    )
    crumbs = account_crumbs(account.name)
    return page_file(
        path, "Reconciliation", body, account=account.name, crumbs=crumbs, sortable=True
    )


def _rules(run: ReconciliationRun) -> Html:
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
        else f"{money_text(run.tolerance)} credits: smaller differences count as continuous"
    )
    return facts(
        [
            ("Checked at", when(run.checked_at)),
            ("Sign convention", convention),
            ("Tolerance", tolerance),
            ("Entries reconciled", f"{run.entries:,}"),
            ("Hidden movements found", f"{run.continuity_breaks:,}"),
            ("Tie groups left ambiguous", f"{run.ambiguous_ties:,}"),
            ("Summary check", _status(run.summary_status, run.summary_message)),
            ("Breakdown check", _status(run.breakdown_status, run.breakdown_message)),
        ]
    )


def _status(status: str | None, message: str | None) -> str:
    return ": ".join(p for p in (status or "not run", message) if p)


def _kinds() -> Html:
    return facts([(kind, meaning) for kind, meaning in KIND_MEANING.items()])


def _certainty(ambiguous: bool | None) -> str:
    if ambiguous is None:
        return "—"
    return "no: entries share a createdAt" if ambiguous else "yes"
