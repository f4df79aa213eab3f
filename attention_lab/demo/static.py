"""The demo page's static files (Voila's scripts, styles, fonts and widget extensions) served from
memory, gzip-compressed for browsers that accept it.

A viewer's first visit fetches 102 files (5.5 MB) from Voila's one server thread, which also
relays every viewer's widget messages. Tornado's static handlers find, check and read each file
again for every request. :func:`from_memory` makes a handler class that keeps each file's first
full response (its headers and body, and the body gzip-compressed once when that makes it
smaller) and replays it to later viewers, so a lecture hall's arrivals cost less of that thread,
and fewer bytes cross the room's network.

Only a plain full ``GET`` is replayed; a ``HEAD``, a range or an ``If-Modified-Since`` request is
served by the handler itself, as are all requests once :data:`MAX_ENTRIES` responses or
:data:`MAX_BYTES` are kept (a client inventing query strings cannot fill the memory). The files
of a running demo do not change (Voila's own assets and installed extensions).
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass

from jupyter_server.auth.decorator import allow_unauthenticated
from tornado import web

from .._compat.tornado import response_headers

#: the most responses and bytes (bodies and their compressed copies) kept per server
MAX_ENTRIES = 1000
MAX_BYTES = 64 * 2**20
#: response headers replayed (Date and Server are the server's own, Content-Length is computed)
KEPT_HEADERS = ("Content-Type", "Etag", "Last-Modified", "Cache-Control", "Expires",
                "Accept-Ranges")
#: compressed only when this much smaller (images and fonts are compressed already)
GZIP_GAIN = 0.9


@dataclass(frozen=True)
class Response:
    headers: tuple[tuple[str, str], ...]
    body: bytes
    gzipped: bytes | None  # None: not smaller when compressed


class ResponseCache:
    """The responses kept by one server, by request URI (path and query)."""

    def __init__(self, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES):
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self.responses: dict[str, Response] = {}
        self.size = 0

    def add(self, uri: str, headers, body: bytes) -> None:
        if len(self.responses) >= self.max_entries or self.size + len(body) > self.max_bytes:
            return
        packed = gzip.compress(body, compresslevel=6, mtime=0)
        gzipped = packed if len(packed) < GZIP_GAIN * len(body) else None
        size = len(body) + len(gzipped or b"")
        if self.size + size > self.max_bytes:
            return
        kept = tuple((name, headers[name]) for name in KEPT_HEADERS if name in headers)
        self.responses[uri] = Response(kept, body, gzipped)
        self.size += size


def accepts_gzip(header: str) -> bool:
    """Whether an ``Accept-Encoding`` header accepts gzip (``q=0`` refuses it)."""
    for part in header.split(","):
        name, _, params = part.strip().partition(";")
        if name.strip().lower() in ("gzip", "*"):
            q = params.strip().lower()
            try:
                return not q.startswith("q=") or float(q[2:]) > 0
            except ValueError:  # a malformed weight: not accepted
                return False
    return False


class FromMemory:
    """Mixin for a tornado ``StaticFileHandler`` class: see the module docstring."""

    kept: ResponseCache  # set per class by from_memory()
    _capture: list | None = None

    @allow_unauthenticated  # as the handlers it wraps (the page's assets need no login)
    async def get(self, path: str, include_body: bool = True) -> None:
        request = self.request
        plain = (include_body and request.method == "GET" and "Range" not in request.headers
                 and "If-Modified-Since" not in request.headers)
        found = self.kept.responses.get(request.uri) if plain else None
        if found is None:
            self._capture = [] if plain else None
            await super().get(path, include_body)
            if self._capture is not None and self.get_status() == 200:
                self.kept.add(request.uri, response_headers(self), b"".join(self._capture))
            self._capture = None
            return
        for name, value in found.headers:
            self.set_header(name, value)
        body = found.body
        if found.gzipped is not None:
            self.set_header("Vary", "Accept-Encoding")
            if accepts_gzip(request.headers.get("Accept-Encoding", "")):
                body = found.gzipped
                self.set_header("Content-Encoding", "gzip")
                etag = dict(found.headers).get("Etag")
                if etag and not etag.startswith("W/"):  # another encoding: a weak validator
                    self.set_header("Etag", "W/" + etag)
        if self.check_etag_header():
            self.set_status(304)
            return
        self.finish(body)

    def write(self, chunk) -> None:
        if self._capture is not None and self.get_status() == 200:  # not an error page's text
            self._capture.append(bytes(chunk))
        super().write(chunk)


def from_memory(handler: type[web.StaticFileHandler]) -> type:
    """``handler``'s class serving its files from memory (each class keeps its own)."""
    return type(f"FromMemory{handler.__name__}", (FromMemory, handler), {"kept": ResponseCache()})
