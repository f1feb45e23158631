"""Typed failures of the platform API.

Every failure a user can see carries what the server said (the problem details' title and
detail) and what we asked for (method and path), never the key: callers print ``str(exc)``
and get one line a person can act on.
"""

from __future__ import annotations

from typing import Any

from pipelines.runtime.visible_text import visible_text


class ApiError(Exception):
    """Base of everything the client raises; ``str()`` is one actionable line."""

    retryable: bool = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[Any, ...]:
        # Ledger windows are read in worker processes: a failure there must reach the sync as
        # the same typed error, with its problem details, not as a pickling error.
        return (_rebuild, (type(self), self.__dict__))


def _rebuild(cls: type[ApiError], state: dict[str, Any]) -> ApiError:
    error = cls.__new__(cls)
    Exception.__init__(error, state.get("message", ""))
    error.__dict__.update(state)
    return error


class ProblemError(ApiError):
    """An HTTP error response, with its RFC 7807 problem details when the body had them."""

    def __init__(
        self,
        *,
        status: int,
        title: str | None,
        detail: str | None,
        instance: str | None = None,
        type_: str | None = None,
        method: str = "GET",
        path: str = "",
        retry_after: float | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.status = status
        self.title = title
        self.detail = detail
        self.instance = instance
        self.type = type_
        self.method = method
        self.path = path
        self.retry_after = retry_after
        self.extra = extra or {}
        # The server's text is shown, never obeyed: its newlines, terminal escapes and bidi
        # overrides are written as escapes here, where they enter the message, so the line stays
        # one line wherever it is printed or logged. The attributes keep what was received.
        what = f"{status} {visible_text(title)}" if title else f"HTTP {status}"
        message = f"{method} {visible_text(path)} failed: {what}"
        if detail:
            message += f": {visible_text(detail)}"
        super().__init__(message)


class BadRequest(ProblemError):
    """400: our request broke a rule of the API; retrying the same request cannot help."""


class Unauthorized(ProblemError):
    """401: the key is missing, unknown or revoked."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.message = (
            f"the API key was rejected ({self.status} {visible_text(self.title or 'Unauthorized')})"
            + (f": {visible_text(self.detail)}" if self.detail else "")
            + f" [{self.method} {visible_text(self.path)}]"
        )


class Forbidden(ProblemError):
    """403: the key is valid but its scope does not cover this endpoint."""


class NotFound(ProblemError):
    """404."""


class Unprocessable(ProblemError):
    """422."""


class RateLimited(ProblemError):
    """429: honoured with Retry-After, then retried."""

    retryable = True


class ServerError(ProblemError):
    """5xx: transient on the server's side, retried."""

    retryable = True


class TransportFailure(ApiError):
    """No usable HTTP response: timeout, refused or reset connection."""

    retryable = True


class RequestDeadlineExceeded(TransportFailure):
    """A response that did not arrive whole by the request's deadline, whatever the pace of its
    bytes (a server trickling them keeps every single read within the timeout); retried."""


class ResponseTooLarge(ApiError):
    """A body beyond the size cap once decompressed (a gzip bomb); retried like a timeout, in
    case it was a fault of the moment."""

    retryable = True


class DeadlineExceeded(ApiError):
    """A ledger window not read by its own deadline, retries and re-reads included: more time
    would not have settled it, so it is not retried."""


class MalformedResponse(ApiError):
    """A 2xx whose body is not the JSON we can read (truncated, malformed, wrong envelope)."""

    retryable = True


class LedgerDriftError(ApiError):
    """A ledger window kept changing under us for every re-read we allowed."""


class ConfigurationError(ApiError):
    """The settings cannot work (no key, a base URL that is not http(s), ...)."""


_BY_STATUS: dict[int, type[ProblemError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    422: Unprocessable,
    429: RateLimited,
}


def problem_class(status: int) -> type[ProblemError]:
    if status >= 500:
        return ServerError
    return _BY_STATUS.get(status, ProblemError)
