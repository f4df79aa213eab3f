"""The lecture demo's command line end to end, without a browser (runs even where Chromium is
missing): Voila starts on 127.0.0.1 with the token and refuses requests without it."""

from __future__ import annotations

import harness as H


def test_demo_listens_on_localhost_and_refuses_requests_without_the_token(demo_server):
    log = demo_server.log_path.read_text()
    assert f"http://127.0.0.1:{demo_server.port}/?token={demo_server.token}" in log
    assert "this machine only" in log
    assert demo_server.listening() == {"127.0.0.1"}
    assert H.http_status(f"http://127.0.0.1:{demo_server.port}/") in (302, 401, 403)
    assert H.http_status(demo_server.url("/", token="wrong")) in (302, 401, 403)
