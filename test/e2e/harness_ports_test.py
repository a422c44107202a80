#!/usr/bin/python3
"""The ports the suites' servers get, and the wait before a test scrapes them (issue 37,
item 6):

- a server port is outside the ephemeral range (harness.free_ports): dig (BIND 9.18) binds
  its client socket to port 0 with SO_REUSEPORT, and the kernel may hand it the port a kdns
  server holds with SO_REUSEPORT, and dig, connected to that port, reads its own query back
  (the conformance suite's "no QR bit" once, T1-big-headless-udp-truncates);
- a port is handed out once per process, so a port a test picked itself cannot come back as
  a server's metrics port (frontend_cache_upstreams test_loop_detect's refused scrape once);
- servers.wait_metrics, the one wait for a metrics port, fails on a process that is alive
  but does not serve its metrics, and on one that exits, instead of returning.

Closes with `N passed, M failed`."""
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import servers  # noqa: E402


def test_server_ports_are_outside_the_ephemeral_range(env):
    low, high = harness.ephemeral_range()
    ports = harness.free_ports(200) + [harness.free_port() for _ in range(100)]
    p = []
    inside = [port for port in ports if low <= port <= high]
    if inside:
        p.append("%d of %d ports in the ephemeral range %d-%d, e.g. %d"
                 % (len(inside), len(ports), low, high, inside[0]))
    if len(set(ports)) != len(ports):
        p.append("a port handed out twice")
    return p


def test_a_dig_like_client_never_gets_a_server_port(env):
    """What dig does (strace: SO_REUSEPORT, then bind 0.0.0.0:0), many times, next to a
    server socket with SO_REUSEPORT on a free_port(): never the server's port."""
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    server.bind(("127.0.0.1", harness.free_port()))
    port = server.getsockname()[1]
    try:
        for tries in range(1, 20001):
            client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            client.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            client.bind(("0.0.0.0", 0))
            got = client.getsockname()[1]
            client.close()
            if got == port:
                return ["a client bound to port 0 got the server's port %d after %d tries"
                        % (port, tries)]
    finally:
        server.close()
    return []


def test_wait_metrics_fails_on_a_process_without_them(env):
    p = []
    quiet = harness.Process(["sleep", "60"], os.path.join(env["workdir"], "quiet.log"))
    try:
        servers.wait_metrics(quiet, harness.free_port(), "quiet", timeout=1)
        p.append("returned for a process that serves no metrics")
    except RuntimeError:
        pass
    finally:
        quiet.stop()
    gone = harness.Process(["true"], os.path.join(env["workdir"], "gone.log"))
    try:
        servers.wait_metrics(gone, harness.free_port(), "gone")
        p.append("returned for a process that exited")
    except RuntimeError as e:
        if "exited" not in str(e) and "no metrics" not in str(e):
            p.append("unexpected error: %s" % e)
    return p


TESTS = [test_server_ports_are_outside_the_ephemeral_range,
         test_a_dig_like_client_never_gets_a_server_port,
         test_wait_metrics_fails_on_a_process_without_them]

if __name__ == "__main__":
    sys.exit(harness.main("kdns-harness-ports-", TESTS))
