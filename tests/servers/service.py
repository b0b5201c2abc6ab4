"""A real httpbin on 127.0.0.1, for the service side of live runs.

The same fixture name and ``.url`` as pytest-httpbin's, started the same way
(httpbin's Flask app under werkzeug's threaded server), without depending on
that plugin: it pulls in httpbin's greenlet<3 pin, which Playwright cannot run with.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass

from werkzeug.serving import BaseWSGIServer, make_server

__all__ = ["LocalHttpbin", "httpbin_fixture"]


@dataclass
class LocalHttpbin:
    """A running httpbin: ``url`` is its origin (``http://127.0.0.1:PORT``)."""

    server: BaseWSGIServer
    thread: threading.Thread

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def start_httpbin() -> LocalHttpbin:
    """Start httpbin on an ephemeral loopback port."""
    from httpbin import app  # imported late: only tests of the live path need it

    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, name="httpbin", daemon=True)
    thread.start()
    return LocalHttpbin(server, thread)


def httpbin_fixture() -> Iterator[LocalHttpbin]:
    """Yield a running local httpbin; stop it afterwards."""
    running = start_httpbin()
    try:
        yield running
    finally:
        running.stop()
