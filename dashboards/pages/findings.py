"""What the reconciliation found, as the pages word it: hidden movements and breakdown
mismatches, each with where to look and what to do (where the history begins: history.py).

Movements and mismatches are told apart everywhere: a movement changes the balance, a mismatch
is credits of usage the breakdown reports differently; their figures are never added together.
An acknowledged finding is shown as acknowledged, with who, when and why, never hidden: the
acknowledgement says someone explained it, not that it went away.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import date
from decimal import Decimal

from dashboards.markup import Html, esc, facts, para, quoted, section
from dashboards.model import Account, Break, Mismatch
from dashboards.money import money_text
from dashboards.pages.common import Downloads, when
from dashboards.tables import Cell, Column, dash_cell, money_cell, numeric_columns, text_cell
from transforms.breaks import KIND_OF_PLACEMENT

PLACEMENT_MEANING = {
    "before_first": "before the first entry",
    "between_entries": "between two entries",
    "within_tie": "inside a tie (same createdAt)",
    "after_last": "after the last entry, against /Consumption",
}
# balance_breaks.kind of each placement, and what it compares.
KIND_MEANING = {
    "opening": "before_first: the balance before the first entry against zero",
    "continuity": "between_entries or within_tie: the balance an entry starts from against the "
    "balanceAfter of the entry before it",
    "summary": "after_last: the latest /Consumption balance against the last entry's balanceAfter",
}
# Where to look for each placement, and what usually explains it.
PLACEMENT_ADVICE = {
    "before_first": "See 'Where the history begins': sync the earlier history "
    "(CREDITLENS_HISTORY_LIMIT, CREDITLENS_LEDGER_START) or have the platform explain the "
    "opening credits.",
    "between_entries": "Look up both entries in ledger_enriched and ask the platform what moved "
    "the balance between them.",
    "within_tie": "Look up the entries sharing that createdAt in ledger_enriched; the exact place "
    "inside the tie may be open (see 'Order certain').",
    "after_last": "Sync again (recent entries may not be synced yet); if it stays, ask the "
    "platform what moved the /Consumption balance.",
}
MISMATCH_ADVICE = (
    "Compare the item's usage entries in ledger_enriched for the period with the platform's "
    "breakdown; a difference that stays is the platform's to explain."
)
ACK_HOW = 'creditlens breaks ack {} --reason "…"'
MOVEMENTS_VIEW = "hidden_movements"
MISMATCHES_TABLE = "breakdown_mismatches"


def placement_text(placement: str) -> str:
    return PLACEMENT_MEANING.get(placement, placement)


def placement_counts(breaks: Sequence[Break]) -> dict[str, int]:
    """Hidden movements per placement, counted from the rows the reconciliation page's table
    lists, in PLACEMENT_MEANING's order. The page's summary and the demo's closing lines both
    say these counts, so a summary can never group placements the table tells apart."""
    counts = Counter(b.placement for b in breaks)
    order = [*PLACEMENT_MEANING, *sorted(set(counts) - set(PLACEMENT_MEANING))]
    return {p: counts[p] for p in order if counts[p]}


def placements_text(counts: Mapping[str, int]) -> str:
    """``2 between two entries, 1 inside a tie (same createdAt)``: the table's own words."""
    return ", ".join(f"{n:,} {placement_text(p)}" for p, n in counts.items()) or "none"


def acknowledged_text(finding: Break | Mismatch) -> str:
    """'yes — reason (by, date)', 'no', or a dash for a finding without an id."""
    if finding.break_id is None:
        return "—"
    if not finding.acknowledged:
        return "no"
    day = finding.at.date().isoformat() if finding.at is not None else "date unknown"
    return f"yes — {finding.reason or 'no reason given'} ({finding.by or 'unknown'}, {day})"


def _acknowledged_cell(finding: Break | Mismatch) -> Cell:
    """Open findings flagged (warn), acknowledged ones marked as such (ok): both stay listed."""
    text = acknowledged_text(finding)
    if finding.break_id is None:
        return Cell(esc(text), text)
    css = "ok" if finding.acknowledged else "warn"
    return Cell(Html(f'<span class="{css}">{esc(text)}</span>'), text, value=text)


def _todo(finding: Break | Mismatch, what: str, advice: str) -> str:
    """Where to look and what to do about one finding, named by its id and what it is."""
    head = f"{finding.break_id or '(no id)'} ({what})"
    if finding.break_id is None:
        return f"{head}: {advice} Run `creditlens sync` to give it an id to acknowledge it by."
    if finding.acknowledged:
        return (
            f"{head}: acknowledged; it lapses if its figure changes. Reopen it with "
            f"creditlens breaks unack {finding.break_id}."
        )
    return f"{head}: {advice} Acknowledge a known one: {ACK_HOW.format(finding.break_id)}"


def _todo_list(items: Sequence[str]) -> Html:
    return Html("<ul>" + "".join(f"<li>{esc(item)}</li>" for item in items) + "</ul>")


def _counts(findings: Sequence[Break | Mismatch]) -> str:
    acknowledged = sum(1 for f in findings if f.acknowledged)
    return f"{acknowledged:,} acknowledged, {len(findings) - acknowledged:,} not"


def gross_and_net(breaks: Sequence[Break]) -> tuple[Decimal, Decimal]:
    """Sum of |gap| and sum of gap: the size of what moved, and what it did to the balance."""
    gaps = [b.gap or Decimal(0) for b in breaks]
    return sum((abs(g) for g in gaps), Decimal(0)), sum(gaps, Decimal(0))


def movements_line(breaks: Sequence[Break]) -> str:
    """The movements in one line, the same on the overview and the reconciliation page."""
    if not breaks:
        return "none"
    gross, net = gross_and_net(breaks)
    return (
        f"{len(breaks):,} (gross {money_text(gross)}, net {money_text(net)} credits; "
        f"{_counts(breaks)})"
    )


def mismatches_line(mismatches: Sequence[Mismatch]) -> str:
    if not mismatches:
        return "none"
    return f"{len(mismatches):,} item(s), credits of usage, not movements ({_counts(mismatches)})"


def _entry_before(b: Break) -> str:
    if b.before_entry_id:
        return f"{b.before_entry_id} at {when(b.break_start)}"
    if b.placement == "before_first":
        return "none: the ledger's first entry follows"
    return when(b.break_start)


def _entry_after(b: Break) -> str:
    if b.after_entry_id:
        return f"{b.after_entry_id} at {when(b.break_end)}"
    if b.placement == "after_last":
        return f"none: the /Consumption balance of {when(b.observed_on)}"
    return when(b.break_end)


def _certainty(ambiguous: bool | None) -> str:
    if ambiguous is None:
        return "—"
    return "no: entries share a createdAt" if ambiguous else "yes"


def _id_cell(finding: Break | Mismatch) -> Cell:
    """The finding's id; a dash on screen and an empty CSV cell for one without an id."""
    if finding.break_id is None:
        return dash_cell()
    return text_cell(finding.break_id)


def movements_section(account: Account, downloads: Downloads) -> Html:
    """Every hidden movement, of every placement, with its acknowledgement and what to do."""
    breaks = account.breaks
    if not breaks:
        summary = (
            para(
                "No hidden movements: every balance change, from before the first entry to the "
                "/Consumption balance, is explained by a ledger entry.",
                "ok",
            )
            if account.reconciliation is not None
            else para("No hidden movements recorded.", "empty")
        )
    else:
        gross, net = gross_and_net(breaks)
        open_ = any(not b.acknowledged for b in breaks)
        summary = para(
            f"{len(breaks):,} hidden movement(s): gross {money_text(gross)} credits (the sum of "
            f"|gap|), net {money_text(net)}; {_counts(breaks)}.",
            "warn" if open_ else "ok",
        )
    rows = [
        [
            _id_cell(b),
            text_cell(placement_text(b.placement)),
            text_cell(when(b.observed_on)),
            money_cell(b.expected),
            money_cell(b.observed),
            money_cell(b.gap),
            text_cell(_entry_before(b)),
            text_cell(_entry_after(b)),
            text_cell(_certainty(b.ambiguous)),
            _acknowledged_cell(b),
        ]
        for b in breaks
    ]
    todo = [
        _todo(b, f"{placement_text(b.placement)}, gap {money_text(b.gap)}", _advice(b))
        for b in breaks
    ]
    columns = [
        Column("Break id"),
        Column("Placement"),
        Column("Observed on"),
        *numeric_columns("Expected", "Observed", "Gap"),
        Column("Entry before", breakable=True),
        Column("Entry after", breakable=True),
        Column("Order certain"),
        Column("Acknowledged"),
    ]
    return section(
        "Hidden movements",
        para(
            "Balance changes no ledger entry explains, of every placement; each counts in the "
            "daily balance and the statement of the day it is observed on."
        ),
        summary,
        downloads.table(
            "hidden-movements.csv",
            "Every hidden movement of the latest reconciliation",
            columns,
            rows,
            empty="None.",
        ),
        _todo_list(todo) if todo else Html(""),
        para(
            f"Where to look: each is a row of the warehouse view {MOVEMENTS_VIEW} (break_id, "
            "placement, observed_on, gap, acknowledged). `creditlens breaks list` lists the open "
            "findings, `creditlens breaks list --all` every one. Acknowledge a known one: "
            f"{ACK_HOW.format('<break id>')}; it shows here as acknowledged, with its reason, "
            "and lapses if its gap changes."
        ),
        facts([(placement_text(p), meaning) for p, meaning in _placement_rows()]),
    )


def _advice(b: Break) -> str:
    return PLACEMENT_ADVICE.get(b.placement, "")


def _placement_rows() -> list[tuple[str, str]]:
    """Each placement with its column value and the balance_breaks kind it is stored as."""
    return [
        (p, f"placement {p}, kind '{kind}' in balance_breaks: {KIND_MEANING[kind]}.")
        for p, kind in KIND_OF_PLACEMENT.items()
    ]


def _item(m: Mismatch) -> str:
    """The item's ids as the API sent them (the cell escapes them), a dash for none."""
    return " / ".join(v if v is not None else "—" for v in (m.agent_id, m.campaign_id, m.channel))


def mismatches_section(account: Account, downloads: Downloads) -> Html:
    """The breakdown's differences, in their own unit and their own section."""
    found = account.mismatches
    run = account.reconciliation
    body: list[Html] = [
        para(
            "Credits of usage in the current period; not balance movements. Each row is an item "
            "of /Consumption/breakdown (agent, campaign, channel) whose credits differ from the "
            "ledger's debits for it in the breakdown's period. They move no balance, so they are "
            "never added to the hidden movements."
        )
    ]
    if found:
        difference = sum((m.difference or Decimal(0) for m in found), Decimal(0))
        body.append(
            para(
                f"{len(found):,} item(s) differ, by {money_text(difference)} credits of usage in "
                f"all; {_counts(found)}.",
                "warn" if any(not m.acknowledged for m in found) else "ok",
            )
        )
    elif run is not None and run.breakdown_status not in (None, "ok", "break"):
        why = quoted(run.breakdown_message or run.breakdown_status)
        body.append(Html(f'<p class="empty">Not checked: {why}.</p>'))
    elif run is not None:
        body.append(para("Every breakdown item matches the ledger's debits.", "ok"))
    if not found:
        return section("Breakdown mismatches", *body)
    rows = [
        [
            _id_cell(m),
            text_cell(_item(m)),
            text_cell(f"{when(m.period_start)} to {when(m.period_end)}"),
            money_cell(m.ledger_credits),
            money_cell(m.breakdown_credits),
            money_cell(m.difference),
            _acknowledged_cell(m),
        ]
        for m in found
    ]
    columns = [
        Column("Break id"),
        Column("Item (agent / campaign / channel)", breakable=True),
        Column("Period"),
        *numeric_columns("Ledger credits", "Breakdown credits", "Difference"),
        Column("Acknowledged"),
    ]
    todo = [
        _todo(m, f"{_item(m)}, difference {money_text(m.difference)}", MISMATCH_ADVICE)
        for m in found
    ]
    return section(
        "Breakdown mismatches",
        *body,
        downloads.table(
            "breakdown-mismatches.csv",
            "Every breakdown item that differs from the ledger (credits of usage)",
            columns,
            rows,
        ),
        _todo_list(todo),
        para(
            f"Where to look: rows of the warehouse table {MISMATCHES_TABLE}; `creditlens breaks "
            "list` lists them with the movements, and they are acknowledged the same way: "
            f"{ACK_HOW.format('<break id>')}."
        ),
    )


def month_movements(breaks: Sequence[Break], month: date) -> list[Break]:
    """The movements a month's statement counts: those observed on one of its days."""
    return [b for b in breaks if b.observed_on and b.observed_on.replace(day=1) == month]


def movement_brief(b: Break) -> str:
    """A movement in a few words: id, placement, gap, acknowledged or not."""
    state = "acknowledged" if b.acknowledged else "not acknowledged"
    return f"{b.break_id or b.kind} ({placement_text(b.placement)}, {money_text(b.gap)}, {state})"
