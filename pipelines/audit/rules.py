"""The audit's rules: stable ids that findings, SARIF and dashboards refer to."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

from pipelines.warehouse.severity import Severity

# Files a browser is served: whoever loads the page can read a key in one. Judged on the path
# below the scanned root (pipelines/audit/roots.py), by suffix or by a folder on the way to it.
SERVED_SUFFIXES = frozenset({".js", ".mjs", ".cjs", ".html", ".htm", ".map"})
SERVED_FOLDERS = frozenset({"static", "public", "dist", "build"})


def served_to_browser(path_below_root: str) -> bool:
    """A key found in such a file is client-side, whatever the inventory says of the place:
    rule CLA002 applies to it, and the key counts as "client-side or public" on every output."""
    parts = PurePosixPath(path_below_root.replace("\\", "/")).parts
    if not parts:
        return False
    if PurePosixPath(parts[-1]).suffix.lower() in SERVED_SUFFIXES:
        return True
    return any(folder.lower() in SERVED_FOLDERS for folder in parts[:-1])


@dataclass(frozen=True)
class Rule:
    id: str
    name: str
    short: str
    full: str
    help: str
    default: Severity


BILLING_BEYOND_SCOPE = Rule(
    "CLA001",
    "billing-beyond-scope",
    "Key reads billing data beyond its intended scope",
    "The key is meant for campaigns only, yet the API lets it read the company's credit "
    "balance, consumption breakdown, subscription or credit ledger.",
    "Rotate the key and replace it with one restricted to campaigns; if restriction is not "
    "available, narrow where the key is used.",
    Severity.HIGH,
)
CLIENT_SIDE_OR_PUBLIC = Rule(
    "CLA002",
    "client-side-or-public-use",
    "Active key used client-side or in public",
    "The key is listed as used in client-side code or a public place, or the scan found it in a "
    "file a browser is served (.js, .html, .map, or under static/, public/, dist/, build/), "
    "where anyone can copy it; the spec forbids both.",
    "Treat the key as leaked: rotate it, remove it from the place and call the API from a "
    "server instead.",
    Severity.MEDIUM,
)
UNLISTED_PLACE = Rule(
    "CLA003",
    "unlisted-place",
    "Key found in a place its inventory entry does not list",
    "The scan found the key (plain, base64 or URL-encoded) in a file outside the places the "
    "inventory lists for it: nobody accounts for this copy.",
    "Remove the key from the file (and its history) and rotate it if the file was shared; "
    "if the use is legitimate, add the place to the inventory.",
    Severity.MEDIUM,
)
KEY_REJECTED = Rule(
    "CLA004",
    "key-rejected",
    "Key rejected by the API",
    "Every endpoint answered 401: the key is revoked or invalid.",
    "Remove the key from the places that still hold it and from the inventory, or replace it.",
    Severity.LOW,
)
PROBE_INCOMPLETE = Rule(
    "CLA005",
    "probe-incomplete",
    "Exposure of the key could not be fully determined",
    "At least one endpoint gave no usable answer (timeout, rate limit, server error, "
    "malformed body), so what the key can read is not known for it.",
    "Rerun the audit; if it persists, check the base URL and the API's health.",
    Severity.LOW,
)
KEY_UNAVAILABLE = Rule(
    "CLA006",
    "key-unavailable",
    "Key could not be read from where the inventory says",
    "The environment variable is unset or the key file is missing, so the key was neither "
    "probed nor searched for.",
    "Make the key readable by the audit (environment or file), or remove the entry.",
    Severity.LOW,
)
KEY_NOT_SCANNED = Rule(
    "CLA007",
    "key-too-short-to-scan",
    "Key too short to search for in files",
    "The key is shorter than the scan's minimum length, so searching for it would match "
    "inside unrelated words; the scan did not look for it, and copies of it may lie anywhere. "
    "A key that short is also easy to guess.",
    "Rotate it to a full-length key issued by the API, replace it where it is used, and "
    "rerun the audit so the new key is searched for.",
    Severity.MEDIUM,
)
SCAN_INCOMPLETE = Rule(
    "CLA008",
    "scan-incomplete",
    "The scan could not read some files or folders",
    "Some files or folders under the scanned paths could not be opened or listed "
    "(permissions, I/O errors, missing git objects), so copies of the key there are not "
    "ruled out.",
    "Give the audit read access to the listed paths (or exclude them from --scan) and rerun it.",
    Severity.MEDIUM,
)

RULES: tuple[Rule, ...] = (
    BILLING_BEYOND_SCOPE,
    CLIENT_SIDE_OR_PUBLIC,
    UNLISTED_PLACE,
    KEY_REJECTED,
    PROBE_INCOMPLETE,
    KEY_UNAVAILABLE,
    KEY_NOT_SCANNED,
    SCAN_INCOMPLETE,
)
BY_ID = {r.id: r for r in RULES}
