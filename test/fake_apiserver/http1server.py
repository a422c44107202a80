"""The HTTP/1.1 side of the fake API server: `ApiHandler` turns each request into an
`api.Request`, has `Api.handle` answer it, and writes the `api.Reply` with Content-Length (up
to Go's 2048-byte buffer) or chunked, one handler thread per connection with keep-alive.
`h2server.py` is the same for HTTP/2.
"""

import http.server
import select
import socket
import ssl

from api import (END, GO_BUFFER_BYTES, HEAD, LIST_CHUNK_BYTES, ClientGone, Cut, Request,
                 http_date)


class ApiHandler(http.server.BaseHTTPRequestHandler):
    """HTTP/1.1: writes Replies with Content-Length (up to 2048 bytes) or chunked."""
    protocol_version = "HTTP/1.1"
    timeout = 300  # idle keep-alive and stuck writes
    server_version = "kdns-fake-apiserver"
    disable_nagle_algorithm = True  # TCP_NODELAY, as Go sets it on every TCP connection

    def log_message(self, fmt, *args):
        if self.server.verbose:
            super().log_message(fmt, *args)

    def setup(self):
        super().setup()
        self.conn_id = self.server.next_conn_id()

    def do_GET(self):
        self._serve("GET")

    def do_POST(self):
        self._serve(self.command)

    do_PUT = do_PATCH = do_DELETE = do_POST

    def _serve(self, method):
        req = Request(method, self.path, self.headers, "HTTP/1.1", self._has_client_cert,
                      self._peer_closed, self.conn_id)
        reply = self.server.api.handle(req)
        if reply.close:
            self.close_connection = True
        if reply.abort:
            self.abort_connection()
            return
        try:
            if reply.stream is None:
                self._send_body(reply)
            else:
                self._send_stream(reply)
        except ClientGone:
            pass

    def _has_client_cert(self):
        if isinstance(self.connection, ssl.SSLSocket):
            try:
                return bool(self.connection.getpeercert())
            except (ValueError, ssl.SSLError):
                pass
        return False

    # ---- writing ----------------------------------------------------------------------

    def _head(self, reply):
        self.send_response_only(reply.status)
        for name, value in reply.headers:
            self.send_header(name, value)
        self.send_header("Date", http_date())

    def _write(self, data):
        try:
            self.wfile.write(data)
        except (OSError, ssl.SSLError, ValueError) as e:
            self.close_connection = True
            raise ClientGone() from e

    def _chunk(self, data):
        self._write(b"%x\r\n%s\r\n" % (len(data), data))

    def _send_body(self, reply):
        body = reply.body
        self._head(reply)
        if len(body) <= GO_BUFFER_BYTES:
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self._write(body)
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for i in range(0, len(body), LIST_CHUNK_BYTES):
            self._chunk(body[i:i + LIST_CHUNK_BYTES])
        self._write(b"0\r\n\r\n")

    def _send_stream(self, reply):
        items = reply.stream
        try:
            for item in items:
                if item is HEAD:
                    self._head(reply)
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                elif item is END:
                    self._write(b"0\r\n\r\n")
                elif isinstance(item, Cut):
                    if item.line is not None:
                        line = item.line
                        self._write(b"%x\r\n%s" % (len(line), line[:len(line) // 2]))
                    self.abort_connection()
                else:
                    self._chunk(item)
        finally:
            items.close()

    def abort_connection(self):
        """Closes the TCP connection at once: no final chunk, no TLS close_notify."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _peer_closed(self):
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            if readable:
                return socket.socket.recv(self.connection, 1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True
        return False
