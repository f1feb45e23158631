"""The audit report as text: every finding, with what was proved, where, and what to do.

Two audiences, one content. On a terminal the keys are a rich table whose cells fold instead of
being cut; anywhere else (CI logs, pipes, files) every line is written whole, so nothing is cut
at 80 columns. Texts from outside (file names, places, key names, server reasons) are never
read as rich markup (they are Text objects or plain writes), and non-printable characters are
shown as repr-style escapes, so a file name cannot move the cursor or recolour the terminal.
"""

from __future__ import annotations

import sys
from typing import TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from pipelines.audit.endpoints import Outcome
from pipelines.audit.report import AuditReport, Finding, KeyResult, KeyStatus, Location
from pipelines.audit.report import severity_counts as counts_of
from pipelines.audit.rules import BY_ID
from pipelines.runtime.visible_text import location_text, visible
from pipelines.warehouse.severity import Severity

STYLE = {
    Severity.CRITICAL: "bold red",
    Severity.HIGH: "red",
    Severity.MEDIUM: "yellow",
    Severity.LOW: "cyan",
    Severity.NONE: "green",
}


def is_terminal(stream: TextIO) -> bool:
    """Only a real terminal gets the table; FORCE_COLOR and the like must not bring back the
    80-column cut in a CI log."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def emit(line: str, stream: TextIO) -> None:
    """Write one whole line, whatever the stream's encoding can hold (the rest escaped)."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    safe = line.encode(encoding, "backslashreplace").decode(encoding, "replace")
    stream.write(safe + "\n")
    stream.flush()


def render(report: AuditReport, stream: TextIO | None = None) -> None:
    """Print the report: the keys, then every finding, then the totals."""
    out = stream or sys.stdout
    if is_terminal(out):
        console = Console(file=out, highlight=False)
        console.print(key_table(report))
        for finding in ordered(report):
            sev = finding.severity
            # soft_wrap: the terminal wraps a long line itself, so a copied path stays whole.
            console.print(Text(finding_head(finding), style=STYLE[sev]), soft_wrap=True)
            for line in finding_details(report, finding):
                console.print(Text(line), soft_wrap=True)
        for line in totals(report):
            console.print(Text(line), soft_wrap=True)
        return
    emit(f"Key-exposure audit ({len(report.keys)} keys), run {visible(report.run_id)}", out)
    for key in report.keys:
        emit(key_line(key), out)
    for finding in ordered(report):
        emit(finding_head(finding), out)
        for line in finding_details(report, finding):
            emit(line, out)
    for line in totals(report):
        emit(line, out)


def ordered(report: AuditReport) -> list[Finding]:
    """Worst first; new before baselined at the same severity."""
    return sorted(report.findings, key=lambda f: (f.severity, not f.baselined), reverse=True)


def key_table(report: AuditReport) -> Table:
    table = Table(title=f"Key-exposure audit ({len(report.keys)} keys)")
    headers = ("Key", "Fingerprint", "Last 4", "Status", "Scope", "Billing readable", "Severity")
    for header in headers:
        table.add_column(header, overflow="fold")
    table.add_column("Findings", justify="right")
    for key in report.keys:
        table.add_row(
            Text(visible(key.name)),
            Text(key.fingerprint or "-"),
            Text(key.last4 or "-"),
            Text(key.status.value),
            Text(",".join(key.intended_scope)),
            Text(_billing(key) or "-"),
            Text(key.severity.value, style=STYLE[key.severity]),
            Text(str(len(key.findings))),
        )
    return table


def key_line(key: KeyResult) -> str:
    return (
        f"key {visible(key.name)}: fingerprint {key.fingerprint or '-'}, last4 "
        f"{key.last4 or '-'}, status {key.status.value}, scope {','.join(key.intended_scope)}, "
        f"billing readable {_billing(key) or '-'}, severity {key.severity.value}, "
        f"{len(key.findings)} finding(s)"
    )


def finding_head(finding: Finding) -> str:
    rule = BY_ID.get(finding.rule_id)
    name = f" {rule.name}" if rule else ""
    state = " [baselined]" if finding.baselined else ""
    return (
        f"{finding.severity.value.upper():8} {finding.rule_id}{name}{state}: key "
        f"{visible(finding.key_name)} (fingerprint {finding.fingerprint or 'not fingerprinted'}, "
        f"last4 {finding.last4 or '-'}) id {finding.finding_id}"
    )


def finding_details(report: AuditReport, finding: Finding) -> list[str]:
    """What was proved, where, and what to do: one indented line each."""
    lines = [f"    {visible(finding.message)}"]
    key = report.key(finding.key_name)
    if key is not None:
        lines.append(f"    proved: {proved(key)}")
    lines.extend(f"    at: {where(loc)}" for loc in finding.locations)
    rule = BY_ID.get(finding.rule_id)
    if rule is not None:
        lines.append(f"    do: {visible(rule.help)}")
    return lines


def proved(key: KeyResult) -> str:
    """The probe's evidence, in words a reviewer can check against the endpoint list."""
    if key.status is KeyStatus.REJECTED:
        return "every endpoint answered 401 (rejected): it reads no billing data"
    if key.fingerprint is None:
        return "not probed: the key could not be read"
    unknown = key.endpoints_with(Outcome.UNKNOWN)
    gaps = f"; no usable answer from {', '.join(unknown)}" if unknown else ""
    billing = _billing(key)
    if billing:
        return f"billing endpoints answered with data: {billing}{gaps}"
    return f"no billing endpoint answered with data{gaps}"


def where(loc: Location) -> str:
    """The location as the report site shows it; a place without a kind says "unknown"."""
    return location_text(loc)


def totals(report: AuditReport) -> list[str]:
    counts = counts_of(report)
    parts = ", ".join(f"{n} {name}" for name, n in reversed(counts.items()))
    lines = [
        f"findings: {parts}; {report.baselined} baselined; "
        f"{report.suppressed_hits} scan hit(s) suppressed by an allow marker"
    ]
    if report.scan.roots:
        stats = report.scan
        lines.append(
            f"scanned {stats.files_scanned} file(s); skipped {stats.skipped_binary} binary, "
            f"{stats.skipped_large} over {stats.max_file_bytes} bytes, "
            f"{stats.skipped_unreadable} unreadable file(s), "
            f"{stats.skipped_unreadable_dirs} unreadable folder(s)"
        )
    return lines


def _billing(key: KeyResult) -> str:
    """The billing endpoints that answered with data; only an active key has any (any data
    makes a key active)."""
    return ", ".join(key.billing_readable)
