"""The one end-to-end test harness: everything the suites in test/e2e/ (and the fake API
server's self-test) share, so that no suite carries its own copy.

- the one suite main, main(): tools and needs checked, a work directory, the shared set-up,
  the tests (run_tests: one ok/FAIL line per test) or phases and checks (Checks), the
  closing `N passed, M failed` (finish()) that test/run_suites.sh sums, the release;
- free ports (outside the ephemeral range: free_ports), processes started in their own
  session and stopped by their process group (NSD forks), so nothing outlives a suite (the
  servers themselves: servers.py; the kube-dns pod: pod.py);
- a ConfigMap directory written as the kubelet writes it (the `..data` symlink swap);
- waits on a condition (wait_until, time_until, eventually) instead of fixed sleeps: a
  check that something did not happen first waits for a positive sign that it would have
  by then (a later answer, a counter or log line that moved);
- dig/kdig wrappers that parse what a client sees (a raw-UDP client: dns_wire.py);
- Prometheus text scraping and parsing, and dnsperf's summary (the benchmarks' too).
"""
import http.client
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("KDNS_BIN", os.path.join(ROOT, "build", "bin"))
PYTHON = "/usr/bin/python3"  # sees Debian's packages (yaml, h2)
# A sanitizer build (`make asan`, `make tsan`: binaries in build/asan/bin, build/tsan/bin)
# takes several times the memory of a release build, so memory bounds are not checked there.
SANITIZED = os.path.basename(os.path.dirname(os.path.abspath(BIN))) in ("asan", "tsan")


def program_version(program):
    """(version, revision) the built `program` reports: its `--version` line reads
    "kubedns version 0.2.0-3-gabc1234 (revision <commit>)" (mk/version.sh's, at build time)."""
    out = subprocess.run([os.path.join(BIN, program), "--version"], capture_output=True,
                         text=True, timeout=10).stdout
    m = re.match(r"%s version (\S+) \(revision (\S+)\)$" % re.escape(program),
                 out.splitlines()[0] if out else "")
    if not m:
        raise AssertionError("%s --version printed %r" % (program, out))
    return m.group(1), m.group(2)


def rss_kib(pid):
    """VmRSS of process `pid` in KiB (0 when /proc does not say)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def ephemeral_range():
    """(low, high): the ports the kernel hands out to sockets bound to port 0 (a client's
    source port), /proc/sys/net/ipv4/ip_local_port_range."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(word) for word in f.read().split())
        return low, high
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


# The ports this process has handed out: never handed out twice, so that a port a test
# picked itself cannot come back as a server's metrics port (or the other way round).
_HANDED_OUT = set()


def _server_ports():
    """Candidates, at random: 1024-65535 outside the ephemeral range. A server port inside it
    can be a client's source port too: dig (BIND 9.18) binds port 0 with SO_REUSEPORT, so the
    kernel may give it the very port a kdns server holds with SO_REUSEPORT (same user), and
    dig, connected to it, then reads its own query back (no QR bit); and a port released
    between free_ports and the server's bind can be taken by any client's connect. Outside
    the range, no port-0 bind ever gets it."""
    low, high = ephemeral_range()
    spans = [(1024, low - 1), (high + 1, 65535)]
    spans = [(first, last) for first, last in spans if first <= last]
    total = sum(last - first + 1 for first, last in spans)
    for _ in range(4 * total):
        index = random.randrange(total)
        for first, last in spans:
            if index <= last - first:
                port = first + index
                break
            index -= last - first + 1
        if port not in _HANDED_OUT:
            yield port


def free_ports(n, host="127.0.0.1"):
    """`n` distinct ports free for both UDP and TCP on `host` (0.0.0.0: on every address),
    held together until all are found (the benchmarks' too: bench_lib.sh free_port); outside
    the ephemeral range (_server_ports says why) and never one this process handed out."""
    ports, held = [], []
    try:
        for port in _server_ports():
            if len(ports) == n:
                break
            udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            held += [udp, tcp]
            try:
                udp.bind((host, port))
                tcp.bind((host, port))
            except OSError:
                continue
            ports.append(port)
        if len(ports) < n:
            raise RuntimeError("no free port")
        _HANDED_OUT.update(ports)
        return ports
    finally:
        for sock in held:
            sock.close()


def free_port(host="127.0.0.1"):
    """A port free for both UDP and TCP on `host` (0.0.0.0: on every address)."""
    return free_ports(1, host)[0]


class Skip(Exception):
    """Raised by a test that cannot run here: SKIP with the reason, counted as skipped.
    `provided`: what it lacks is something the install step (mk/deps.sh) provides (a tool,
    a package), so where that step ran (CI=true) the skip is a failure instead: a test the
    install should have made possible did not run."""

    def __init__(self, reason, provided=False):
        super().__init__(reason)
        self.provided = provided


def in_ci():
    """Whether the install step ran (CI=true, as .ci/run and CI set it)."""
    return os.environ.get("CI") == "true"


def skip_counts(name, reason, provided):
    """Prints why `name` does not run; returns (failed, skipped): a SKIP line and (0, 1), or,
    under CI=true for what the install step provides, a FAIL line and (1, 0)."""
    if provided and in_ci():
        print("FAIL %s: skipped under CI=true, but the install step provides what it needs: %s"
              % (name, reason))
        sys.stdout.flush()
        return 1, 0
    print("SKIP %s: %s" % (name, reason))
    sys.stdout.flush()
    return 0, 1


def run_tests(tests, env, after_each=None):
    """Runs each test(env), which returns its problems (empty or None: passed; a raised
    exception fails it, Skip skips it, see skip_counts), honouring KDNS_ONLY (a substring
    of the names to run); prints an ok, FAIL or SKIP line per test, with the problems
    indented, and returns (passed, failed, skipped). after_each(), if given, runs after
    every test (e.g. to clear injected faults)."""
    only = os.environ.get("KDNS_ONLY")
    passed = failed = skipped = 0
    for test in tests:
        if only and only not in test.__name__:
            continue
        started = time.monotonic()
        try:
            problems = test(env)
        except Skip as e:
            f, k = skip_counts(test.__name__, e, e.provided)
            failed += f
            skipped += k
            continue
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
    return passed, failed, skipped


def stop_all(owned):
    """Stops what a suite started, last first; one that fails to stop does not keep the
    others running."""
    for thing in reversed(owned):
        try:
            thing.stop()
        except Exception:
            traceback.print_exc()


def release(owned, workdir, failed):
    """Stops what a suite started and removes its work directory, or keeps it for a look
    when something failed and KDNS_KEEP_TMP is set."""
    stop_all(owned)
    if failed and os.environ.get("KDNS_KEEP_TMP"):
        print("kept " + workdir)
    else:
        shutil.rmtree(workdir, ignore_errors=True)


def finish(passed, failed, skipped=0):
    """Prints the closing `N passed, M failed, K skipped` line; returns the exit code."""
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    sys.stdout.flush()
    return 0 if failed == 0 else 1


def main(prefix, tests, tools=(), needs=None, skip_unmet=False, setup=None, reset_each=False,
         after_each=None, report=None):
    """The one suite main(), which every suite's `__main__` calls; returns the exit code.

    - `tools`: paths that must be executable, and needs(): why the suite cannot run here
      (an address it cannot bind, a resource limit) or None. Either unmet fails the suite,
      or with `skip_unmet` skips it, counted as one skipped (0 passed, 0 failed, 1
      skipped) with the reason; a missing tool is one the install step provides, so under
      CI=true it fails the suite even so (skip_counts).
    - setup(workdir, owned): starts what the tests share (servers go into `owned`) and
      returns the env: a dict is merged into {"workdir", "owned"}, anything else (a pod
      object) is the env itself.
    - `tests`: the test functions, run with run_tests; or, for a suite that runs in phases
      or counts checks, a function run(env, checks) that adds to `checks` (a Checks:
      checks.run(tests, env) for a phase, checks.check(...) for one check).
    - after_each(): runs after every test; `reset_each` stops what a test started (in
      `owned`) after it.
    - report(env, failed): prints what the suite measured, or logs when something failed,
      before the servers stop.
    Work goes into a fresh directory, removed at the end (kept with KDNS_KEEP_TMP when
    something failed). A set-up or phase that raises fails the suite with its traceback,
    and the counts so far stand."""
    missing = ["%s is missing" % tool for tool in tools if not os.access(tool, os.X_OK)]
    unmet = missing or [reason for reason in [needs() if needs else None] if reason]
    if unmet:
        suite = prefix.strip("-.")
        if not skip_unmet:
            print("FAIL %s: %s" % (suite, "; ".join(unmet)))
            return finish(0, 1)
        return finish(0, *skip_counts(suite, "; ".join(unmet), provided=bool(missing)))
    workdir = tempfile.mkdtemp(prefix=prefix)
    owned = []
    env = {"workdir": workdir, "owned": owned}
    checks = Checks()
    if reset_each:
        hook = after_each

        def hook_then_reset():
            if hook is not None:
                hook()
            stop_all(owned)
            owned.clear()
        after_each = hook_then_reset
    try:
        if setup is not None:
            made = setup(workdir, owned)
            env = dict(env, **made) if isinstance(made, dict) else made
        if callable(tests):
            tests(env, checks)
        else:
            checks.run(tests, env, after_each=after_each)
    except Exception:
        traceback.print_exc()
        checks.failed += 1
    finally:
        if report is not None:
            try:
                report(env, checks.failed)
            except Exception:
                traceback.print_exc()
        release(owned, workdir, checks.failed)
    return checks.finish()


class Checks:
    """The counts of a suite: tests run in phases (run) and named checks of a suite that
    runs one long scenario (check: each check a test)."""

    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.skipped = 0

    def run(self, tests, env, after_each=None):
        """Runs `tests` with run_tests and adds their counts."""
        self.add(*run_tests(tests, env, after_each=after_each))

    def add(self, passed, failed, skipped=0):
        self.passed += passed
        self.failed += failed
        self.skipped += skipped

    def skip(self, name, reason, provided=False):
        """Counts one check that cannot run here (skip_counts)."""
        self.add(0, *skip_counts(name, reason, provided))

    def check(self, name, ok, detail=""):
        """Counts one check; prints FAIL with the detail when `ok` is false; returns `ok`."""
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL %s%s" % (name, (": " + detail) if detail else ""))
            sys.stdout.flush()
        return ok

    def finish(self):
        return finish(self.passed, self.failed, self.skipped)


def print_figures(title, figures, width=70):
    """Prints what a suite measured ([(what, value)]) under `title`, when it measured any."""
    if figures:
        print(title)
        for what, value in figures:
            print("  %-*s %s" % (width, what, value))


# -- waits on a condition -------------------------------------------------------------------

def wait_until(check, timeout=15.0, interval=0.05, ignore=()):
    """Polls check() until it is truthy or `timeout` seconds pass; returns its last value.
    Exceptions of the types in `ignore` count as "not yet" (e.g. a server still starting)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = check()
        except ignore:
            value = None
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


def time_until(check, timeout=30.0, interval=0.005, start=None):
    """Seconds from `start` (monotonic; default now) until check() is true, or None."""
    start = time.monotonic() if start is None else start
    while time.monotonic() - start < timeout:
        if check():
            return time.monotonic() - start
        time.sleep(interval)
    return None


def eventually(check, timeout=15.0, interval=0.1):
    """Polls check(), which returns a problem (falsy: none), until it has none; returns
    None or the last problem."""
    deadline = time.monotonic() + timeout
    problem = "never checked"
    while time.monotonic() < deadline:
        problem = check()
        if not problem:
            return None
        time.sleep(interval)
    return problem


# -- a ConfigMap volume ---------------------------------------------------------------------

class ConfigMapDir:
    """A ConfigMap volume written as the kubelet's atomic writer does: timestamped data
    directories behind a `..data` symlink swapped with a rename, one symlink per key into
    `..data`, the previous data directory removed after the swap."""

    def __init__(self, path):
        self.path = path
        os.makedirs(path, exist_ok=True)
        self.version = 0
        self.current = None

    def publish(self, data):
        """Writes a new version ({key: text}); returns the monotonic time of the swap."""
        while True:  # a directory an earlier writer of this path left, in the same second
            self.version += 1
            name = "..%s_%06d.%d" % (time.strftime("%Y_%m_%d_%H_%M_%S"), self.version,
                                     os.getpid())
            try:
                os.mkdir(os.path.join(self.path, name))
                break
            except FileExistsError:
                continue
        for key, value in data.items():
            with open(os.path.join(self.path, name, key), "w") as f:
                f.write(value)
        tmp_link = os.path.join(self.path, "..data_tmp")
        os.symlink(name, tmp_link)
        os.rename(tmp_link, os.path.join(self.path, "..data"))
        swapped = time.monotonic()
        for entry in os.listdir(self.path):
            if not entry.startswith(".") and entry not in data:
                os.remove(os.path.join(self.path, entry))
        for key in data:
            link = os.path.join(self.path, key)
            if not os.path.islink(link):
                os.symlink(os.path.join("..data", key), link)
        if self.current:
            shutil.rmtree(os.path.join(self.path, self.current))
        self.current = name
        return swapped


# -- HTTP and metrics -----------------------------------------------------------------------

def http_get(port, path, method="GET", timeout=5):
    """(status, headers, body text) of one request to 127.0.0.1:port; (0, {}, error) when
    nothing answers (not listening yet)."""
    request = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), method=method)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()
    except (OSError, http.client.HTTPException) as e:
        return 0, {}, str(e)


def http_get_from(source, port, path, timeout=5):
    """(status, body text) of one GET to 127.0.0.1:port sent from the address `source`
    (127.0.0.2 and up: an attacker's, so per-source limits are tested honestly); (0, error)
    when nothing answers."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout,
                                            source_address=(source, 0))
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read().decode(errors="replace")
    except (OSError, http.client.HTTPException) as e:
        return 0, str(e)
    finally:
        connection.close()


def http_status(port, path, timeout=2):
    return http_get(port, path, timeout=timeout)[0]


def parse_metrics(text):
    """{series: value} from Prometheus text; a series is `name{labels}` as printed."""
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        series, _, value = line.rpartition(" ")
        samples[series] = float(value)
    return samples


def scrape_metrics(port):
    """The samples 127.0.0.1:port/metrics serves (raises when it does not answer)."""
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as r:
        return parse_metrics(r.read().decode())


def metric_sum(samples, series):
    """The sample `series` (name{labels} exactly), or the sum over a family's labels (a
    bare name), or over the samples whose labels begin so (`name{label="v"`, unclosed)."""
    if "{" not in series:
        prefix = series + "{"
    elif not series.endswith("}"):
        prefix = series
    else:
        prefix = None
    return sum(value for name, value in samples.items()
               if name == series or (prefix is not None and name.startswith(prefix)))


# -- what a client sees -------------------------------------------------------------------

def limit_hits(server, limits):
    """kdns_limit_hits_total of `server` (anything with metric(series)) summed over the
    `limit` labels in `limits`: how an attack test confirms its attack landed."""
    return sum(server.metric('kdns_limit_hits_total{limit="%s"}' % limit) or 0
               for limit in limits)


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
        self.text = line  # folded, as the conformance cases write records
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


def dig_argv(port, name, qtype="A", qclass=None, *options, timeout=5, client="dig"):
    """The command line of real dig (or kdig) asking 127.0.0.1:port once."""
    argv = [client, "@127.0.0.1", "-p", str(port), name, qtype] + ([qclass] if qclass else [])
    if client == "dig":
        argv += ["+time=%d" % timeout, "+tries=1", "+nocookie", "+nostats"]
    else:
        argv += ["+time=%d" % timeout, "+retry=0", "+nostats"]
    return argv + list(options)


def dig(port, name, qtype="A", qclass=None, *options, timeout=5, client="dig"):
    """Asks 127.0.0.1:port with real dig (or kdig) and parses the reply."""
    run = subprocess.run(dig_argv(port, name, qtype, qclass, *options, timeout=timeout,
                                  client=client),
                         capture_output=True, text=True, timeout=timeout * 3 + 30)
    return Answer(run.stdout, run.returncode)


def dig_async(port, name, qtype="A", qclass=None, *options, timeout=5, client="dig"):
    """Starts dig (or kdig) in the background; finish with Popen.communicate and Answer."""
    return subprocess.Popen(dig_argv(port, name, qtype, qclass, *options, timeout=timeout,
                                     client=client),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def parse_dnsperf(text):
    """dnsperf's summary, the one reader of it (the benchmarks' too): sent, completed, lost
    and qps (floats, None when missing), codes (response code -> count) and codes_line (the
    response codes as dnsperf printed them, None when missing)."""
    out = {}
    for key, pattern in (("sent", r"Queries sent:\s+(\d+)"),
                         ("completed", r"Queries completed:\s+(\d+)"),
                         ("lost", r"Queries lost:\s+(\d+)"),
                         ("qps", r"Queries per second:\s+([\d.]+)")):
        m = re.search(pattern, text)
        out[key] = float(m.group(1)) if m else None
    m = re.search(r"Response codes:\s+(.*)", text)
    out["codes_line"] = m.group(1).strip() if m else None
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
