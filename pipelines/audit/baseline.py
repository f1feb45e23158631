"""Baselines: findings a team has seen and accepted, so CI fails only on new ones.

A baseline file records findings by ``Finding.finding_id`` (sha256 of rule, inventory entry,
key fingerprint and places or paths, with the commit of git-history hits; never the key, never
the line number), so an edit above a line does not make an accepted finding new again. Baselined
findings are still shown and counted apart; they never fail the run.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from pipelines.audit.report import AuditReport

FORMAT = "creditlens-audit-baseline"
VERSION = 1


class BaselineError(ValueError):
    """The baseline file cannot be read: the audit cannot tell new findings from old ones."""


def baseline_doc(report: AuditReport) -> dict[str, Any]:
    """Every current finding, by id; names and rules only to make the file reviewable."""
    entries = {
        f.finding_id: {"id": f.finding_id, "rule_id": f.rule_id, "key_name": f.key_name}
        for f in report.findings
    }
    return {
        "format": FORMAT,
        "version": VERSION,
        "findings": [entries[i] for i in sorted(entries)],
    }


def write_baseline(report: AuditReport, path: Path) -> frozenset[str]:
    """Write the report's findings as a baseline file; returns the ids written."""
    doc = baseline_doc(report)
    text = json.dumps(doc, indent=2, ensure_ascii=True) + "\n"
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise BaselineError(f"cannot write baseline {path}: {exc.strerror or exc}") from None
    return frozenset(e["id"] for e in doc["findings"])


def load_baseline(path: Path) -> frozenset[str]:
    """The finding ids a baseline file records; BaselineError for anything else."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BaselineError(f"cannot read baseline {path}: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise BaselineError(f"baseline {path} is not JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise BaselineError(f"baseline {path} is not a {FORMAT} file (write one with "
                            "--write-baseline)")  # fmt: skip
    if doc.get("version") != VERSION:
        raise BaselineError(f"baseline {path}: unsupported version {doc.get('version')!r}")
    findings = doc.get("findings")
    if not isinstance(findings, list) or not all(
        isinstance(f, dict) and isinstance(f.get("id"), str) for f in findings
    ):
        raise BaselineError(f"baseline {path}: 'findings' must be a list of {{id: ...}}")
    return frozenset(f["id"] for f in findings)


def apply_baseline(report: AuditReport, ids: frozenset[str], source: Path) -> AuditReport:
    """The report with every finding whose id is in ``ids`` marked baselined."""
    keys = tuple(
        dataclasses.replace(
            key,
            findings=tuple(
                dataclasses.replace(f, baselined=f.finding_id in ids) for f in key.findings
            ),
        )
        for key in report.keys
    )
    return dataclasses.replace(report, keys=keys, baseline=str(source))
