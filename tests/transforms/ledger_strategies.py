"""Hypothesis strategies for ledgers.

`generic_chains` draws amounts whose micro-credit values carry a distinct power of two, so no two
balances of a chain coincide and no reordering can explain an injected gap differently: the breaks
are then exactly determined, which lets a property test demand them exactly. `small_chains`
does the opposite (tiny integer amounts, zeros, repeated balances) for comparisons against brute
force, where coincidences are the point.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from hypothesis import strategies as st

from tests.transforms.ledgers import MICRO, Chain

STEPS = [
    timedelta(0),
    timedelta(0),
    timedelta(0),
    timedelta(milliseconds=1),
    timedelta(seconds=1),
    timedelta(hours=5),
    timedelta(days=1),
    timedelta(days=17),
]
DEBIT_TYPES = ["Usage", "Usage", "Usage", "Expiry", "AdjustmentDebit"]
CREDIT_TYPES = ["TopUp", "PlanGrant", "Refund", "AdjustmentCredit", "Promotion"]
AGENTS = ["agt_a", "agt_b"]
CAMPAIGNS = ["cmp_x", "cmp_y"]
CHANNELS = ["Phone", "Chat"]


@st.composite
def offsets(draw: st.DrawFn, n: int, steps: list[timedelta] = STEPS) -> list[timedelta]:
    increments = draw(st.lists(st.sampled_from(steps), min_size=n, max_size=n))
    total, result = timedelta(0), []
    for step in increments:
        total += step
        result.append(total)
    return result


@st.composite
def generic_chains(
    draw: st.DrawFn,
    account: str = "acme",
    min_entries: int = 1,
    max_entries: int = 30,
    gap_count: int = 0,
) -> Chain:
    n = draw(st.integers(max(min_entries, gap_count + 1), max_entries))
    bits = n + gap_count + 2
    signs = draw(st.lists(st.sampled_from([-1, -1, 1]), min_size=n, max_size=n))
    bases = draw(st.lists(st.integers(0, 1000), min_size=n, max_size=n))
    amounts = [
        Decimal(sign * (base * 2**bits + 2**i)) * MICRO
        for i, (sign, base) in enumerate(zip(signs, bases, strict=True))
    ]
    types = [draw(st.sampled_from(DEBIT_TYPES if a < 0 else CREDIT_TYPES)) for a in amounts]
    dimensions = [
        (
            draw(st.sampled_from(AGENTS)),
            draw(st.sampled_from(CAMPAIGNS)),
            draw(st.sampled_from(CHANNELS)),
        )
        if t in ("Usage", "Refund")
        else (None, None, None)
        for t in types
    ]
    positions = draw(
        st.lists(st.integers(1, n - 1), min_size=gap_count, max_size=gap_count, unique=True)
        if gap_count
        else st.just([])
    )
    gaps = {}
    for k, position in enumerate(positions):
        sign = draw(st.sampled_from([-1, 1]))
        base = draw(st.integers(0, 1000))
        gaps[position] = Decimal(sign * (base * 2**bits + 2 ** (n + k))) * MICRO
    return Chain(
        amounts=amounts,
        offsets=draw(offsets(n)),
        opening=Decimal(draw(st.integers(0, 10**6))),
        account=account,
        gaps=gaps,
        types=types,
        dimensions=dimensions,
    )


@st.composite
def small_chains(draw: st.DrawFn, account: str = "acme", max_entries: int = 7) -> Chain:
    n = draw(st.integers(1, max_entries))
    amounts = [Decimal(v) for v in draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n))]
    gaps = {
        i: Decimal(draw(st.sampled_from([-2, -1, 1, 2])))
        for i in range(1, n)
        if draw(st.integers(0, 4)) == 0
    }
    steps = [timedelta(0), timedelta(0), timedelta(seconds=1)]
    return Chain(
        amounts=amounts,
        offsets=draw(offsets(n, steps)),
        opening=Decimal(draw(st.integers(0, 4))),
        account=account,
        gaps=gaps,
    )
