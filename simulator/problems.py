"""Problem-details error responses (RFC 7807 shape, `application/problem+json`)."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from simulator.wire import dumps

PROBLEM_TYPES = {
    400: ("https://tools.ietf.org/html/rfc7231#section-6.5.1", "Bad Request"),
    401: ("https://tools.ietf.org/html/rfc7235#section-3.1", "Unauthorized"),
    403: ("https://tools.ietf.org/html/rfc7231#section-6.5.3", "Forbidden"),
    404: ("https://tools.ietf.org/html/rfc7231#section-6.5.4", "Not Found"),
    405: ("https://tools.ietf.org/html/rfc7231#section-6.5.5", "Method Not Allowed"),
    429: ("https://tools.ietf.org/html/rfc6585#section-4", "Too Many Requests"),
    500: ("https://tools.ietf.org/html/rfc7231#section-6.6.1", "Internal Server Error"),
    502: ("https://tools.ietf.org/html/rfc7231#section-6.6.3", "Bad Gateway"),
    503: ("https://tools.ietf.org/html/rfc7231#section-6.6.4", "Service Unavailable"),
}

PROBLEM_MEDIA_TYPE = "application/problem+json"


def problem_body(status: int, detail: str, instance: str, **extra: Any) -> dict[str, Any]:
    type_, title = PROBLEM_TYPES.get(status, ("about:blank", "Error"))
    return {
        "type": type_,
        "title": title,
        "status": status,
        "detail": detail,
        "instance": instance,
        **extra,
    }


def problem(
    status: int,
    detail: str,
    instance: str,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> Response:
    return Response(
        dumps(problem_body(status, detail, instance, **extra)),
        status_code=status,
        media_type=PROBLEM_MEDIA_TYPE,
        headers=headers,
    )


def too_many_requests(
    instance: str, retry_after: int, headers: dict[str, str] | None = None
) -> Response:
    """The simulator's one 429: the "429" fault and the rate limiter answer alike, so a client's
    handling of one is its handling of the other."""
    return problem(
        429,
        f"Rate limit exceeded; retry after {retry_after} seconds.",
        instance,
        headers={"Retry-After": str(retry_after), **(headers or {})},
    )
