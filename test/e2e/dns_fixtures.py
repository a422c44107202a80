"""Processes and clients shared by the frontend-cache end-to-end tests.

Real servers from Debian started unprivileged on free loopback ports in a temporary
directory (NSD with the example.test zones, unbound with other.test as local data,
dnsmasq), frontend-cache itself, and dig/kdig wrappers that parse what a client sees.
Every process is started in its own session and stopped by its process group, so nothing
outlives the test (NSD forks).
"""
import os
import re
import signal
import socket
import subprocess
import sys
import time
import traceback
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("KDNS_BIN", os.path.join(ROOT, "build", "bin"))
NSD = "/usr/sbin/nsd"
UNBOUND = "/usr/sbin/unbound"
DNSMASQ = "/usr/sbin/dnsmasq"


def free_port(host="127.0.0.1"):
    """A port free for both UDP and TCP on `host` (0.0.0.0: on every address)."""
    for _ in range(50):
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind((host, 0))
        port = udp.getsockname()[1]
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            tcp.bind((host, port))
            return port
        except OSError:
            continue
        finally:
            udp.close()
            tcp.close()
    raise RuntimeError("no free port")


def run_tests(tests, env, after_each=None):
    """Runs each test(env), which returns its problems (empty: passed), honouring
    KDNS_ONLY (a substring of the names to run); prints an ok or FAIL line per test, with
    the problems indented, and returns (passed, failed). after_each(), if given, runs after
    every test (e.g. to clear injected faults)."""
    only = os.environ.get("KDNS_ONLY")
    passed = failed = 0
    for test in tests:
        if only and only not in test.__name__:
            continue
        started = time.monotonic()
        try:
            problems = test(env)
        except Exception:
            problems = ["raised: " + traceback.format_exc()]
        took = time.monotonic() - started
        if problems:
            failed += 1
            print("FAIL %s (%.1fs)" % (test.__name__, took))
            for problem in problems:
                print("    " + str(problem).replace("\n", "\n    "))
        else:
            passed += 1
            print("ok   %s (%.1fs)" % (test.__name__, took))
        sys.stdout.flush()
        if after_each is not None:
            after_each()
    return passed, failed


def stop_all(owned):
    """Stops what a suite started, last first; one that fails to stop does not keep the
    others running."""
    for thing in reversed(owned):
        try:
            thing.stop()
        except Exception:
            traceback.print_exc()


def wait_until(check, timeout=15.0, interval=0.05):
    """Polls check() until it is truthy; returns its last value."""
    deadline = time.time() + timeout
    while True:
        value = check()
        if value or time.time() > deadline:
            return value
        time.sleep(interval)


# -- what a client sees -------------------------------------------------------------------

def fold(line):
    """Folds white space outside quoted strings."""
    out, quoted, space = [], False, False
    for ch in line:
        if ch == '"':
            quoted = not quoted
        if ch in " \t" and not quoted:
            space = True
            continue
        if space and out:
            out.append(" ")
        space = False
        out.append(ch)
    return "".join(out)


class Record:
    """One record as dig prints it."""

    def __init__(self, line):
        parts = line.split(" ", 4)
        self.name, self.ttl, self.cls, self.type = parts[0], int(parts[1]), parts[2], parts[3]
        self.rdata = parts[4] if len(parts) > 4 else ""

    def key(self):
        """Without the TTL, the name lower-cased."""
        return (self.name.lower(), self.cls, self.type, self.rdata.lower())

    def __repr__(self):
        return "%s %d %s %s %s" % (self.name, self.ttl, self.cls, self.type, self.rdata)


class Answer:
    def __init__(self, output, returncode):
        self.raw = output
        self.returncode = returncode
        self.status = None
        self.flags = []
        self.edns = False
        self.edns_udp = None
        self.edns_flags = []
        self.question = None
        self.sections = {"ANSWER": [], "AUTHORITY": [], "ADDITIONAL": []}
        section = None
        for raw in output.splitlines():
            line = raw.strip()
            m = re.search(r"status: ([A-Z0-9]+)", line)
            if m and self.status is None:
                self.status = m.group(1)
            m = re.match(r";; [Ff]lags: ([a-z ]*);", line)
            if m:
                self.flags = m.group(1).split()
            m = re.match(r"; EDNS: version: \d+, flags:([a-z ]*); udp: (\d+)", line)
            if m:  # dig
                self.edns = True
                self.edns_flags = m.group(1).split()
                self.edns_udp = int(m.group(2))
            m = re.match(r";; Version: \d+; flags:([a-z ]*); UDP size: (\d+)", line)
            if m:  # kdig
                self.edns = True
                self.edns_flags = m.group(1).split()
                self.edns_udp = int(m.group(2))
            m = re.match(r";; ([A-Z]+) SECTION:", line)
            if m:
                section = m.group(1)
                continue
            if section == "QUESTION" and line.startswith(";") and self.question is None:
                self.question = fold(line[1:])
                continue
            if not line or line.startswith(";"):
                if not line:
                    section = None
                continue
            if section in self.sections:
                self.sections[section].append(Record(fold(line)))

    @property
    def answer(self):
        return self.sections["ANSWER"]

    @property
    def authority(self):
        return self.sections["AUTHORITY"]

    @property
    def additional(self):
        return self.sections["ADDITIONAL"]

    def rdatas(self, rtype=None):
        return sorted(r.rdata for r in self.answer if rtype is None or r.type == rtype)

    def __repr__(self):
        return "%s %s answer=%s authority=%s" % (self.status, self.flags, self.answer,
                                                 self.authority)


def dig(port, name, qtype="A", qclass=None, *options, timeout=5, client="dig"):
    """Asks 127.0.0.1:port with real dig (or kdig) and parses the reply."""
    args = [client, "@127.0.0.1", "-p", str(port), name, qtype] + ([qclass] if qclass else [])
    if client == "dig":
        args += ["+time=%d" % timeout, "+tries=1", "+nocookie", "+nostats"]
    else:
        args += ["+time=%d" % timeout, "+retry=0", "+nostats"]
    args += list(options)
    run = subprocess.run(args, capture_output=True, text=True, timeout=timeout * 3 + 30)
    return Answer(run.stdout, run.returncode)


def dig_async(port, name, qtype="A", *options, timeout=5):
    """Starts dig in the background; finish with Popen.communicate and Answer."""
    args = ["dig", "@127.0.0.1", "-p", str(port), name, qtype, "+time=%d" % timeout,
            "+tries=1", "+nocookie", "+nostats"] + list(options)
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def parse_dnsperf(text):
    """dnsperf's summary: sent, completed, lost and qps (floats, None when missing) and
    codes (response code -> count)."""
    out = {}
    for key, pattern in (("sent", r"Queries sent:\s+(\d+)"),
                         ("completed", r"Queries completed:\s+(\d+)"),
                         ("lost", r"Queries lost:\s+(\d+)"),
                         ("qps", r"Queries per second:\s+([\d.]+)")):
        m = re.search(pattern, text)
        out[key] = float(m.group(1)) if m else None
    m = re.search(r"Response codes:\s+(.*)", text)
    codes = {}
    if m:
        for code, count in re.findall(r"([A-Z]+) (\d+)", m.group(1)):
            codes[code] = int(count)
    out["codes"] = codes
    return out


# -- processes ----------------------------------------------------------------------------

class Process:
    """A child in its own process group, with its output in a log file."""

    def __init__(self, argv, log_path, env=None):
        self.argv = argv
        self.log_path = log_path
        self.log_file = open(log_path, "w")
        self.proc = subprocess.Popen(argv, stdout=self.log_file, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True,
                                     env=env)

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc.poll() is None

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def signal(self, number):
        if self.alive():
            os.kill(self.proc.pid, number)

    def wait(self, timeout):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, timeout=10):
        """SIGTERM to the group, SIGKILL after `timeout`; returns the exit code."""
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
        if self.wait(timeout) is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.proc.wait(timeout=10)
        else:
            # The leader is gone; its children (NSD's servers) may not be yet.
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self.log_file.close()
        return self.proc.returncode


EXAMPLE_ZONE = """$ORIGIN example.test.
$TTL 3600
@        IN SOA  ns1 hostmaster 2024010101 7200 3600 1209600 3600
@        IN NS   ns1
@        IN MX   10 mail
@        IN TXT  "v=spf1 -all"
ns1      IN A    127.0.0.1
www      IN A    192.0.2.10
www      IN A    192.0.2.11
www      IN AAAA 2001:db8::10
mail     IN A    192.0.2.25
txt      IN TXT  "hello world" "second string"
_http._tcp IN SRV 10 60 80 www
alias    IN CNAME www
chain    IN CNAME alias
outside  IN CNAME www.other.test.
onlytxt  IN TXT  "no address here"
short 300 IN A   192.0.2.12
MiXeD    IN A    192.0.2.44
*.wild   IN A    192.0.2.55
sub      IN NS   ns.sub
ns.sub   IN A    127.0.0.1
"""

REVERSE_ZONE = """$ORIGIN 2.0.192.in-addr.arpa.
$TTL 3600
@   IN SOA ns1.example.test. hostmaster.example.test. 1 7200 3600 1209600 600
@   IN NS  ns1.example.test.
10  IN PTR www.example.test.
25  IN PTR mail.example.test.
"""


def big_zone():
    """bigtxt: TXT records of about 1000 bytes in all (more than 512)."""
    lines = ["$ORIGIN big.test.", "$TTL 3600",
             "@ IN SOA ns1.example.test. hostmaster.example.test. 1 7200 3600 1209600 60",
             "@ IN NS ns1.example.test."]
    for i in range(16):
        lines.append('bigtxt IN TXT "%02d-%s"' % (i, "x" * 50))
    for i in range(40):
        lines.append("many IN A 10.2.0.%d" % (i + 1))
    return "\n".join(lines) + "\n"


class Nsd:
    """NSD serving example.test, 2.0.192.in-addr.arpa and big.test."""

    def __init__(self, workdir):
        self.dir = os.path.join(workdir, "nsd")
        os.makedirs(self.dir, exist_ok=True)
        for name, text in (("example.test.zone", EXAMPLE_ZONE),
                           ("reverse.zone", REVERSE_ZONE), ("big.test.zone", big_zone())):
            with open(os.path.join(self.dir, name), "w") as f:
                f.write(text)
        last = ""
        for _ in range(5):
            self.port = free_port()
            conf = os.path.join(self.dir, "nsd.conf")
            with open(conf, "w") as f:
                f.write(NSD_CONF.format(port=self.port, dir=self.dir))
            self.process = Process([NSD, "-d", "-c", conf], os.path.join(self.dir, "nsd.out"))
            if wait_until(lambda: not self.process.alive() or dig(
                    self.port, "example.test", "SOA", timeout=1).status == "NOERROR", 20):
                if self.process.alive():
                    return
            last = self.process.log()
            self.process.stop()
        raise RuntimeError("nsd did not start: " + last[-1500:])

    @property
    def address(self):
        return "127.0.0.1#%d" % self.port

    def stop(self):
        self.process.stop()


NSD_CONF = """server:
  ip-address: 127.0.0.1@{port}
  server-count: 1
  do-ip6: no
  username: ""
  chroot: ""
  zonesdir: "{dir}"
  pidfile: "{dir}/nsd.pid"
  database: ""
  zonelistfile: "{dir}/zone.list"
  xfrdfile: "{dir}/xfrd.state"
  logfile: "{dir}/nsd.log"
  hide-version: yes
  verbosity: 1
  rrl-ratelimit: 0
  rrl-whitelist-ratelimit: 0
remote-control:
  control-enable: no
zone:
  name: "example.test"
  zonefile: "example.test.zone"
zone:
  name: "2.0.192.in-addr.arpa"
  zonefile: "reverse.zone"
zone:
  name: "big.test"
  zonefile: "big.test.zone"
"""


class Unbound:
    """unbound with other.test as static local data."""

    def __init__(self, workdir):
        self.dir = os.path.join(workdir, "unbound")
        os.makedirs(self.dir, exist_ok=True)
        last = ""
        for _ in range(5):
            self.port = free_port()
            conf = os.path.join(self.dir, "unbound.conf")
            with open(conf, "w") as f:
                f.write(UNBOUND_CONF.format(port=self.port, dir=self.dir))
            self.process = Process([UNBOUND, "-d", "-c", conf],
                                   os.path.join(self.dir, "unbound.out"))
            if wait_until(lambda: not self.process.alive() or dig(
                    self.port, "www.other.test", timeout=1).status == "NOERROR", 20):
                if self.process.alive():
                    return
            last = self.process.log()
            self.process.stop()
        raise RuntimeError("unbound did not start: " + last[-1500:])

    @property
    def address(self):
        return "127.0.0.1#%d" % self.port

    def stop(self):
        self.process.stop()


UNBOUND_CONF = """server:
  interface: 127.0.0.1@{port}
  port: {port}
  do-daemonize: no
  username: ""
  chroot: ""
  directory: "{dir}"
  pidfile: "{dir}/unbound.pid"
  use-syslog: no
  logfile: ""
  num-threads: 1
  do-ip6: no
  do-not-query-localhost: no
  access-control: 127.0.0.0/8 allow
  module-config: "iterator"
  local-zone: "other.test." static
  local-data: "other.test. 3600 IN SOA ns.other.test. hostmaster.other.test. 1 7200 3600 1209600 300"
  local-data: "other.test. 3600 IN NS ns.other.test."
  local-data: "ns.other.test. 3600 IN A 127.0.0.1"
  local-data: "www.other.test. 600 IN A 198.51.100.7"
  local-data: "www.other.test. 600 IN AAAA 2001:db8::7"
  local-data: 'other.test. 600 IN TXT "served by unbound"'
remote-control:
  control-enable: no
"""


class FrontendCache:
    """frontend-cache on 127.0.0.1, a free port, metrics on a free port."""

    def __init__(self, workdir, name, *args, port=None, metrics=True, wait=True,
                 threads=2, lameduck="0"):
        self.port = port or free_port()
        self.metrics_port = free_port("0.0.0.0") if metrics else None
        argv = [os.path.join(BIN, "frontend-cache"), "-k", "--no-resolv",
                "--listen-address=127.0.0.1", "--port=%d" % self.port,
                "--threads=%d" % threads, "--lameduck=%s" % lameduck, "--log-facility=-"]
        if metrics:
            argv.append("--prometheus-port=%d" % self.metrics_port)
        argv += list(args)
        self.process = Process(argv, os.path.join(workdir, name + ".log"))
        if wait and not wait_until(
                lambda: not self.process.alive() or "serving DNS on" in self.process.log(), 20):
            raise RuntimeError("%s did not start: %s" % (name, self.process.log()[-1500:]))
        if wait and not self.process.alive():
            raise RuntimeError("%s exited: %s" % (name, self.process.log()[-1500:]))

    def metrics_text(self):
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.metrics_port,
                                    timeout=5) as r:
            return r.read().decode()

    def metric(self, series):
        """The sample `series` (name{labels} exactly), or the sum over a family's labels."""
        total = 0.0
        for line in self.metrics_text().splitlines():
            if line.startswith("#"):
                continue
            name = line.rsplit(" ", 1)[0]
            if name == series or ("{" not in series and name.startswith(series + "{")):
                total += float(line.rsplit(" ", 1)[1])
        return total

    def dig(self, name, qtype="A", *options, **kw):
        return dig(self.port, name, qtype, None, *options, **kw)

    def chaos(self, name, qtype="TXT", *options):
        return dig(self.port, name, qtype, "CH", *options)

    def stop(self):
        return self.process.stop()


class Dnsmasq:
    """Debian's dnsmasq, unprivileged options, on 127.0.0.1 and a free port."""

    def __init__(self, workdir, name, *args):
        import pwd
        user = pwd.getpwuid(os.getuid()).pw_name
        last = ""
        for _ in range(5):
            self.port = free_port()
            argv = [DNSMASQ, "-k", "-C", "/dev/null", "--no-resolv", "--no-hosts",
                    "--port=%d" % self.port, "--listen-address=127.0.0.1",
                    "--bind-interfaces", "--user=" + user, "--pid-file=",
                    "--log-facility=-"] + list(args)
            self.process = Process(argv, os.path.join(workdir, name + ".log"))
            if wait_until(lambda: not self.process.alive() or dig(
                    self.port, "version.bind", "TXT", "CH", timeout=1).status == "NOERROR", 20):
                if self.process.alive():
                    return
            last = self.process.log()
            self.process.stop()
        raise RuntimeError("dnsmasq did not start: " + last[-1500:])

    def stop(self):
        return self.process.stop()
