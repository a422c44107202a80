#!/usr/bin/python3
"""No debug data on a published port (issue 30, DESIGN §7 "Tenants").

/debug/top-clients names pods and their rates, kubedns's /cache every Service and
endpoint; every pod can reach every port of a DNS pod. The whole pod runs here on free
loopback ports, as in a cluster: kubedns on the conformance objects, the nanny with
frontend-cache, the sidecar. A client on 127.0.0.2 (not the pod's 127.0.0.1) asks every
HTTP port for every debug path:

  - with the default flags, the pod listens on its DNS, health and metrics ports and no
    other (read from /proc: no debug listener at all), each of those answers every debug
    path 404 without a byte of debug data, and kdns_limit_hits_total{limit=
    "debug_on_published_port"} of each program grew by exactly the asks its ports got
    (so the asks really landed);
  - with --debug-address (kubedns and frontend-cache), the debug data is served there
    (top-clients naming 127.0.0.2, whose queries were sent first; /cache holding the
    kubernetes Service), and still nowhere else; the debug address serves no metrics;
  - `make run` (mk/run.sh, as root in a network namespace of its own) turns both debug
    addresses on, on loopback, and prints them.

Closes with `N passed, M failed`. KDNS_KEEP_TMP=1 keeps the logs of a failed run.
"""
import json
import os
import shutil
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dns_wire  # noqa: E402
import harness  # noqa: E402
import pod  # noqa: E402

ATTACKER = "127.0.0.2"
DEBUG_PATHS = ["/debug/top-clients", "/debug/top-clients?n=100", "/debug/pprof/", "/cache",
               "/cache?x=1"]
# What no answer on a published port may contain: top-clients' and /cache's JSON keys.
DEBUG_MARKERS = ['"tracked"', '"clients"', '"services"', "kubernetes"]
LIMIT_SERIES = 'kdns_limit_hits_total{limit="debug_on_published_port"}'
CLUSTER_NAME = pod.CLUSTER_NAME


class Pod(pod.Pod):
    """kubedns, the nanny with frontend-cache, the sidecar; with `debug`, both DNS servers
    get --debug-address on a loopback port of its own."""

    def __init__(self, workdir, debug):
        super().__init__(workdir, ["--objects-file=" + os.path.join(
            harness.ROOT, "test", "conformance", "objects.json")], debug=debug)

    def published(self):
        """{what: port} of every HTTP port a pod in the cluster can reach."""
        return {"kubedns healthz": self.kubedns.healthz,
                "kubedns metrics": self.kubedns.metrics_port,
                "frontend-cache metrics": self.nanny.metrics_port,
                "sidecar": self.sidecar_port}

    def debug(self):
        return {"kubedns debug": self.kubedns.debug_port,
                "frontend-cache debug": self.nanny.debug_port}

    def listening(self):
        """The TCP ports the pod's processes listen on, read from /proc."""
        pids = [self.kubedns.process.pid, self.nanny.pid, self.nanny.child(),
                self.sidecar.pid]
        return listening_ports([pid for pid in pids if pid])

    def limit_hits(self):
        """{program: kdns_limit_hits_total{limit="debug_on_published_port"}}."""
        return {"kubedns": self.kubedns.metric(LIMIT_SERIES),
                "frontend-cache": self.nanny.metrics().get(LIMIT_SERIES),
                "sidecar": harness.metric_sum(harness.scrape_metrics(self.sidecar_port),
                                              LIMIT_SERIES)}


def listening_ports(pids):
    """TCP ports in LISTEN state whose sockets one of `pids` holds."""
    inodes = set()
    for pid in pids:
        fd_dir = "/proc/%d/fd" % pid
        for fd in os.listdir(fd_dir):
            try:
                target = os.readlink(os.path.join(fd_dir, fd))
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[len("socket:["):-1])
    ports = set()
    for table in ("tcp", "tcp6"):
        with open("/proc/%d/net/%s" % (pids[0], table)) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and fields[9] in inodes:  # TCP_LISTEN
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def ask_from_attacker(port, name, count):
    """`count` queries for `name` from 127.0.0.2; how many were answered."""
    answered = 0
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.bind((ATTACKER, 0))
        sock.settimeout(1)
        for i in range(count):
            sock.sendto(dns_wire.build_query(name, "A", dns_wire.CLASS_IN, ident=i, edns=False),
                        ("127.0.0.1", port))
            try:
                sock.recv(4096)
                answered += 1
            except socket.timeout:
                pass
    finally:
        sock.close()
    return answered


def check_published_ports_refuse(pod):
    """Every debug path asked of every published port from 127.0.0.2: 404 and no debug
    data; the asks counted by the program that got them."""
    problems = []
    before = pod.limit_hits()
    asked = {"kubedns": 0, "frontend-cache": 0, "sidecar": 0}
    for what, port in sorted(pod.published().items()):
        for path in DEBUG_PATHS:
            status, body = harness.http_get_from(ATTACKER, port, path)
            asked[what.split()[0]] += 1
            if status != 404:
                problems.append("%s (port %d) answered %s %s" % (what, port, status, path))
            leaked = [marker for marker in DEBUG_MARKERS if marker in body]
            if leaked:
                problems.append("%s %s: the body holds %s: %r" % (what, path, leaked,
                                                                  body[:200]))
    after = pod.limit_hits()
    for program, count in sorted(asked.items()):
        if before[program] is None or after[program] is None:
            problems.append("%s does not export %s" % (program, LIMIT_SERIES))
        elif after[program] - before[program] != count:
            problems.append("%s counted %s debug asks, not the %d it got: did they land?" % (
                program, after[program] - before[program], count))
    return problems


def test_default_flags_serve_no_debug_data_on_any_port(env):
    pod = Pod(env["workdir"], debug=False)
    env["owned"].append(pod)
    problems = []
    expected = set(pod.published().values()) | {pod.kubedns.port, pod.nanny.port}
    listening = pod.listening()
    if listening != expected:
        problems.append("the pod listens on %s, not on its DNS, health and metrics ports %s "
                        "alone" % (sorted(listening), sorted(expected)))
    # The attacker's address reaches the ports (so a 404 below is a refusal, not a miss).
    if harness.http_get_from(ATTACKER, pod.kubedns.metrics_port, "/metrics")[0] != 200:
        problems.append("127.0.0.2 does not reach kubedns's metrics port")
    return problems + check_published_ports_refuse(pod)


def test_debug_address_serves_debug_data_there_only(env):
    pod = Pod(env["workdir"], debug=True)
    env["owned"].append(pod)
    problems = []
    expected = set(pod.published().values()) | set(pod.debug().values()) | {
        pod.kubedns.port, pod.nanny.port}
    listening = pod.listening()
    if listening != expected:
        problems.append("the pod listens on %s, not on %s" % (sorted(listening),
                                                             sorted(expected)))
    # Queries from 127.0.0.2, so top-clients has a client to name.
    for what, port in (("kubedns", pod.kubedns.port), ("frontend-cache", pod.nanny.port)):
        if ask_from_attacker(port, CLUSTER_NAME, 20) < 20:
            problems.append("%s did not answer 127.0.0.2's queries" % what)
    for what, port in sorted(pod.debug().items()):
        status, body = harness.http_get_from(ATTACKER, port, "/debug/top-clients")
        if status != 200:
            problems.append("%s /debug/top-clients: %s %s" % (what, status, body[:200]))
            continue
        clients = [c["client"] for c in json.loads(body).get("clients", [])]
        if ATTACKER + "/32" not in clients:
            problems.append("%s /debug/top-clients does not name %s: %s" % (what, ATTACKER,
                                                                           body[:300]))
        if harness.http_get_from(ATTACKER, port, "/metrics")[0] != 404:
            problems.append("%s serves /metrics: the debug address is for debug data" % what)
    status, body = harness.http_get_from(ATTACKER, pod.kubedns.debug_port, "/cache")
    if status != 200 or '"name":"kubernetes"' not in body:
        problems.append("kubedns debug /cache: %s %s" % (status, body[:200]))
    return problems + check_published_ports_refuse(pod)


def test_make_run_turns_the_debug_addresses_on(env):
    if os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("nsenter") is None:
        raise harness.Skip("needs root, unshare and nsenter (a network namespace of its own)")
    if os.path.realpath(harness.BIN) != os.path.join(harness.ROOT, "build", "bin"):
        raise harness.Skip("mk/run.sh runs build/bin, not $KDNS_BIN")
    # Fixed ports are fine in a network namespace nothing else uses.
    script = "ip link set lo up && exec " + os.path.join(harness.ROOT, "mk", "run.sh")
    run_sh = harness.Process(["unshare", "--net", "sh", "-c", script],
                             os.path.join(env["workdir"], "make-run.log"))
    env["owned"].append(run_sh)

    def get(url):
        result = subprocess.run(["nsenter", "--net=/proc/%d/ns/net" % run_sh.pid, "curl",
                                 "-sS", "-o", "/dev/null", "-w", "%{http_code}", url],
                                capture_output=True, text=True, timeout=30)
        return result.stdout

    if not harness.wait_until(lambda: not run_sh.alive() or
                              "The pod is serving" in run_sh.log(), 120):
        return ["mk/run.sh did not start: " + run_sh.log()[-1500:]]
    problems = []
    for url in ("http://127.0.0.1:10057/cache", "http://127.0.0.1:10057/debug/top-clients",
                "http://127.0.0.1:10058/debug/top-clients"):
        if get(url) != "200":
            problems.append("make run: %s answers %s" % (url, get(url)))
        if url not in run_sh.log():
            problems.append("make run does not print " + url)
    for url in ("http://127.0.0.1:10055/debug/top-clients",
                "http://127.0.0.1:10056/debug/top-clients", "http://127.0.0.1:10055/cache"):
        if get(url) != "404":
            problems.append("make run: %s answers %s, not 404" % (url, get(url)))
    return problems


TESTS = [test_default_flags_serve_no_debug_data_on_any_port,
         test_debug_address_serves_debug_data_there_only,
         test_make_run_turns_the_debug_addresses_on]


if __name__ == "__main__":
    sys.exit(harness.main("kdns-debug-address-", TESTS, reset_each=True))
