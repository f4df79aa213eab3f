"""tornado: the headers of the response a handler is writing.

``RequestHandler`` has ``set_header`` / ``add_header`` / ``clear_header`` but no reader of the
response's headers; the demo's static-file cache keeps them with the body it replays. Tested with
tornado 6.6 (requirements.txt); accepts ``>=6.6,<7``.
"""

from __future__ import annotations

from . import require

ACCEPTS = ("6.6", "7")
VERSION = require("tornado", *ACCEPTS)


def response_headers(handler):
    """The headers ``handler`` (a ``tornado.web.RequestHandler``) has set on its response so far
    (a ``tornado.httputil.HTTPHeaders``, read only)."""
    return handler._headers
