#!/usr/bin/python3
"""A fake kube-apiserver (v1.25 shapes) for kdns's tests. See README.md.

Starts two listeners on 127.0.0.1: the API (HTTPS with a throw-away CA, or plain HTTP
with --plain-http; HTTP/1.1, and HTTP/2 too with --http2) and the control port (plain
HTTP). Once both listen, prints one JSON line with the ports and file paths and writes
the same JSON to --ready-file.
Python 3.11 standard library only, plus Debian's python3-h2 for --http2; run it with
/usr/bin/python3.
"""
import argparse
import importlib
import itertools
import json
import os
import signal
import ssl
import sys
import tempfile
import threading
import http.server

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import api  # noqa: E402
import control  # noqa: E402
import http1server  # noqa: E402
import pki  # noqa: E402
import state as state_mod  # noqa: E402


class Server(http.server.ThreadingHTTPServer):
    """A threaded HTTP(S) server with a bound on open connections.

    The TLS handshake runs on the connection's own thread, so a slow client never
    blocks accept().
    """
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, address, handler, state, ssl_context, max_connections, verbose,
                 http2_drop="stream"):
        self.state = state
        self.api = api.Api(state)
        self.http2_drop = http2_drop
        self.next_conn_id = itertools.count(1).__next__  # atomic under the GIL
        self.ssl_context = ssl_context
        self.verbose = verbose
        self.slots = threading.BoundedSemaphore(max_connections)
        super().__init__(address, handler)

    def process_request(self, request, client_address):
        if not self.slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except Exception:
            self.slots.release()
            raise

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def finish_request(self, request, client_address):
        if self.ssl_context is None:
            return super().finish_request(request, client_address)
        request.settimeout(10)
        try:
            conn = self.ssl_context.wrap_socket(request, server_side=True)
        except (OSError, ssl.SSLError) as e:
            if self.verbose:
                print(f"TLS handshake with {client_address} failed: {e}", file=sys.stderr)
            return
        try:
            conn.settimeout(None)
            if conn.selected_alpn_protocol() == "h2":
                import h2server  # only with --http2, which offers h2
                h2server.serve(conn, client_address=client_address, server=self)
            else:
                self.RequestHandlerClass(conn, client_address, self)
        finally:
            try:
                conn.close()
            except OSError:
                pass

    def handle_error(self, request, client_address):
        if self.verbose:
            super().handle_error(request, client_address)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--plain-http", action="store_true", help="serve the API over plain HTTP")
    p.add_argument("--http2", action="store_true",
                   help="offer HTTP/2 too (TLS ALPN h2,http/1.1); needs python3-h2")
    p.add_argument("--http2-drop", choices=("stream", "connection"), default="stream",
                   help="how a drop fault cuts an HTTP/2 watch: RST_STREAM on that stream "
                        "(default) or GOAWAY and the TCP connection closed")
    p.add_argument("--pki-dir", help="where to write the CA, certs and kubeconfigs "
                                     "(default: a new temporary directory)")
    p.add_argument("--ready-file", help="write the ports and paths here as JSON once ready")
    p.add_argument("--token", action="append", help="a valid bearer token (repeatable; "
                                                    "default: test-token)")
    p.add_argument("--client-cert-auth", action="store_true",
                   help="also accept a client certificate signed by the CA")
    p.add_argument("--objects", action="append", default=[],
                   help="a kubectl-style List (JSON) to load at start (repeatable)")
    p.add_argument("--history-size", type=int, default=100,
                   help="events kept per resource; older revisions get 410 (default 100)")
    p.add_argument("--bookmark-interval", type=float, default=1.0,
                   help="seconds between bookmarks on quiet watches (default 1)")
    p.add_argument("--default-watch-timeout", type=float, default=1800,
                   help="watch length when the client sends no timeoutSeconds")
    p.add_argument("--max-watch-timeout", type=float, default=0,
                   help="end every watch cleanly after at most this many seconds, whatever "
                        "its timeoutSeconds (default 0: no cap)")
    p.add_argument("--too-large-wait", type=float, default=3.0,
                   help="how long a LIST with a future resourceVersion waits before 504")
    p.add_argument("--initial-rv", type=int, default=1, help="the starting revision")
    p.add_argument("--no-slices", action="store_true",
                   help="start without discovery.k8s.io (an old cluster)")
    p.add_argument("--crd-absent", action="append", default=[], metavar="GROUP",
                   help="start without this CRD group (multicluster.x-k8s.io, "
                        "networking.kubeslice.io, mesh.avesha.io): its paths answer 404 "
                        "until POST /control/crd installs it (repeatable)")
    p.add_argument("--watch-list", action="store_true",
                   help="serve watch-list (sendInitialEvents=true) like a 1.32+ server; "
                        "without it a watch with resourceVersionMatch gets 1.25's 422")
    p.add_argument("--max-connections", type=int, default=256)
    p.add_argument("--api-port", type=int, default=0)
    p.add_argument("--control-port", type=int, default=0)
    p.add_argument("-v", "--verbose", action="store_true", help="log requests to stderr")
    return p.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    if args.http2 and args.plain_http:
        sys.exit("fake_apiserver: --http2 needs TLS (no h2c): drop --plain-http")
    if args.http2:
        try:
            importlib.import_module("h2server")  # fails early if python3-h2 is missing
        except ImportError as e:
            sys.exit(f"fake_apiserver: --http2 needs the h2 module (python3-h2): {e}")
    tokens = args.token or ["test-token"]
    st = state_mod.State(args.history_size, args.initial_rv, tokens, args.bookmark_interval,
                         args.default_watch_timeout, args.too_large_wait, not args.no_slices)
    st.max_watch_timeout_s = args.max_watch_timeout
    st.watch_list = args.watch_list
    for group in args.crd_absent:
        if group not in api.shapes.CRD_GROUPS:
            sys.exit(f"fake_apiserver: --crd-absent: unknown group {group!r}")
        st.crds_absent.add(group)
    for path in args.objects:
        try:
            with open(path) as f:
                data = json.load(f)
            with st.lock:
                for obj in control._items(data):
                    if isinstance(obj, dict) and api.shapes.resource_for(
                            obj.get("kind"), obj.get("apiVersion")) is not None:
                        st.store.apply(obj)
        except (OSError, ValueError, control.BadRequest) as e:
            sys.exit(f"fake_apiserver: cannot load {path}: {e}")

    pki_dir = os.path.abspath(args.pki_dir or tempfile.mkdtemp(prefix="fake-apiserver-"))
    files, ssl_context = {}, None
    if not args.plain_http:
        try:
            files = pki.generate(pki_dir)
        except (OSError, RuntimeError) as e:
            sys.exit(f"fake_apiserver: cannot create the test PKI in {pki_dir}: {e}")
        ssl_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ssl_context.load_cert_chain(files["server.crt"], files["server.key"])
        # Without --http2, ALPN offers only http/1.1 and HTTP/2 clients fall back.
        ssl_context.set_alpn_protocols(["h2", "http/1.1"] if args.http2 else ["http/1.1"])
        if args.client_cert_auth:
            ssl_context.verify_mode = ssl.CERT_OPTIONAL
            ssl_context.load_verify_locations(files["ca.crt"])

    try:
        api_server = Server(("127.0.0.1", args.api_port), http1server.ApiHandler, st, ssl_context,
                            args.max_connections, args.verbose, args.http2_drop)
        control_server = Server(("127.0.0.1", args.control_port), control.ControlHandler, st,
                                None, 64, args.verbose)
    except OSError as e:
        sys.exit(f"fake_apiserver: cannot listen on 127.0.0.1: {e}")

    scheme = "http" if args.plain_http else "https"
    api_port = api_server.server_address[1]
    ready = {"pid": os.getpid(), "api_port": api_port,
             "control_port": control_server.server_address[1],
             "api_url": f"{scheme}://127.0.0.1:{api_port}",
             "control_url": f"http://127.0.0.1:{control_server.server_address[1]}",
             "scheme": scheme, "http2": args.http2, "token": tokens[0], "pki_dir": pki_dir}
    if files:
        ready.update(ca_file=files["ca.crt"], client_cert_file=files["client.crt"],
                     client_key_file=files["client.key"], other_ca_file=files["other-ca.crt"])
    os.makedirs(pki_dir, exist_ok=True)
    ready["kubeconfig"] = os.path.join(pki_dir, "kubeconfig")
    pki.write_kubeconfig(ready["kubeconfig"], ready["api_url"], files.get("ca.crt"),
                         token=tokens[0])
    if files:
        ready["kubeconfig_client_cert"] = os.path.join(pki_dir, "kubeconfig-client-cert")
        pki.write_kubeconfig(ready["kubeconfig_client_cert"], ready["api_url"],
                             files["ca.crt"], client_cert=files["client.crt"],
                             client_key=files["client.key"])

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    for srv in (api_server, control_server):
        threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.2},
                         daemon=True).start()

    text = json.dumps(ready)
    if args.ready_file:
        tmp = args.ready_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(text + "\n")
        os.replace(tmp, args.ready_file)
    print(text, flush=True)

    while not stop.wait(0.5):
        pass
    for srv in (api_server, control_server):
        srv.shutdown()
        srv.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
