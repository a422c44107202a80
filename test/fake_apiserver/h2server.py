"""HTTP/2 for the fake's API port, with the `h2` library (Debian's python3-h2).

Used for a TLS connection whose ALPN chose "h2" (the fake offers it with --http2). The
API logic is `api.Api`, shared with HTTP/1.1; this module only frames its Replies:

* One I/O thread per connection owns the socket (non-blocking TLS: reads, writes and
  the `h2` state machine never race). Each request stream runs on its own thread, so a
  WATCH can block on the store's condition while a LIST on the same connection goes on.
  Stream threads frame through the `h2` connection under the connection's lock and wake
  the I/O thread through a socketpair.
* Flow control: a stream thread sends no more than the stream's and the connection's
  windows allow, and waits for WINDOW_UPDATE (or SETTINGS) otherwise; it also waits
  while more than MAX_PENDING_OUT bytes sit unsent, so a client that stops reading
  holds the writer back instead of filling memory.
* Bodies up to 4096 bytes (Go's http2 handlerChunkWriteSize) carry `content-length`,
  as in the capture 01h2; bigger ones and watches have no length. No `connection` or
  `transfer-encoding` headers. Response headers are `:status`, the sorted lowercase
  names, then `content-length` and `date`, in Go's order.
* A watch line is sent as DATA (one frame when it fits the peer's max frame size), a
  clean end is an empty DATA frame with END_STREAM.
* Drop faults (half a line, then a cut): RST_STREAM INTERNAL_ERROR on that stream only,
  or with `--http2-drop connection` GOAWAY INTERNAL_ERROR and the TCP connection
  closed. Slice watches cut by switching discovery off get RST_STREAM INTERNAL_ERROR.
  A restart's cuts and its down period close the TCP connection with no GOAWAY, as a
  killed apiserver does, which ends every stream on it.
"""
import select
import socket
import ssl
import sys
import threading
import time
import traceback

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings
from h2.errors import ErrorCodes

import api

MAX_CONCURRENT_STREAMS = 250  # Go's http2 server default
H2_BUFFER_BYTES = 4096        # Go's http2 handlerChunkWriteSize: smaller bodies get a length
MAX_PENDING_OUT = 1 << 20     # framed bytes not yet taken by the socket before writers wait
WRITE_SLICE = 1 << 16
WRITE_TIMEOUT_S = 300         # a stream blocked this long on flow control is given up
IDLE_TIMEOUT_S = 300          # a connection with no streams for this long is closed


class _Headers(dict):
    """Request headers with lowercase names (as HTTP/2 sends them)."""

    def get(self, name, default=None):
        return dict.get(self, name.lower(), default)


class _Stream:
    def __init__(self, stream_id, headers):
        self.id = stream_id
        self.headers = headers
        self.reset = False   # the client reset it
        self.closed = False  # we ended or reset it


class Connection:
    def __init__(self, sock, server, client_address):
        self.sock = sock
        self.api = server.api
        self.verbose = server.verbose
        self.drop_mode = getattr(server, "http2_drop", "stream")
        self.client_address = client_address
        self.conn_id = server.next_conn_id()
        try:
            self.client_cert = bool(sock.getpeercert())
        except (ValueError, ssl.SSLError):
            self.client_cert = False
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.h2 = h2.connection.H2Connection(h2.config.H2Configuration(
            client_side=False, header_encoding="utf-8"))
        self.h2.local_settings = h2.settings.Settings(client=False, initial_values={
            h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: MAX_CONCURRENT_STREAMS})
        self.streams = {}
        self.pending = 0            # framed bytes the socket has not taken yet
        self.dead = False           # nothing more goes out (closed, or closing)
        self.close_requested = False
        self.wake_r, self.wake_w = socket.socketpair()
        self.wake_r.setblocking(False)
        self.wake_w.setblocking(False)

    # ---- the I/O thread -----------------------------------------------------------------

    def serve(self):
        """Runs the connection until it closes (on the connection's own thread)."""
        try:
            with self.lock:
                self.h2.initiate_connection()
            self.sock.setblocking(False)
            self._loop()
        except Exception:
            if self.verbose:
                traceback.print_exc()
        finally:
            with self.lock:
                self.dead = True
                self.cond.notify_all()
                self.wake_w.close()
            self.wake_r.close()

    def _loop(self):
        out = bytearray()
        write_needs_read = False
        last_active = time.monotonic()
        while True:
            with self.lock:
                out += self.h2.data_to_send()
                self.pending = len(out)
                closing = self.close_requested
                if self.streams:
                    last_active = time.monotonic()
            if closing:
                self._flush(out, 1.0)
                try:
                    self.sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                return
            if out and not write_needs_read:
                try:
                    n = self.sock.send(out[:WRITE_SLICE])
                    del out[:n]
                    with self.lock:
                        self.pending = len(out)
                        self.cond.notify_all()
                except ssl.SSLWantWriteError:
                    pass
                except ssl.SSLWantReadError:
                    write_needs_read = True
                except OSError:
                    return
            timeout = 0 if self.sock.pending() else 1.0
            try:
                readable, _, _ = select.select(
                    [self.sock, self.wake_r], [self.sock] if out and not write_needs_read
                    else [], [], timeout)
            except (OSError, ValueError):
                return
            if self.wake_r in readable:
                try:
                    while self.wake_r.recv(4096):
                        pass
                except OSError:
                    pass
            if self.sock in readable or self.sock.pending():
                write_needs_read = False
                if not self._read():
                    return
                last_active = time.monotonic()
            if time.monotonic() - last_active > IDLE_TIMEOUT_S:
                with self.lock:
                    if not self.streams:
                        try:
                            self.h2.close_connection(ErrorCodes.NO_ERROR)
                        except h2.exceptions.ProtocolError:
                            pass
                        self.dead = self.close_requested = True

    def _read(self):
        """Reads what the socket has; False once the client has gone."""
        while True:
            try:
                data = self.sock.recv(65536)
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                return True
            except OSError:
                data = b""
            if not data:
                with self.lock:
                    self.dead = True
                    self.cond.notify_all()
                return False
            start = []
            with self.lock:
                try:
                    events = self.h2.receive_data(data)
                except h2.exceptions.ProtocolError as e:
                    if self.verbose:
                        print(f"HTTP/2 protocol error from {self.client_address}: {e!r}",
                              file=sys.stderr)
                    self.dead = self.close_requested = True  # h2 queued the GOAWAY
                    self.cond.notify_all()
                    return True
                for ev in events:
                    if isinstance(ev, h2.events.RequestReceived):
                        s = _Stream(ev.stream_id, _Headers(ev.headers))
                        self.streams[s.id] = s
                        start.append(s)
                    elif isinstance(ev, h2.events.DataReceived):
                        # Request bodies are not read (405), but flow control needs them
                        # acknowledged.
                        try:
                            self.h2.acknowledge_received_data(ev.flow_controlled_length,
                                                              ev.stream_id)
                        except h2.exceptions.ProtocolError:
                            pass
                    elif isinstance(ev, h2.events.StreamReset):
                        s = self.streams.get(ev.stream_id)
                        if s is not None:
                            s.reset = True
                self.cond.notify_all()  # window updates, settings, resets
            for s in start:
                threading.Thread(target=self._run_stream, args=(s,), daemon=True).start()

    def _flush(self, out, timeout):
        """Best effort: sends what is framed, for up to `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while out and time.monotonic() < deadline:
            try:
                n = self.sock.send(out[:WRITE_SLICE])
                del out[:n]
                continue
            except (ssl.SSLWantWriteError, ssl.SSLWantReadError):
                pass
            except OSError:
                return
            try:
                select.select([], [self.sock], [], max(0.0, deadline - time.monotonic()))
            except (OSError, ValueError):
                return

    def _wake(self):
        try:
            self.wake_w.send(b"x")
        except OSError:  # full (the I/O thread will look anyway) or closed
            pass

    # ---- stream threads -----------------------------------------------------------------

    def _run_stream(self, s):
        h = s.headers
        req = api.Request(h.get(":method", ""), h.get(":path", "/"), h, "HTTP/2",
                          lambda: self.client_cert, lambda: s.reset or self.dead,
                          self.conn_id, host=h.get(":authority") or h.get("host") or "127.0.0.1")
        status = None
        try:
            reply = self.api.handle(req)
            status = reply.status
            if reply.abort:
                self.abort()
            elif reply.stream is None:
                self._send_body(s, reply)
            else:
                self._send_stream(s, reply)
        except api.ClientGone:
            pass
        except Exception:
            traceback.print_exc()
        finally:
            with self.lock:
                self.streams.pop(s.id, None)
                if not s.closed and not s.reset and not self.dead:
                    self._reset_locked(s, ErrorCodes.INTERNAL_ERROR)
                self.cond.notify_all()
            self._wake()
            if self.verbose:
                print(f"{self.client_address[0]} HTTP/2 {req.method} {req.target} "
                      f"{status if status else '-'}", file=sys.stderr)

    def _response_headers(self, reply, length=None):
        headers = [(":status", str(reply.status))]
        headers += [(name.lower(), value) for name, value in reply.headers]
        if length is not None:
            headers.append(("content-length", str(length)))
        headers.append(("date", api.http_date()))
        return headers

    def _send_body(self, s, reply):
        body = reply.body
        length = len(body) if len(body) <= H2_BUFFER_BYTES else None
        self._send_headers(s, self._response_headers(reply, length), end_stream=not body)
        if body:
            self._send_data(s, body, end=True)

    def _send_stream(self, s, reply):
        items = reply.stream
        try:
            for item in items:
                if item is api.HEAD:
                    self._send_headers(s, self._response_headers(reply), end_stream=False)
                elif item is api.END:
                    self._send_data(s, b"", end=True)
                elif isinstance(item, api.Cut):
                    self._cut(s, item)
                else:
                    self._send_data(s, item)
        finally:
            items.close()

    def _cut(self, s, cut):
        if cut.restart:
            self.abort()  # the apiserver went away
            return
        if cut.partial:
            line = cut.line
            self._send_data(s, line[:len(line) // 2])
        if cut.partial and self.drop_mode == "connection":
            self.abort(goaway=ErrorCodes.INTERNAL_ERROR)
        else:
            with self.lock:
                self._reset_locked(s, ErrorCodes.INTERNAL_ERROR)
            self._wake()

    def abort(self, goaway=None):
        """Closes the TCP connection after what is framed (and a GOAWAY, if given)."""
        with self.lock:
            if self.close_requested:
                return
            if goaway is not None and not self.dead:
                try:
                    self.h2.close_connection(goaway)
                except h2.exceptions.ProtocolError:
                    pass
            self.dead = self.close_requested = True
            self.cond.notify_all()
        self._wake()

    def _check_locked(self, s):
        if self.dead or s.reset or s.closed:
            raise api.ClientGone()

    def _reset_locked(self, s, code):
        if s.closed or self.dead:
            return
        s.closed = True
        try:
            self.h2.reset_stream(s.id, code)
        except h2.exceptions.ProtocolError:
            pass

    def _send_headers(self, s, headers, end_stream):
        with self.lock:
            self._check_locked(s)
            try:
                self.h2.send_headers(s.id, headers, end_stream=end_stream)
            except h2.exceptions.ProtocolError as e:
                raise api.ClientGone() from e
            if end_stream:
                s.closed = True
        self._wake()

    def _send_data(self, s, data, end=False):
        """Sends `data` as DATA frames within the flow-control windows."""
        view = memoryview(data)
        deadline = time.monotonic() + WRITE_TIMEOUT_S
        with self.lock:
            while True:
                self._check_locked(s)
                try:
                    window = self.h2.local_flow_control_window(s.id)
                    if (view and window <= 0) or self.pending > MAX_PENDING_OUT:
                        if time.monotonic() > deadline:
                            self._reset_locked(s, ErrorCodes.CANCEL)
                            raise api.ClientGone()
                        self.cond.wait(0.5)
                        continue
                    n = min(window, self.h2.max_outbound_frame_size, len(view))
                    last = n == len(view)
                    self.h2.send_data(s.id, view[:n].tobytes(), end_stream=end and last)
                except h2.exceptions.ProtocolError as e:
                    raise api.ClientGone() from e
                self.pending += n
                view = view[n:]
                if end and last:
                    s.closed = True
                self._wake()
                if last:
                    return


def serve(sock, server, client_address):
    """Serves one TLS connection that chose h2; returns when it is closed."""
    Connection(sock, server, client_address).serve()
