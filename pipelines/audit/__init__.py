"""Key-exposure audit: which API keys read which billing data, and where the keys are.

The spec gives every key that reads campaigns read access to the company's balance,
breakdown, subscription and ledger; this package finds out, key by key, what each one can
really read, where copies of it lie, and says what to rotate or restrict.
"""

from pipelines.audit.endpoints import ENDPOINTS, Outcome
from pipelines.audit.inventory import InventoryError, load_inventory
from pipelines.audit.key_fingerprint import key_fingerprint, last4, load_secret
from pipelines.audit.report import (
    AuditReport,
    EndpointResult,
    Finding,
    KeyResult,
    KeyStatus,
    ScanHit,
    exit_code,
    to_json,
)
from pipelines.audit.run import run_audit
from pipelines.audit.sarif import to_sarif
from pipelines.audit.scan import ScanPathError
from pipelines.warehouse.severity import Severity

__all__ = [
    "ENDPOINTS",
    "AuditReport",
    "EndpointResult",
    "Finding",
    "InventoryError",
    "KeyResult",
    "KeyStatus",
    "Outcome",
    "ScanHit",
    "ScanPathError",
    "Severity",
    "exit_code",
    "key_fingerprint",
    "last4",
    "load_inventory",
    "load_secret",
    "run_audit",
    "to_json",
    "to_sarif",
]
