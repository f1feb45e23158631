"""The simulator's own reading of the entry-type categories in docs/contracts.md.

Kept here, independent of transforms/, so a misreading on one side shows up as a disagreement.
"""

from __future__ import annotations

import re
from functools import lru_cache

_NON_ALNUM = re.compile(r"[^a-z0-9]")


@lru_cache(maxsize=1024)
def category(type_name: str) -> str:
    name = _NON_ALNUM.sub("", type_name.lower())
    if "refund" in name:
        return "refund"
    if "adjust" in name:
        return "adjustment"
    if any(word in name for word in ("usage", "debit", "charge", "consum")):
        return "debit"
    if any(word in name for word in ("grant", "topup", "purchase", "credit")):
        return "credit"
    return "other"
