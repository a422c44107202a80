"""What the frontend-cache suites (frontend_cache_*_test.py) share: the upstreams and the
main frontend-cache they run against, the checks of an answer, and frontend-cache on
sockets a parent keeps (as the nanny does), which the kill test and the kill -9 benchmark
(test/bench/frontend_cache_kill_bench.py) start again after each death.

main(tests) starts, unprivileged on free loopback ports: NSD (example.test, a reverse zone,
big.test) and unbound (other.test as local data), test/e2e/fake_upstream.py's scripted
upstreams (timeouts, SERVFAIL, truncation, wrong ID, wrong question, replies from another
address or port, slow replies, big answers) and one frontend-cache routing to all of them;
runs the tests, each test(env), and stops everything. KDNS_KEEP_TMP=1 keeps the temporary
directory (logs of every process) after a failure.
"""
import fcntl
import os
import signal
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import servers  # noqa: E402
import fake_upstream as fu  # noqa: E402

NEG_TTL = 3
OK_IP = "203.0.113.5"  # what the failover target answers
STALE_IP = "192.0.2.77"


def upstream_sent(fe, address):
    return fe.metric('kdns_frontend_upstream_queries_total{upstream="%s"}' % address)


def settled(fe, fake, name):
    """How many queries for `name` (None: any) the fake has seen, once every try `fe`
    counts as sent to it (kdns_frontend_upstream_queries_total: every try, UDP or TCP)
    has arrived."""
    if not harness.wait_until(lambda: len(fake.received()) >= upstream_sent(fe, fake.address),
                              10):
        raise AssertionError("%s: %d queries received, frontend-cache counts %d sent" % (
            fake.address, len(fake.received()), upstream_sent(fe, fake.address)))
    return len(fake.received(name))


def no_poison(answer):
    every = answer.answer + answer.authority + answer.additional
    return [] if all(fu.POISON_IP not in r.rdata for r in every) else [
        "poisoned answer reached the client: %s" % answer]


def expect(answer, status, rdatas=None, rtype="A", what=""):
    """Problems with `answer` (a list, empty when it is as expected)."""
    problems = []
    if answer.status != status:
        problems.append("%s: status %s, want %s: %s" % (what, answer.status, status, answer))
    elif rdatas is not None and answer.rdatas(rtype) != sorted(rdatas):
        problems.append("%s: %s records %s, want %s" % (what, rtype, answer.rdatas(rtype),
                                                        sorted(rdatas)))
    return problems + no_poison(answer)


class KeptSockets:
    """A UDP and a TCP socket on 127.0.0.1 and a free port that this process keeps, as the
    nanny does, and frontend-cache (forwarding to `upstream`) started on them through
    LISTEN_FDS; spawn() starts the next one after a death. What is queued on the UDP
    socket when one dies stays for the next."""

    def __init__(self, workdir, upstream, name="fe-kill"):
        self.port = harness.free_port()
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.udp.bind(("127.0.0.1", self.port))
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.tcp.bind(("127.0.0.1", self.port))
        self.tcp.listen(128)
        # From 10 up, so the child's shell can put them on 3 and 4 without clobbering either.
        self.kept = [fcntl.fcntl(s.fileno(), fcntl.F_DUPFD, 10) for s in (self.udp, self.tcp)]
        self.argv = [os.path.join(harness.BIN, "frontend-cache"), "-k", "--no-resolv",
                     "--threads=2", "--lameduck=0", "--log-facility=-", "--server=" + upstream]
        # LISTEN_PID must be the child's own pid: bash sets it, then execs in place (dash
        # takes no descriptor above 9).
        self.script = 'exec 3<&%d 4<&%d %d<&- %d<&-; LISTEN_PID=$$ LISTEN_FDS=2 exec "$@"' % (
            self.kept[0], self.kept[1], self.kept[0], self.kept[1])
        self.log = open(os.path.join(workdir, name + ".log"), "a")
        self.child = None
        self.spawn()

    def spawn(self):
        self.child = subprocess.Popen(["/bin/bash", "-c", self.script, "bash"] + self.argv,
                                      pass_fds=self.kept, stdout=self.log,
                                      stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def answers(self):
        return harness.dig(self.port, "mail.example.test").status == "NOERROR"

    def kill(self):
        """kill -9 of the running frontend-cache, reaped."""
        self.child.send_signal(signal.SIGKILL)
        self.child.wait()

    def log_tail(self):
        with open(self.log.name, errors="replace") as f:
            return f.read()[-800:]

    def stop(self):
        if self.child is not None and self.child.poll() is None:
            self.child.terminate()
            try:
                self.child.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.child.kill()
                self.child.wait()
        self.log.close()
        for fd in self.kept:
            os.close(fd)
        self.udp.close()
        self.tcp.close()


def start(workdir, owned, main_instance):
    """The upstreams and, with main_instance, the main frontend-cache routing to all of
    them; the env."""
    nsd = servers.Nsd(workdir)
    owned.append(nsd)
    env = {"nsd": nsd}
    fe = None
    if main_instance:
        unbound = servers.Unbound(workdir)
        owned.append(unbound)
        fake = fu.FakeUpstream(name="main")
        f_timeout = fu.FakeUpstream(name="timeout", default="silent")
        f_servfail = fu.FakeUpstream(name="servfail", default="servfail")
        f_ok = fu.FakeUpstream(name="ok", answer_ip=OK_IP)
        f_stale = fu.FakeUpstream(name="stale", answer_ip=STALE_IP)
        owned += [fake, f_timeout, f_servfail, f_ok, f_stale]
        fe = servers.FrontendCache(
            workdir, "fe-main", "--cache-size=1000", "--neg-ttl=%d" % NEG_TTL,
            "--server=" + nsd.address,
            "--server=/other.test/" + unbound.address,
            "--server=/fake.test/sub.example.test/" + fake.address,
            "--server=/local.test/",
            "--server=/fo-timeout.test/" + f_timeout.address,
            "--server=/fo-timeout.test/" + f_ok.address,
            "--server=/fo-servfail.test/" + f_servfail.address,
            "--server=/fo-servfail.test/" + f_ok.address,
            "--server=/stale.test/" + f_stale.address)
        owned.append(fe)
        env.update({"unbound": unbound, "fake": fake, "fe": fe, "f_timeout": f_timeout,
                    "f_servfail": f_servfail, "f_ok": f_ok, "f_stale": f_stale,
                    "all_upstreams": [nsd.address, unbound.address, fake.address,
                                      f_timeout.address, f_servfail.address,
                                      f_ok.address, f_stale.address]})
    return env


def run(tests):
    """Runs `tests`, then checks that the main frontend-cache (when there is one) is still up."""
    def run_and_check(env, checks):
        checks.run(tests, env)
        fe = env.get("fe")
        if fe is not None:
            checks.check("the main frontend-cache is still running", fe.process.alive(),
                         fe.process.log()[-1500:])
    return run_and_check


def main(tests, main_instance=True):
    """Starts the upstreams (and, with main_instance, the main frontend-cache routing to
    all of them), runs the tests, stops everything; the exit code."""
    return harness.main(
        "kdns-frontend-e2e-", run(tests),
        tools=(os.path.join(harness.BIN, "frontend-cache"), servers.NSD, servers.UNBOUND,
               "/usr/bin/dig", "/usr/bin/kdig"),
        setup=lambda workdir, owned: start(workdir, owned, main_instance))
