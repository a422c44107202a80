"""Plumbing for kubedns_api_bench.py: the two processes under test (the fake API server and
kubedns) and what reads them (/proc, /metrics, the fake's control port), a minimal DNS
client over UDP, dnsperf, a LIST walker and a plain watch client. Standard library only;
run with /usr/bin/python3.
"""
import contextlib
import http.client
import json
import os
import re
import socket
import shutil
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
import dns_wire  # noqa: E402  (build_query)
import harness  # noqa: E402  (free_ports, parse_dnsperf)
FAKE_DIR = os.path.join(ROOT, "test", "fake_apiserver")
PYTHON = "/usr/bin/python3"
DNSPERF = "/usr/bin/dnsperf"
DNSMASQ = "/usr/sbin/dnsmasq"
ZONE = "cluster.local."
HZ = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = 500  # kubedns's LIST page size, for the fake-alone walk


class Broken(Exception):
    """Something that is not a timing: the benchmark cannot go on."""


@contextlib.contextmanager
def bench_workdir(prefix):
    """A temporary directory for a benchmark's files, removed at the end; kept (and said)
    with KEEP_TMP=1, as bench_lib.sh does for the shell benchmarks."""
    workdir = tempfile.mkdtemp(prefix=prefix)
    try:
        yield workdir
    finally:
        if os.environ.get("KEEP_TMP") == "1":
            print("kept " + workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def env_int(name, default):
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        raise Broken(f"{name} must be an integer") from None


def env_float(name, default):
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        raise Broken(f"{name} must be a number") from None


def cpu_s(pid, tid=None):
    """utime + stime in seconds of a process (all threads), or of one thread."""
    path = f"/proc/{pid}/stat" if tid is None else f"/proc/{pid}/task/{tid}/stat"
    try:
        with open(path) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / HZ


def vm(pid):
    """{"VmRSS": bytes, "VmHWM": bytes, ...} from /proc/PID/status."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Vm") and line.rstrip().endswith("kB"):
                name, value = line.split(":", 1)
                out[name] = int(value.split()[0]) * 1024
    return out


def threads(pid, dns_threads):
    """{label: [tid]} for kubedns, from the names its threads give themselves
    (common/base/thread_name.h): the DNS threads and their receiver threads ("dns",
    "dns-receiver") are "dns", the record source's is "source"."""
    labels = {"main": [], "source": [], "dns": [], "other": []}
    for tid in sorted(int(t) for t in os.listdir(f"/proc/{pid}/task")):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
        except OSError:
            continue  # ended meanwhile
        if tid == pid:
            labels["main"].append(tid)
        elif name == "source":
            labels["source"].append(tid)
        elif name.startswith("dns"):
            labels["dns"].append(tid)
        else:
            labels["other"].append(tid)
    if len(labels["dns"]) < dns_threads or not labels["source"]:
        raise Broken("kubedns's threads are not named as expected: %s" % labels)
    return labels


def thread_cpu(pid, labels):
    return {name: sum(cpu_s(pid, t) for t in tids) for name, tids in labels.items()}


def mib(n):
    return n / (1 << 20)


def dns_query(qid, name, qtype=1):
    """A query without RD or EDNS (dns_wire.build_query)."""
    return dns_wire.build_query(name, qtype, ident=qid, edns=False, rd=False)


def _skip_name(msg, i):
    while True:
        n = msg[i]
        if n == 0:
            return i + 1
        if n & 0xC0 == 0xC0:
            return i + 2
        i += n + 1


def dns_answer(msg):
    """(id, rcode, [IPv4 addresses in the answer section])."""
    qid, flags, qd, an = struct.unpack(">HHHH", msg[:8])
    i = 12
    for _ in range(qd):
        i = _skip_name(msg, i) + 4
    ips = []
    for _ in range(an):
        i = _skip_name(msg, i)
        rtype, _, _, rdlen = struct.unpack(">HHIH", msg[i:i + 10])
        i += 10
        if rtype == 1 and rdlen == 4:
            ips.append(socket.inet_ntoa(msg[i:i + 4]))
        i += rdlen
    return qid, flags & 0xF, ips


class Fake:
    def __init__(self, workdir):
        self.dir = os.path.join(workdir, "fake")
        os.makedirs(self.dir)
        ready = os.path.join(self.dir, "ready.json")
        self.log = open(os.path.join(self.dir, "fake.log"), "w")
        # Events kept per resource: a watch must never fall behind by more than this under
        # churn (the real watch cache holds far more than the fake's default 100).
        self.proc = subprocess.Popen(
            [PYTHON, os.path.join(FAKE_DIR, "fake_apiserver.py"), "--pki-dir", self.dir,
             "--ready-file", ready, "--history-size", "100000"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while not os.path.exists(ready):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise Broken("the fake API server did not start; see " + self.log.name)
            time.sleep(0.05)
        with open(ready) as f:
            self.info = json.load(f)
        self.pid = self.proc.pid

    def control(self, path, body=None, timeout=30):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.info["control_url"] + path, data=data,
                                         method="GET" if body is None else "POST")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return json.load(response)
        except urllib.error.HTTPError as e:
            raise Broken(f"fake control {path}: {e.code} {e.read()[:300]!r}") from None

    def stop(self):
        stop_process(self.proc)
        self.log.close()


class Upstream:
    """The upstream resolver kubedns forwards to: Debian's dnsmasq on a free loopback port,
    answering every name NXDOMAIN at once (--local=/#/), as a resolver would the reverse
    names of addresses the cluster no longer has (the query mix asks PTRs of endpoints the
    churn replaces). Without it kubedns would forward those to the machine's resolver,
    whose latency and losses are not kubedns's figures."""

    def __init__(self, workdir):
        self.port = harness.free_port()
        self.log = open(os.path.join(workdir, "upstream.log"), "w")
        self.proc = subprocess.Popen(
            [DNSMASQ, "--keep-in-foreground", "--no-resolv", "--no-hosts", "--conf-file=/dev/null",
             "--listen-address=127.0.0.1", "--bind-interfaces", "--port=%d" % self.port,
             "--local=/#/", "--cache-size=0", "--user=root", "--pid-file="],
            stdout=self.log, stderr=subprocess.STDOUT)

    def stop(self):
        stop_process(self.proc)
        self.log.close()


class Kubedns:
    """kubedns on free loopback ports, its records from `source_args` (--kubecfg-file=...
    or --objects-file=...), its log in `log_path`."""

    def __init__(self, bin_dir, log_path, source_args, dns_threads=1, nameservers=""):
        self.port, self.healthz, self.metrics_port = harness.free_ports(3)
        self.dns_threads = dns_threads
        self.log_path = log_path
        self.log = open(self.log_path, "w")
        self.started = time.monotonic()
        self.started_wall = time.time()
        self.proc = subprocess.Popen(
            [os.path.join(bin_dir, "kubedns")] + source_args +
            ["--dns-bind-address=127.0.0.1", "--dns-port=%d" % self.port,
             "--http-bind-address=127.0.0.1", "--healthz-port=%d" % self.healthz,
             "--metrics-port=%d" % self.metrics_port, "--domain=" + ZONE,
             "--dns-threads=%d" % dns_threads, "--logtostderr"] +
            (["--nameservers=" + nameservers] if nameservers else []),
            stdout=self.log, stderr=subprocess.STDOUT)
        self.pid = self.proc.pid

    def ready(self):
        """True once /readiness answers 200 (a raw HTTP/1.0 GET: cheap to poll)."""
        try:
            with socket.create_connection(("127.0.0.1", self.healthz), timeout=1) as s:
                s.sendall(b"GET /readiness HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
                head = s.recv(64)
            return head.startswith(b"HTTP/1.") and head[9:12] == b"200"
        except OSError:
            return False

    def wait_ready(self, limit_s=600):
        """Seconds from exec to the first 200 of /readiness."""
        deadline = time.monotonic() + limit_s
        while not self.ready():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise Broken("kubedns did not become ready (exit %s); see %s" %
                             (self.proc.poll(), self.log_path))
            time.sleep(0.02)
        return time.monotonic() - self.started

    def settle(self, limit_s=600):
        """VmRSS once it stops changing (a load and its trim are over)."""
        deadline = time.monotonic() + limit_s
        last = None
        while time.monotonic() < deadline:
            now = vm(self.pid)["VmRSS"]
            if now == last:
                return now
            last = now
            time.sleep(0.5)
        return last

    def metric(self, family):
        """The sum of a family's samples; 0 when kubedns has none."""
        return metric_sum(self.metrics(), family)

    def metrics(self):
        """{series: value} of /metrics (series with their labels, as written)."""
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.metrics_port,
                                    timeout=5) as r:
            text = r.read().decode()
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                series, _, value = line.rpartition(" ")
                try:
                    out[series] = float(value)
                except ValueError:
                    pass
        return out

    def log_marks(self):
        """[(seconds after exec, what)] of the sync milestones in kubedns's log (glog's
        local wall-clock timestamps)."""
        marks = []
        with open(self.log_path, errors="replace") as f:
            for line in f:
                m = re.match(r"I(\d{8}) (\d\d):(\d\d):(\d\d\.\d+) .*?\] (.*)", line)
                if not m:
                    continue
                text = m.group(5)
                what = re.search(r"k8s (\w+): listed (\d+) objects", text)
                if what:
                    what = "%s listed" % what.group(1)
                elif "initial sync done:" in text:
                    what = "synced"
                else:
                    continue
                day = time.mktime(time.strptime(m.group(1), "%Y%m%d"))
                t = day + int(m.group(2)) * 3600 + int(m.group(3)) * 60 + float(m.group(4))
                marks.append((t - self.started_wall, what))
        return marks

    def log_tail(self, n=15):
        with open(self.log_path, errors="replace") as f:
            return "".join(f.readlines()[-n:])

    def stop(self):
        stop_process(self.proc)
        self.log.close()


def stop_process(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def metric_sum(metrics, family):
    """Sum of a family's samples (any labels)."""
    return sum(v for k, v in metrics.items()
               if k == family or k.startswith(family + "{"))


def histogram(metrics, family):
    """(count, sum, [(le, cumulative count)]) of a histogram family."""
    buckets = []
    for k, v in metrics.items():
        m = re.fullmatch(re.escape(family) + r'_bucket\{(?:.*,)?le="([^"]+)"\}', k)
        if m:
            buckets.append((float("inf") if m.group(1) == "+Inf" else float(m.group(1)), v))
    buckets.sort()
    return metrics.get(family + "_count", 0.0), metrics.get(family + "_sum", 0.0), buckets


def bucket_quantile(q, before, after):
    """Upper bound of the bucket holding quantile q of the observations between two
    scrapes of a histogram (None without observations)."""
    count = after[0] - before[0]
    if count <= 0:
        return None
    old = dict(before[2])
    for le, cum in after[2]:
        if cum - old.get(le, 0.0) >= q * count:
            return le
    return float("inf")


def list_walk(fake, path):
    """Walks a LIST in pages of 500 with gzip, as kubedns does, on one TLS connection.
    Returns (pages, seconds, bytes on the wire)."""
    ctx = ssl.create_default_context(cafile=fake.info["ca_file"])
    conn = http.client.HTTPSConnection("127.0.0.1", fake.info["api_port"], context=ctx,
                                       timeout=120)
    headers = {"Authorization": "Bearer " + fake.info["token"], "Accept-Encoding": "gzip",
               "Accept": "application/json"}
    token, pages, wire = None, 0, 0
    start = time.monotonic()
    while True:
        url = path + "?limit=%d" % PAGE_SIZE
        if token:
            url += "&continue=" + urllib.request.quote(token, safe="")
        conn.request("GET", url, headers=headers)
        r = conn.getresponse()
        body = r.read()
        if r.status != 200:
            raise Broken(f"fake LIST {url}: HTTP {r.status}")
        wire += len(body)
        if r.getheader("Content-Encoding") == "gzip":
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(body, 4096)
        else:
            head = body[:4096]
        pages += 1
        m = re.search(rb'"continue":"([^"]*)"', head.split(b'"items":', 1)[0])
        token = m.group(1).decode() if m else None
        if not token:
            break
    conn.close()
    return pages, time.monotonic() - start, wire


def run_dnsperf(port, queries, duration, clients, rate=None):
    """One dnsperf run over the query file `queries` against 127.0.0.1:`port` for `duration`
    s (at `rate` queries/s, or as fast as it goes): qps, completed, lost, response codes."""
    cmd = [DNSPERF, "-s", "127.0.0.1", "-p", str(port), "-d", queries, "-c", str(clients),
           "-l", str(duration)] + (["-Q", str(rate)] if rate else [])
    run = subprocess.run(cmd, capture_output=True, text=True)
    out = run.stdout + run.stderr
    figures = harness.parse_dnsperf(out)
    if figures["qps"] is None:
        raise Broken("dnsperf gave no result: " + out[-500:])
    return {"qps": figures["qps"],
            "completed": None if figures["completed"] is None else int(figures["completed"]),
            "lost": None if figures["lost"] is None else int(figures["lost"]), "rate": rate,
            "codes": figures["codes_line"] or "?"}


def dnsperf(dns, queries, duration, cfg, labels, fake_pid, rate=None, warmup=True):
    """Runs dnsperf against kubedns (at `rate` queries/s, or as fast as it goes); returns
    qps, completed, lost, response codes, kubedns CPU by thread, the fake's CPU."""
    if warmup:  # page faults, caches; not counted
        run_dnsperf(dns.port, queries, 1, cfg["clients"], rate)
    before = thread_cpu(dns.pid, labels)
    fake_before = cpu_s(fake_pid)
    result = run_dnsperf(dns.port, queries, duration, cfg["clients"], rate)
    after = thread_cpu(dns.pid, labels)
    result["cpu"] = {k: after[k] - before[k] for k in after}
    result["fake_cpu"] = cpu_s(fake_pid) - fake_before
    return result


def capacity(r, labels=None):
    """kubedns CPU microseconds (of the labelled threads, default all) per answered query."""
    cpu = sum(v for k, v in r["cpu"].items() if labels is None or k in labels)
    return cpu * 1e6 / r["completed"] if r["completed"] else 0.0


def print_perf(name, r):
    cpu = r["cpu"]
    print("  %-18s %7.0f queries/s (%s lost); kubedns CPU: DNS thread(s) %.2f s = %.2f us/query,"
          " source thread %.2f s, other %.2f s" % (
              name + (" at -Q %d" % r["rate"] if r["rate"] else ""), r["qps"], r["lost"],
              cpu["dns"], capacity(r, ("dns",)), cpu["source"], cpu["main"] + cpu["other"]))
    if not r["rate"]:
        print("  %-18s response codes: %s" % ("", r["codes"]))
    elif r["qps"] < 0.95 * r["rate"]:
        print("  %-18s (short of the -Q rate: CPU per query is not comparable)" % "")


def target(ok, text):
    """The issue's target beside a figure, judged on the figure as printed."""
    return "target %s: %s" % (text, "met" if ok else "NOT met")


def percentile(sorted_values, q):
    if not sorted_values:
        return float("nan")
    i = min(len(sorted_values) - 1, max(0, int(round(q * (len(sorted_values) - 1)))))
    return sorted_values[i]


def watch_observer(ready_file, seconds, rv, out_path):
    """A plain watch client (run as its own process): notes when each probe address first
    arrives on an EndpointSlice watch from `rv`, to tell the fake's share of the latency."""
    with open(ready_file) as f:
        info = json.load(f)
    ctx = ssl.create_default_context(cafile=info["ca_file"])
    sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", info["api_port"])),
                           server_hostname="127.0.0.1")
    sock.sendall(("GET /apis/discovery.k8s.io/v1/endpointslices?watch=1&resourceVersion=%s "
                  "HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n\r\n"
                  % (rv, info["token"])).encode())
    sock.settimeout(0.2)
    print("watching", flush=True)
    seen, tail = {}, b""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            data = sock.recv(1 << 20)
        except socket.timeout:
            continue
        if not data:
            break
        now = time.monotonic()
        for ip in re.findall(rb'"addresses":\["(10\.240\.[0-9.]+)"\]', tail + data):
            seen.setdefault(ip.decode(), now)
        tail = data[-64:]
    with open(out_path, "w") as f:
        json.dump(seen, f)


class Asker(threading.Thread):
    """Asks names (A) every `interval` s and counts answers that are not the expected set."""

    def __init__(self, port, checks, interval=0.005):
        super().__init__(daemon=True)
        self.port, self.checks, self.interval = port, checks, interval
        self.asked = self.failed = 0
        self.failures = {}
        self.stop_event = threading.Event()

    def run(self):
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.connect(("127.0.0.1", self.port))
        sock.settimeout(1.0)
        qid = 0
        while not self.stop_event.is_set():
            for name, want in self.checks:
                qid = qid % 60000 + 1
                self.asked += 1
                try:
                    sock.send(dns_query(qid, name))
                    while True:
                        got_id, rcode, ips = dns_answer(sock.recv(4096))
                        if got_id == qid:
                            break
                    why = None if rcode == 0 and sorted(ips) == want else "rcode %d, %d A" % (
                        rcode, len(ips))
                except socket.timeout:
                    why = "timeout"
                if why:
                    self.failed += 1
                    self.failures[why] = self.failures.get(why, 0) + 1
            self.stop_event.wait(self.interval)
        sock.close()


def api_get(fake, path):
    """GET one API object from the fake (HTTPS, token) as JSON."""
    ctx = ssl.create_default_context(cafile=fake.info["ca_file"])
    conn = http.client.HTTPSConnection("127.0.0.1", fake.info["api_port"], context=ctx,
                                       timeout=30)
    try:
        conn.request("GET", path, headers={"Authorization": "Bearer " + fake.info["token"]})
        r = conn.getresponse()
        body = r.read()
        if r.status != 200:
            raise Broken("fake GET %s: HTTP %d" % (path, r.status))
        return json.loads(body)
    finally:
        conn.close()

