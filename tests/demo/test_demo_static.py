"""The demo's static files served from memory (attention_lab.demo.static)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import gzip
import random

import pytest

pytest.importorskip("voila")

from tornado import httpclient, web  # noqa: E402
from tornado.httpserver import HTTPServer  # noqa: E402
from tornado.netutil import bind_sockets  # noqa: E402

from attention_lab.demo import static  # noqa: E402


@pytest.mark.parametrize("header, accepted", [
    ("gzip, deflate, br, zstd", True), ("br, GZIP", True), ("gzip;q=0.5", True), ("*", True),
    ("gzip;q=0", False), ("gzip; q=0.0", False), ("gzip;q=", False), ("gzip;q=x", False),
    ("identity", False), ("", False),
    ("deflate, br", False)])
def test_gzip_is_sent_only_to_clients_that_accept_it(header, accepted):
    assert static.accepts_gzip(header) is accepted


class Counting(web.StaticFileHandler):
    """A static handler that counts how often it looks a file up on disk."""

    lookups = 0

    @classmethod
    def get_absolute_path(cls, root, path):
        Counting.lookups += 1
        return super().get_absolute_path(root, path)


def _serve(folder, scenario, **kept):
    """Run ``scenario(fetch)`` against a server of ``folder`` whose handler serves from memory;
    ``fetch(path, **headers)`` returns the response (errors included)."""
    handler = static.from_memory(Counting)
    handler.kept = static.ResponseCache(**kept)

    async def main():
        sockets = bind_sockets(0, "127.0.0.1")
        server = HTTPServer(web.Application([(r"/s/(.*)", handler, {"path": str(folder)})]))
        server.add_sockets(sockets)
        port = sockets[0].getsockname()[1]
        client = httpclient.AsyncHTTPClient(force_instance=True)

        async def fetch(path, method="GET", **headers):
            return await client.fetch(f"http://127.0.0.1:{port}/s/{path}", method=method,
                                      headers=headers, decompress_response=False,
                                      raise_error=False)
        try:
            return await scenario(fetch), handler.kept
        finally:
            client.close()
            server.stop()

    # a thread of its own: an earlier test's event loop may still be marked running in this one
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, main()).result()


SCRIPT = b"function f() { return 'attention'; }\n" * 400
FONT = random.Random(0).randbytes(10_000)  # compressed already: gzip makes it no smaller


def test_a_file_is_read_once_then_replayed_and_gzipped_for_browsers(tmp_path):
    (tmp_path / "a.js").write_bytes(SCRIPT)
    (tmp_path / "font.woff2").write_bytes(FONT)
    Counting.lookups = 0

    async def scenario(fetch):
        first = await fetch("a.js?v=1")
        lookups = Counting.lookups
        (tmp_path / "a.js").write_bytes(b"changed")  # not read again: served from memory
        plain = await fetch("a.js?v=1", **{"Accept-Encoding": "identity"})
        packed = await fetch("a.js?v=1", **{"Accept-Encoding": "gzip, deflate, br"})
        assert Counting.lookups == lookups == 1
        font = [await fetch("font.woff2", **{"Accept-Encoding": "gzip"}) for _ in range(2)]
        again = await fetch("a.js?v=1", **{"If-None-Match": packed.headers["Etag"],
                                             "Accept-Encoding": "gzip"})
        return first, plain, packed, font, again

    (first, plain, packed, font, again), kept = _serve(tmp_path, scenario)
    assert first.code == plain.code == packed.code == 200
    assert first.body == plain.body == SCRIPT
    assert "Content-Encoding" not in plain.headers
    assert packed.headers["Content-Encoding"] == "gzip"
    assert gzip.decompress(packed.body) == SCRIPT and len(packed.body) < len(SCRIPT) / 10
    assert packed.headers["Vary"] == plain.headers["Vary"] == "Accept-Encoding"
    # the handler's own headers are kept; the compressed body's validator is a weak one
    assert plain.headers["Content-Type"] == first.headers["Content-Type"] == "text/javascript"
    assert plain.headers["Etag"] == first.headers["Etag"]
    assert packed.headers["Etag"] == "W/" + first.headers["Etag"]
    assert again.code == 304 and not again.body
    assert [f.body for f in font] == [FONT] * 2
    assert "Content-Encoding" not in font[1].headers  # compressing it would not make it smaller
    assert set(kept.responses) == {"/s/a.js?v=1", "/s/font.woff2"}


def test_heads_ranges_errors_and_a_full_memory_are_served_from_disk(tmp_path):
    (tmp_path / "a.js").write_bytes(SCRIPT)
    (tmp_path / "b.js").write_bytes(SCRIPT)

    async def scenario(fetch):
        head = await fetch("a.js", method="HEAD")
        ranged = await fetch("a.js", Range="bytes=0-9")
        missing = await fetch("nothing.js")
        whole = await fetch("a.js")
        other = await fetch("b.js")  # the memory holds one response only
        (tmp_path / "b.js").write_bytes(b"changed")
        return head, ranged, missing, whole, other, await fetch("b.js")

    (head, ranged, missing, whole, other, changed), kept = _serve(tmp_path, scenario,
                                                                  max_entries=1)
    assert head.code == 200 and not head.body
    assert ranged.code == 206 and ranged.body == SCRIPT[:10]
    assert missing.code == 404
    assert whole.body == other.body == SCRIPT
    assert changed.body == b"changed"  # b.js was not kept: read from disk again
    assert list(kept.responses) == ["/s/a.js"]


def test_the_memory_holds_at_most_its_bytes(tmp_path):
    kept = static.ResponseCache(max_bytes=1000)
    kept.add("/x", {}, b"x" * 600)
    kept.add("/y", {}, b"y" * 600)
    assert list(kept.responses) == ["/x"] and kept.size <= 1000
    kept.add("/z", {}, FONT[:370])  # does not compress: kept without a copy, 997 bytes in all
    assert list(kept.responses) == ["/x", "/z"] and kept.size <= 1000
    kept = static.ResponseCache(max_bytes=1000)
    kept.add("/s", {}, SCRIPT[:960])  # 960 bytes, and its compressed copy: over the limit
    assert kept.responses == {} and kept.size == 0
