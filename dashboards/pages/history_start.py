"""Where the history begins: what history discovery found, and what the balance before the
first entry means for the findings.

A ledger that explains its whole balance opens at zero. A non-zero balance before the first
entry is either a finding (a hidden movement placed before the first entry, listed with the
others) or, when earlier days were left out of the sync on purpose, carried in and said so; the
page must tell which, since the same figure means two different things.
"""

from __future__ import annotations

from collections.abc import Sequence

from dashboards.markup import Html, esc, facts, para, quoted, section
from dashboards.model import Account, Break, LedgerHistory, ReconciliationRun
from dashboards.money import money_text
from dashboards.pages.common import when
from dashboards.pages.findings import acknowledged_text, placement_text

DECIDED_MEANING = {
    "every_window": "every 366-day window counted back to the history limit "
    "(CREDITLENS_HISTORY_LIMIT); this is the earliest entry found",
    "no_entries": "no entry was found at all",
    # The older rule's values, in warehouses discovered before it changed.
    "opens_at_zero": "an empty 366-day window before the first entry, whose balance before is 0 "
    "(an older rule: the next sync probes every window again, once)",
    "history_limit": "probed back to the history limit (CREDITLENS_HISTORY_LIMIT) without "
    "finding an earlier entry",
}
# reconciliation_runs.opening_status in a few words ('ok' is what the check writes for zero).
OPENING_VERDICT = {
    "ok": "opens at zero",
    "zero": "opens at zero",
    "break": "a hidden movement before the first entry",
    "skipped": "earlier days left out of the sync, their balance carried in",
}


def _status(run: ReconciliationRun | None) -> str | None:
    return run.opening_status if run is not None else None


def history_line(account: Account) -> str:
    """Where the history begins, in one line for the overview."""
    history, status = account.history, _status(account.reconciliation)
    verdict = OPENING_VERDICT.get(status or "", f"opening check: {status or 'not run'}")
    if history is None or history.first_entry_at is None:
        return f"not recorded by history discovery ({verdict})"
    return (
        f"first entry {when(history.first_entry_at)}, "
        f"{money_text(history.opening_balance)} before it ({verdict})"
    )


def history_section(account: Account) -> Html:
    """Where the ledger begins and what the balance before it was: a finding, or why not."""
    history = account.history
    body: list[Html] = []
    if history is not None:
        body.append(facts(_history_facts(history)))
    else:
        body.append(
            para(
                "No history discovery is recorded for this account (warehouse table "
                "ledger_history): it runs before an account's first sync unless "
                "CREDITLENS_HISTORY_LIMIT=0.",
                "empty",
            )
        )
    body.append(_opening(account.breaks, account.reconciliation))
    return section("Where the history begins", *body)


def _history_facts(history: LedgerHistory) -> list[tuple[str, str]]:
    decided = DECIDED_MEANING.get(history.decided_by, history.decided_by)
    searched = when(history.searched_back_to)
    if history.history_limit is not None:
        searched += f" (history limit {history.history_limit:,} days)"
    if history.requests is not None:
        searched += f", {history.requests:,} request(s)"
    return [
        ("First entry", when(history.first_entry_at)),
        ("Balance before it", money_text(history.opening_balance)),
        (
            "How it was decided",
            Html(f"{esc(decided)}: {quoted(history.detail)}") if history.detail else decided,
        ),
        ("Searched back to", searched),
        ("Discovered at", when(history.discovered_at)),
    ]


def _opening(breaks: Sequence[Break], run: ReconciliationRun | None) -> Html:
    status = _status(run)
    message = (run.opening_message if run is not None else None) or ""
    if status is None:
        return para(
            "The opening balance was not checked by this warehouse's latest reconciliation: run "
            "`creditlens sync` with this version of creditlens.",
            "empty",
        )
    if status in ("ok", "zero"):
        return para("The ledger opens at zero: its entries explain the whole balance.", "ok")
    if status == "skipped":
        return _said(
            "Skipped: ", message, " Not a finding: those days were left out of the sync on purpose."
        )
    if status == "break":
        first = next((b for b in breaks if b.placement == "before_first"), None)
        if first is None:
            return _said("Break: ", message, "", "warn")
        state = (
            f"acknowledged ({acknowledged_text(first).removeprefix('yes — ')})"
            if first.acknowledged
            else "not acknowledged"
        )
        return para(
            f"The balance before the first entry, {money_text(first.gap)}, is not explained: it "
            f"is one of the hidden movements below, {first.break_id or '(no id)'} "
            f"({placement_text(first.placement)}), {state}.",
            "ok" if first.acknowledged else "warn",
        )
    return _said(f"The opening balance was not checked ({status}): ", message, "", "empty")


def _said(before: str, message: str, after: str, css: str = "") -> Html:
    """A paragraph quoting the check's stored message (figures to 0.01, verbatim on hover)."""
    cls = f' class="{css}"' if css else ""
    return Html(f"<p{cls}>{esc(before)}{quoted(message)}{esc(after)}</p>")
