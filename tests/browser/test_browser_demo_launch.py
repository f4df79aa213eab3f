"""The lecture demo's command line end to end, without a browser (runs even where Chromium is
missing): Voila starts on 127.0.0.1 with the token and sends requests without it to a page in the
lecture's words."""

from __future__ import annotations

import re

import harness as H


def test_demo_listens_on_localhost_and_refuses_requests_without_the_token(demo_server):
    log = demo_server.log_path.read_text()
    assert f"http://127.0.0.1:{demo_server.port}/?token={demo_server.token}" in log
    assert "this machine only" in log
    assert demo_server.listening() == {"127.0.0.1"}
    assert H.http_status(f"http://127.0.0.1:{demo_server.port}/") in (302, 401, 403)
    assert H.http_status(demo_server.url("/", token="wrong")) in (302, 401, 403)


def _get(url: str) -> tuple[int, str, str]:
    """The status, Location header and body of a GET of ``url`` (redirects not followed)."""
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        conn.request("GET", parts.path + (f"?{parts.query}" if parts.query else ""))
        response = conn.getresponse()
        return (response.status, response.getheader("Location") or "",
                response.read().decode("utf-8", "replace"))
    finally:
        conn.close()


def test_a_wrong_token_or_an_old_link_gets_a_page_in_the_lectures_words(demo_server):
    """A student who mistyped the token, or kept the link of an earlier lecture (the token changes
    at each launch), landed on jupyter_server's login page: 'Token authentication is enabled',
    'jupyter server list', 'Setup a Password'. The page says it is the lecture demo, that its
    address with the token is the one on the board or the slide and changes each time the demo
    starts, and has a field for the token (tests/browser/test_browser_voila.py pastes it)."""
    base = f"http://127.0.0.1:{demo_server.port}"
    for url in (f"{base}/", demo_server.url("/", token="an-old-one")):
        status, location, _ = _get(url)
        assert status == 302 and location.startswith("/login?next="), (url, status, location)
        status, _, page = _get(base + location)
        assert status == 200
        text = " ".join(re.sub(r"<[^>]+>", " ", page).split())
        for words in ("lecture demo", "board or the slide", "changes each time the demo starts"):
            assert words in text, f"the page does not say {words!r}: {text}"
        assert re.search(r'<input[^>]*name="password"', page), "no field for the token"
        for words in ("jupyter server list", "Password", "password"):
            assert words not in text, f"the page speaks of {words!r}: {text}"
