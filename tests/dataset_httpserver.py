"""A loopback HTTP file server for the dataset downloader tests (test helper, not a test).

Serves fixed bytes at fixed paths from a thread on 127.0.0.1 (port chosen by the OS), counts
every request, and can hold a request open to provoke a client timeout.
"""
from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Mapping
from types import TracebackType


class LoopbackFileServer:
    """Serve ``routes`` (URL path -> bytes) on ``http://127.0.0.1:<port>``.

    ``requests`` lists the path of every request received, in order. A path listed in
    ``hang`` is answered only when :meth:`close` runs (the client should time out first).
    Use as a context manager.
    """

    def __init__(self, routes: Mapping[str, bytes], hang: frozenset[str] = frozenset()) -> None:
        self.routes = dict(routes)
        self.hang = hang
        self.requests: list[str] = []
        self._release = threading.Event()
        self._lock = threading.Lock()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                with server._lock:
                    server.requests.append(self.path)
                if self.path in server.hang:
                    server._release.wait(30)
                body = server.routes.get(self.path)
                try:
                    if body is None:
                        self.send_error(404)
                        return
                    self.send_response(200)
                    self.send_header("Content-Type", "text/csv")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass  # keep test output clean

        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.port: int = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> LoopbackFileServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Release hanging requests and stop the server."""
        self._release.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)


def closed_port_url() -> str:
    """A loopback URL on which nothing listens (connections are refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"
