"""One piece of work for each account, several accounts at once, each account's failure its own.

An agency's run covers 40 companies: one rejected key or unreachable host must not cost the other
39 their sync. Each account's work runs in a thread of its own (it waits on its key's rate limit
and on round trips, not on the CPU), at most ``concurrency`` at a time; what it raises becomes an
``AccountFailure`` carrying one line, and the caller decides what a failure means for the run.

Threads start with a copy of the caller's context, so what a Dagster step set for its body (who
holds the warehouse lock, who hears about waits for it) holds in every account's thread too.
"""

from __future__ import annotations

import contextvars
import hashlib
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from dagster import Failure

from pipelines.config.account import AccountSettings
from pipelines.config.settings import Settings
from pipelines.orchestration.failures import KNOWN, one_line

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class AccountFailure:
    """Why one account's step failed, in the line the CLI prints and the checks record."""

    account: str
    step: str
    error: str
    kind: str

    def line(self) -> str:
        return f"account {self.account}: {self.step}: {self.error}"

    def metadata(self) -> dict[str, str]:
        return {"account": self.account, "status": "failed", "step": self.step,
                "error": self.error, "kind": self.kind}  # fmt: skip

    @classmethod
    def from_metadata(cls, metadata: dict[str, Any]) -> AccountFailure:
        return cls(
            str(metadata["account"]),
            str(metadata.get("step", "")),
            str(metadata.get("error", "")),
            str(metadata.get("kind", "")),
        )

    @classmethod
    def of(cls, account: str, step: str, exc: BaseException) -> AccountFailure:
        if isinstance(exc, KNOWN):
            return cls(account, step, one_line(exc), type(exc).__name__)
        # A bug, not the account's data: still only this account's failure, said with its kind;
        # the traceback goes to the log (Dagster's event log in a step).
        log.error("account %s: %s failed unexpectedly", account, step, exc_info=exc)
        return cls(account, step, f"unexpected {type(exc).__name__}: {one_line(exc)}", "bug")


@dataclass(frozen=True)
class AccountOutcome(Generic[T]):
    account: AccountSettings
    result: T | None = None
    failure: AccountFailure | None = None
    # What was raised: a single-account installation re-raises it, so its failures read exactly
    # as they always have.
    exception: BaseException | None = None


def succeeded(outcomes: Sequence[AccountOutcome[T]]) -> list[tuple[AccountSettings, T]]:
    return [(o.account, o.result) for o in outcomes if o.failure is None and o.result is not None]


def failures(outcomes: Sequence[AccountOutcome[T]]) -> list[AccountFailure]:
    return [o.failure for o in outcomes if o.failure is not None]


def at_least_one(
    outcomes: Sequence[AccountOutcome[T]], *, per_account: bool = False
) -> list[tuple[AccountSettings, T]]:
    """The accounts that succeeded. When none did, the step fails: with what was raised when
    there was one account and no accounts file (``per_account`` False: a single-account
    installation reads exactly as it always has), else with one line per account, each naming
    its account (``--account NAME`` of a file narrows to one, and still says which)."""
    done = succeeded(outcomes)
    if done or not outcomes:
        return done
    if not per_account and len(outcomes) == 1 and outcomes[0].exception is not None:
        raise outcomes[0].exception
    failed = failures(outcomes)
    raise Failure(
        description="\n".join(grouped_lines(failed)),
        metadata={"accounts_failed": len(failed)},
        allow_retries=False,
    )


# Accounts named in a line for a reason many share; each account's own record names it anyway.
NAMED_IN_A_GROUP = 3


def grouped_lines(failed: Sequence[AccountFailure]) -> list[str]:
    """A line per step and reason, in the accounts' order: an account alone with its reason
    keeps its own line; several with the same one are counted and the first few named. When 500
    companies failed for one reason (DuckDB out of memory), the step's failure was that reason
    500 times, a line of about 100 KB once the CLI joined it."""
    groups: dict[tuple[str, str], list[AccountFailure]] = {}
    for failure in failed:
        groups.setdefault((failure.step, failure.error), []).append(failure)
    lines = []
    for (step, error), group in groups.items():
        if len(group) == 1:
            lines.append(group[0].line())
            continue
        named = ", ".join(f.account for f in group[:NAMED_IN_A_GROUP])
        if len(group) > NAMED_IN_A_GROUP:
            named += f" and {len(group) - NAMED_IN_A_GROUP} more"
        lines.append(f"{len(group)} accounts ({named}): {step}: {error}")
    return lines


def for_each_account(
    accounts: Sequence[AccountSettings],
    work: Callable[[AccountSettings], T],
    *,
    step: str,
    concurrency: int,
) -> list[AccountOutcome[T]]:
    """``work`` for every account, ``concurrency`` at a time; outcomes in the accounts' order."""

    def one(account: AccountSettings) -> AccountOutcome[T]:
        try:
            return AccountOutcome(account, result=work(account))
        except Exception as exc:  # isolation is the point: see AccountFailure.of
            failure = AccountFailure.of(account.name, step, exc)
            return AccountOutcome(account, failure=failure, exception=exc)

    if len(accounts) <= 1 or concurrency <= 1:
        return [one(a) for a in accounts]
    workers = min(concurrency, len(accounts))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"account-{step}") as pool:
        futures = [pool.submit(contextvars.copy_context().run, one, a) for a in accounts]
        return [f.result() for f in futures]


def settle(
    outcomes: Sequence[AccountOutcome[T]],
    commit: Callable[[list[T]], Mapping[str, R | BaseException]],
    *,
    step: str,
) -> list[AccountOutcome[R]]:
    """The accounts' prepared work (``outcomes``) written by ``commit`` all at once, in one
    transaction: per account, what the commit gave it, or its failure, its own as before. An
    account that failed while preparing is not given to the commit; one the commit left out fails
    alone; a commit failing as a whole (the lock, a full disk) fails each account with its line,
    as writing them one by one would have."""
    ready = succeeded(outcomes)
    try:
        settled: Mapping[str, R | BaseException] = commit([r for _, r in ready]) if ready else {}
    except Exception as exc:  # every account's: each still gets its line
        settled = {account.name: exc for account, _ in ready}
    out: list[AccountOutcome[R]] = []
    for o in outcomes:
        done = settled.get(o.account.name) if o.failure is None else None
        if o.failure is not None or done is None:
            out.append(AccountOutcome(o.account, failure=o.failure, exception=o.exception))
        elif isinstance(done, BaseException):
            failure = AccountFailure.of(o.account.name, step, done)
            out.append(AccountOutcome(o.account, failure=failure, exception=done))
        else:
            out.append(AccountOutcome(o.account, result=done))
    return out


# How an account is named where Dagster shows it (docs/scale-out.md, "One event per step, not per
# company"): each account's figures, findings or failure line is its own record of the step's
# ``account_records`` (pipelines/orchestration/metadata.py).

_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_]")


def named_per_account(settings: Settings) -> bool:
    """Whether lines and failures name the account: with an accounts file, even of one account,
    so that narrowing a run to one account (``--account``) still says which."""
    return settings.config_file is not None or len(settings.accounts) > 1


def account_slug(account: str) -> str:
    """The name as Dagster allows in a check name or a folder (letters, digits, ``_``); a name
    that had to change gets a short digest of the original, so two never collide."""
    slug = _NOT_ALLOWED.sub("_", account)
    if slug == account:
        return slug
    digest = hashlib.blake2b(account.encode(), digest_size=3).hexdigest()
    return f"{slug}_{digest}"
