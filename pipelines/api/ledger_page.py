"""Reading one ledger page exactly.

JSON numbers are kept as their exact text (``parse_float=str``), so an amount never passes
through float; column-wise validation (transforms/wire.py) turns the text into DECIMAL. The
envelope is checked here, because a page whose envelope lies cannot be trusted at all.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from pipelines.api.errors import MalformedResponse
from pipelines.api.models import LedgerPage
from transforms.json_text import JsonNumber, dumps_exact  # noqa: F401  (re-exported)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def parse_ledger_page(body: bytes, where: str) -> LedgerPage:
    """Parse a ledger page; a body that is not a page raises MalformedResponse (retryable)."""
    try:
        doc = json.loads(
            body,
            parse_float=JsonNumber,
            parse_int=JsonNumber,
            parse_constant=_reject_constant,
        )
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedResponse(f"{where}: the body is not valid JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise MalformedResponse(f"{where}: expected a JSON object with data and total")
    try:
        return LedgerPage.model_validate(doc)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:3]
        )
        raise MalformedResponse(f"{where}: not a ledger page ({problems})") from None
