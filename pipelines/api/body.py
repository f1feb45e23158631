"""Reading a response body whole, but never more of it than we agreed to hold.

A compressed body can expand a thousandfold: 200 KB of gzip is 200 MB of text, held twice over
while it is parsed. The cap applies to the body once decompressed, and decompression itself is
bounded, so no more than the cap (and one network read) is ever held, however the bytes were
packed. httpx would decompress a whole network read at once, so the body is read raw and
decoded here; the request asks only for the encodings decoded here.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

from pipelines.api.errors import MalformedResponse, ResponseTooLarge

ACCEPT_ENCODING = "gzip, deflate"
_GZIP = zlib.MAX_WBITS | 16
_ZLIB = zlib.MAX_WBITS
_RAW_DEFLATE = -zlib.MAX_WBITS
_IDENTITY = frozenset({"", "identity"})


class _Capped:
    """Decoded chunks, refused as soon as they exceed the cap."""

    def __init__(self, cap: int, path: str, setting: str) -> None:
        self.cap = cap
        self.size = 0
        self.parts: list[bytes] = []
        self._path = path
        self._setting = setting

    @property
    def room(self) -> int:
        """How much more may be decoded: one byte beyond the cap proves it is exceeded."""
        return self.cap - self.size + 1

    def add(self, data: bytes) -> None:
        self.size += len(data)
        if self.size > self.cap:
            raise ResponseTooLarge(
                f"GET {self._path} sent a body of more than {self.cap} bytes once decompressed "
                f"({self._setting}); refused"
            )
        self.parts.append(data)


def read_capped(chunks: Iterable[bytes], encoding: str, cap: int, path: str, setting: str) -> bytes:
    """The body of ``chunks`` (as received) decoded per ``encoding`` (Content-Encoding), or
    ResponseTooLarge once it exceeds ``cap`` bytes decoded; ``setting`` names the cap's variable."""
    body = _Capped(cap, path, setting)
    name = encoding.strip().lower()
    if name in _IDENTITY:
        for chunk in chunks:
            body.add(chunk)
    elif name in ("gzip", "x-gzip", "deflate"):
        _inflate(chunks, name, body, path)
    else:
        raise MalformedResponse(f"GET {path} sent a body in an encoding we did not ask for: {name}")
    return b"".join(body.parts)


def _inflate(chunks: Iterable[bytes], name: str, body: _Capped, path: str) -> None:
    """zlib decoding with every call's output bounded by what the cap leaves. Anything after the
    end of the compressed stream is ignored, as httpx ignores it."""
    wbits = _ZLIB if name == "deflate" else _GZIP
    decoder = zlib.decompressobj(wbits)
    try:
        for chunk in chunks:
            pending = chunk
            while pending and not decoder.eof:
                try:
                    body.add(decoder.decompress(pending, body.room))
                except zlib.error:
                    if body.size or wbits != _ZLIB:
                        raise
                    # "deflate" is sent both wrapped in zlib's header and raw; try the other.
                    wbits = _RAW_DEFLATE
                    decoder = zlib.decompressobj(wbits)
                    continue
                pending = decoder.unconsumed_tail
        if not decoder.eof:
            body.add(decoder.flush(body.room))
    except zlib.error as exc:
        raise MalformedResponse(f"GET {path} sent a body that is not valid {name}: {exc}") from None
