"""Injected HTTP faults, by rate or by script, settable on a running server.

Faults only change what goes over HTTP; the ground truth moves only with page drift, whose new
entries are real.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, get_args

from pydantic import Field

from simulator.scenario import FaultKind, FaultsConfig, FaultSpec

FAULT_KINDS: tuple[str, ...] = get_args(FaultKind)

Matcher = Callable[[Mapping[str, str]], bool]


class Fault(FaultSpec):
    """One fault: what a scenario file can script, plus `match`, which only code can give.

    `path` limits it to one endpoint, `match` to requests whose query it accepts.

    kinds: "429" (Retry-After: retry_after), "500"/"502"/"503" (problem details), "timeout"
    (answer normally after `delay` seconds), "reset" (close the connection without a response),
    "truncated" (the normal body cut in half), "malformed" (the normal body with garbage
    after its first byte: invalid JSON),
    "drift" (`drift_entries` real entries arrive at the clock's now before this request is
    answered), "body" (answer `status` with `body`: bytes/str as is, anything else as JSON).
    """

    match: Matcher | None = Field(default=None, repr=False, exclude=True)

    def __init__(self, kind: str, **fields: Any) -> None:
        """`Fault("429", retry_after=2)`: the kind comes first and is checked by name here, so a
        typo fails with the list of kinds rather than a validation dump."""
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; kinds: {', '.join(FAULT_KINDS)}")
        super().__init__(kind=kind, **fields)

    def applies(self, path: str, query: Mapping[str, str]) -> bool:
        if self.path is not None and self.path != path:
            return False
        return self.match is None or bool(self.match(query))

    @classmethod
    def from_spec(cls, spec: FaultSpec) -> Fault:
        return cls(**spec.model_dump())


@dataclass
class _Hook:
    fault: Fault
    times: int | None


class Faults:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._script: list[Fault] = []
        self._hooks: list[_Hook] = []
        self._rate = 0.0
        self._rate_kinds: tuple[str, ...] = ()
        self._rate_template = Fault("500")
        self._rate_rng = random.Random(0)
        self.fired: list[tuple[str, str]] = []  # (kind, path) of every fault served
        self._active = False

    def configure(self, config: FaultsConfig) -> None:
        """From a scenario file's `faults:` section."""
        rates = config.rates
        if rates.rate > 0:
            self.set_rate(
                rates.rate,
                rates.kinds,
                path=rates.path,
                seed=rates.seed,
                retry_after=rates.retry_after,
                delay=rates.delay,
            )
        self.script(*(Fault.from_spec(s) for s in config.script))

    def set_rate(
        self,
        rate: float,
        kinds: Iterable[str] = ("429", "500", "502", "503"),
        *,
        path: str | None = None,
        seed: int = 0,
        retry_after: int = 1,
        delay: float = 5.0,
    ) -> None:
        """Each matching request gets a fault with probability `rate`, kind drawn from `kinds`."""
        kinds = tuple(kinds)
        for kind in kinds:
            Fault(kind)
        if not 0 <= rate <= 1:
            raise ValueError("rate must be within [0, 1]")
        with self._lock:
            self._rate = rate
            self._rate_kinds = kinds
            self._rate_template = Fault("500", path=path, retry_after=retry_after, delay=delay)
            self._rate_rng = random.Random(seed)
            self._refresh()

    def script(self, *faults: Fault | FaultSpec | str) -> None:
        """Queues faults consumed, in order, by the next requests they apply to."""
        items = [
            f if isinstance(f, Fault) else Fault(f) if isinstance(f, str) else Fault.from_spec(f)
            for f in faults
        ]
        with self._lock:
            self._script.extend(items)
            self._refresh()

    def respond(
        self,
        body: Any,
        status: int = 200,
        *,
        content_type: str = "application/json",
        path: str | None = "/Consumption/transactions",
        match: Matcher | None = None,
        times: int | None = None,
    ) -> None:
        """Serves `body` with `status` to matching requests (`times` of them, or until cleared)."""
        fault = Fault(
            "body", path=path, status=status, body=body, content_type=content_type, match=match
        )
        with self._lock:
            self._hooks.append(_Hook(fault, times))
            self._refresh()

    def clear(self) -> None:
        with self._lock:
            self._script.clear()
            self._hooks.clear()
            self._rate = 0.0
            self._rate_kinds = ()
            self._refresh()

    @property
    def pending_script(self) -> int:
        return len(self._script)

    def _refresh(self) -> None:
        self._active = bool(self._script or self._hooks or self._rate > 0)

    def pick(self, path: str, query: Mapping[str, str]) -> Fault | None:
        if not self._active:
            return None
        with self._lock:
            chosen = self._pick(path, query)
            if chosen is not None:
                self.fired.append((chosen.kind, path))
                if len(self.fired) > 10_000:  # a long-running demo under a fault rate
                    del self.fired[:5_000]
            return chosen

    def _pick(self, path: str, query: Mapping[str, str]) -> Fault | None:
        for index, fault in enumerate(self._script):
            if fault.applies(path, query):
                del self._script[index]
                self._refresh()
                return fault
        for index, hook in enumerate(self._hooks):
            if hook.fault.applies(path, query):
                if hook.times is not None:
                    hook.times -= 1
                    if hook.times <= 0:
                        del self._hooks[index]
                        self._refresh()
                return hook.fault
        template = self._rate_template
        if (
            self._rate > 0
            and template.applies(path, query)
            and self._rate_rng.random() < self._rate
        ):
            kind = self._rate_kinds[int(self._rate_rng.random() * len(self._rate_kinds))]
            return Fault(kind, path=path, retry_after=template.retry_after, delay=template.delay)
        return None
