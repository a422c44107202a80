#!/usr/bin/python3
"""The dnsmasq and kube-dns options of operators' Deployments, end to end.

Start-up refusals: every dnsmasq option frontend-cache refuses (and an unknown one) stops
it at once, exit status non-zero, with one line naming the option; kubedns refuses
--federations the same way and takes --config-map with a warning. Query logging:
frontend-cache --log-queries writes one line per answer naming its source, --log-queries
extra adds the ID, transport and size, sampling logs about one in N, and a flood of
queries stays within --log-queries-rate lines a second (the log's bytes counted against
the bound the flood's own duration gives: no timing threshold); kubedns --log-queries logs
its answers too. --interface and --user start a server that answers. Answers to the
options themselves are compared with dnsmasq's in dnsmasq_diff_test.py.

Closes with `N passed, M failed`. KDNS_ONLY=substring runs the matching tests only;
KDNS_KEEP_TMP=1 keeps the temporary directory (logs of every process) after a failure.
"""
import os
import pwd
import re
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dns_wire  # noqa: E402
import harness  # noqa: E402
import servers  # noqa: E402

QUERY_LINE = re.compile(r"\] (query client=\S+ name=(\S+) type=(\S+) rcode=(\S+) "
                        r"source=(\S+) duration_us=(\d+)(.*))$")


def run(program, *args):
    """(exit status, stdout + stderr) of a program that should stop at start."""
    result = subprocess.run([os.path.join(harness.BIN, program)] + list(args),
                            capture_output=True, text=True, timeout=30,
                            stdin=subprocess.DEVNULL, env=dict(os.environ, GLOG_logtostderr="1"))
    return result.returncode, (result.stdout + result.stderr).strip()


def query_lines(process):
    return [m for m in (QUERY_LINE.search(line) for line in process.log().splitlines()) if m]


def test_refused_dnsmasq_options_stop_start_up(env):
    p = []
    for option in ("--conf-file=/etc/dnsmasq.conf", "-C", "--dhcp-range=10.0.0.2,10.0.0.9",
                   "--cname=a.test,b.test", "--dnssec", "--stop-dns-rebind", "--query-port=53",
                   "--expand-hosts", "--filter-A", "--no-such-option"):
        code, out = run("frontend-cache", "--port=0", "--no-resolv", option)
        name = option.split("=")[0]
        lines = out.splitlines()
        if code == 0:
            p.append("%s: started (exit 0)" % option)
        elif len(lines) != 1 or (name.lstrip("-") not in lines[0]):
            p.append("%s: want one line naming it, got %r" % (option, out))
        elif option != "--no-such-option" and (
                "(dnsmasq) is not supported by frontend-cache" not in lines[0]):
            p.append("%s: the line does not say it is a refused dnsmasq option: %r"
                     % (option, lines[0]))
    # The same refusal from --check-flags (the pre-flight), without binding anything.
    code, out = run("frontend-cache", "--check-flags", "--cname=a,b")
    if code == 0 or "--cname" not in out:
        p.append("--check-flags --cname=a,b: exit %d, %r" % (code, out))
    return p


def test_kubedns_kube_dns_flags(env):
    p = []
    code, out = run("kubedns", "--check-flags", "--objects-file=/dev/null",
                    "--federations=myfed=example.com")
    if code == 0 or len(out.splitlines()) != 1 or "--federations" not in out \
            or "remove the flag" not in out:
        p.append("--federations: want one refusal line saying what to do, got exit %d: %r"
                 % (code, out))
    code, out = run("kubedns", "--check-flags", "--objects-file=/dev/null",
                    "--config-map=kube-dns")
    if code != 0 or "--config-map=kube-dns is deprecated" not in out:
        p.append("--config-map: want exit 0 with a deprecation warning, got %d: %r"
                 % (code, out))
    # Running: the warning in the log, and the mapped directory read.
    workdir = env["workdir"]
    objects = os.path.join(harness.ROOT, "kubedns", "demo-cluster.json")
    kd = servers.Kubedns(workdir, "kubedns-log", "--objects-file=" + objects,
                         "--log-queries=extra", "--config-map=kube-dns")
    try:
        name = "hello.default.svc.cluster.local"
        answer = harness.dig(kd.port, name)
        if answer.status != "NOERROR" or not answer.answer:
            p.append("kubedns did not answer %s: %s" % (name, answer))
        lines = []
        harness.wait_until(lambda: lines.extend(query_lines(kd.process)) or lines, 10)
        if not any(m.group(2) == name + "." and m.group(5) == "local" and m.group(4) == "NOERROR"
                   for m in lines):
            p.append("no query log line for %s with source=local: %s" % (
                name, [m.group(1) for m in lines]))
        # --log-queries=extra, as frontend-cache's: the ID, transport and size too.
        for m in lines:
            extra = dict(kv.split("=", 1) for kv in m.group(7).split())
            if not extra.get("id", "").isdigit() or extra.get("transport") != "udp" \
                    or not extra.get("bytes", "").isdigit():
                p.append("kubedns --log-queries=extra: extra fields missing: %s" % m.group(1))
        if "--config-map=kube-dns is deprecated" not in kd.process.log():
            p.append("the --config-map warning is not in the log")
    finally:
        kd.stop()
    return p


def test_old_metrics_flag_spellings_still_work(env):
    """--prometheus-port and --prometheus-addr (the sidecar's kube-dns spelling) are every
    program's; kubedns's --metrics-port and frontend-cache's --prometheus-address still
    work, each with one deprecation warning."""
    p = []
    workdir = env["workdir"]
    code, out = run("kubedns", "--check-flags", "--objects-file=/dev/null", "--metrics-port=10055")
    if code != 0 or "--metrics-port is deprecated: it is --prometheus-port" not in out:
        p.append("kubedns --metrics-port: want exit 0 with a deprecation warning, got %d: %r"
                 % (code, out))
    objects = os.path.join(harness.ROOT, "kubedns", "demo-cluster.json")
    metrics_port = harness.free_port()
    # After the harness's --prometheus-port: unset it, so the old name alone gives the port.
    kd = servers.Kubedns(workdir, "kubedns-old-metrics", "--objects-file=" + objects,
                         "--prometheus-port=-1", "--metrics-port=%d" % metrics_port,
                         metrics_port=metrics_port)
    try:
        if not any(series.startswith("skydns_") for series in
                   harness.scrape_metrics(metrics_port)):
            p.append("kubedns --metrics-port=%d: no kube-dns metrics there" % metrics_port)
        # Once logged (kubedns also says it on stderr before logging starts, as for every
        # deprecated flag).
        if kd.process.log().count("] --metrics-port is deprecated") != 1:
            p.append("kubedns --metrics-port: want the warning once in the log")
    finally:
        kd.stop()
    fe = servers.FrontendCache(workdir, "fe-old-metrics", "--prometheus-address=127.0.0.1",
                               "--prometheus-address=127.0.0.1")
    try:
        if not any(series.startswith("kdns_frontend_") for series in fe.metrics()):
            p.append("frontend-cache --prometheus-address: no metrics on 127.0.0.1")
        if fe.process.log().count("] --prometheus-address is deprecated: it is "
                                  "--prometheus-addr") != 1:
            p.append("frontend-cache --prometheus-address: want the warning once in the log")
    finally:
        fe.stop()
    return p


def test_log_queries_lines(env):
    workdir, nsd = env["workdir"], env["nsd"]
    p = []
    fe = servers.FrontendCache(workdir, "fe-log", "--no-hosts", "--server=" + nsd.address,
                               "--address=/static.test/192.0.2.5", "--log-queries=extra")
    try:
        harness.dig(fe.port, "www.example.test")   # upstream
        harness.dig(fe.port, "www.example.test")   # cache
        harness.dig(fe.port, "static.test")        # local
        harness.dig(fe.port, "nope.example.test", "A", None, "+tcp")
        want = [("www.example.test.", "A", "NOERROR", "upstream", "udp"),
                ("www.example.test.", "A", "NOERROR", "cache", "udp"),
                ("static.test.", "A", "NOERROR", "local", "udp"),
                ("nope.example.test.", "A", "NXDOMAIN", "upstream", "tcp")]
        got = []
        harness.wait_until(lambda: len(query_lines(fe.process)) >= len(want), 10)
        for m in query_lines(fe.process):
            extra = dict(kv.split("=", 1) for kv in m.group(7).split())
            got.append((m.group(2), m.group(3), m.group(4), m.group(5), extra.get("transport")))
            if not extra.get("id", "").isdigit() or not extra.get("bytes", "").isdigit():
                p.append("extra fields missing: %s" % m.group(1))
            if not m.group(1).startswith("query client=127.0.0.1#"):
                p.append("the client is not named: %s" % m.group(1))
        if got != want:
            p.append("query log lines %s, want %s" % (got, want))
    finally:
        fe.stop()
    return p


def flood(port, count):
    """Sends `count` queries for static.test over UDP as fast as it can, reading the
    answers as they come; (seconds it took, answers received)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    sock.setblocking(False)
    received = 0
    started = time.monotonic()
    for i in range(count):
        sock.sendto(dns_wire.build_query("n%d.static.test" % i, "A", ident=i & 0xffff),
                    ("127.0.0.1", port))
        while True:
            try:
                sock.recv(4096)
                received += 1
            except BlockingIOError:
                break
    deadline = time.monotonic() + 10
    sock.settimeout(0.5)
    while received < count and time.monotonic() < deadline:
        try:
            sock.recv(4096)
            received += 1
        except socket.timeout:
            break
    took = time.monotonic() - started
    sock.close()
    return took, received


def test_log_queries_flood_stays_within_its_rate(env):
    workdir = env["workdir"]
    rate = 50
    p = []
    fe = servers.FrontendCache(workdir, "fe-flood", "--no-hosts",
                               "--address=/static.test/192.0.2.5", "--log-queries",
                               "--log-queries-rate=%d" % rate)
    try:
        before = len(fe.process.log())
        count = 20000
        took, received = flood(fe.port, count)
        # What is suppressed is reported with the next line written: ask one query at a
        # time until the report covers the whole flood (a new second has begun).
        probes = [0]

        def accounted():
            log_now = fe.process.log()[before:]
            written = sum(1 for line in log_now.splitlines() if "] query client=" in line)
            suppressed_now = sum(int(n) for n in re.findall(r"query log: (\d+) lines", log_now))
            if written + suppressed_now >= received + probes[0]:
                return True
            harness.dig(fe.port, "probe.static.test")
            probes[0] += 1
            return False

        harness.wait_until(accounted, 15, 0.2)
        fe.stop()
        log = fe.process.log()[before:]
        lines = [line for line in log.splitlines() if "] query client=" in line]
        reports = [line for line in log.splitlines() if "] query log: " in line]
        log_bytes = sum(len(line) + 1 for line in lines + reports)
        # At most `rate` lines in each second the flood touched (the log's windows are
        # seconds of the clock: the flood spans at most ceil(took) + 1 of them).
        seconds = int(took) + 2 + probes[0]  # each probe may begin a second of its own
        bound = rate * seconds
        line_bytes = max(len(line) + 1 for line in lines) if lines else 0
        print("    flood: %d queries in %.2fs, %d answered; %d query lines + %d reports, "
              "%d log bytes (bound %d lines, %d bytes unlimited)"
              % (count, took, received, len(lines), len(reports), log_bytes, bound,
                 count * line_bytes))
        if received < count // 2:
            p.append("only %d of %d flood queries answered" % (received, count))
        if len(lines) + len(reports) > bound:
            p.append("%d log lines over %d seconds: over the rate of %d a second"
                     % (len(lines) + len(reports), seconds, rate))
        if not lines:
            p.append("nothing logged")
        if not reports or not re.search(r"query log: \d+ lines suppressed", reports[0]):
            p.append("no report of the suppressed lines: %s" % reports[:2])
        suppressed = sum(int(re.search(r"query log: (\d+)", r).group(1)) for r in reports)
        if len(lines) + suppressed != received + probes[0]:
            p.append("%d lines + %d suppressed do not account for %d answers"
                     % (len(lines), suppressed, received + probes[0]))
    finally:
        fe.stop()
    return p


def test_log_queries_sampling(env):
    workdir = env["workdir"]
    p = []
    fe = servers.FrontendCache(workdir, "fe-sample", "--no-hosts",
                               "--address=/static.test/192.0.2.5", "--log-queries",
                               "--log-queries-rate=0", "--log-queries-sample=10")
    try:
        count = 3000
        _, received = flood(fe.port, count)
        fe.stop()
        lines = len(query_lines(fe.process))
        print("    sampling 1 in 10: %d lines for %d answers" % (lines, received))
        # About received / 10; the bounds are over ten standard deviations wide.
        if not received // 10 - 100 <= lines <= received // 10 + 100:
            p.append("%d lines logged for %d answers at 1 in 10" % (lines, received))
    finally:
        fe.stop()
    return p


def test_interface_and_user(env):
    workdir, nsd = env["workdir"], env["nsd"]
    p = []
    user = pwd.getpwuid(os.getuid()).pw_name
    fe = servers.FrontendCache(workdir, "fe-interface", "--no-hosts", "--server=" + nsd.address,
                               "--interface=lo", "--bind-interfaces", "--user=" + user,
                               "--no-daemon", "--no-poll")
    try:
        answer = fe.dig("www.example.test")
        if answer.status != "NOERROR" or len(answer.answer) != 2:
            p.append("--interface=lo: %s" % answer)
    finally:
        fe.stop()
    code, out = run("frontend-cache", "--port=0", "--no-resolv", "--interface=nosuch0")
    if code == 0 or "--interface=nosuch0: unknown interface" not in out:
        p.append("--interface=nosuch0: exit %d, %r" % (code, out))
    if os.geteuid() == 0:
        code, out = run("frontend-cache", "--port=0", "--no-resolv", "--user=no-such-user-kdns")
        if code == 0 or "--user=no-such-user-kdns: unknown user" not in out:
            p.append("--user=no-such-user-kdns: exit %d, %r" % (code, out))
    return p


def test_user_drops_root_in_every_thread(env):
    """As root, --user=nobody: every thread of the running process has nobody's uid and gid
    and no supplementary group, and it still answers (cache and upstream) and reloads."""
    if os.geteuid() != 0:
        raise harness.Skip("needs root to drop it")
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        raise harness.Skip("no user nobody")
    workdir, nsd = env["workdir"], env["nsd"]
    p = []
    fe = servers.FrontendCache(workdir, "fe-user", "--no-hosts", "--server=" + nsd.address,
                               "--threads=2", "--user=nobody")
    try:
        for attempt in range(2):  # forwarded, then from the cache
            answer = fe.dig("www.example.test")
            if answer.status != "NOERROR" or len(answer.answer) != 2:
                p.append("answer %d as nobody: %s" % (attempt, answer))
        pid = fe.process.pid
        tasks = os.listdir("/proc/%d/task" % pid)
        if len(tasks) < 2:
            p.append("expected several threads, found %d" % len(tasks))
        for task in tasks:
            with open("/proc/%d/task/%s/status" % (pid, task)) as f:
                status = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
            uids = status["Uid"].split()
            gids = status["Gid"].split()
            if any(int(u) != nobody.pw_uid for u in uids):
                p.append("thread %s: Uid %s, not nobody's %d" % (task, uids, nobody.pw_uid))
            if any(int(g) != nobody.pw_gid for g in gids):
                p.append("thread %s: Gid %s, not nobody's %d" % (task, gids, nobody.pw_gid))
            if status["Groups"].strip():
                p.append("thread %s: supplementary groups %r kept" % (task, status["Groups"]))
        fe.process.signal(signal.SIGHUP)  # a reload as nobody keeps it serving
        answer = fe.dig("www.example.test")
        if answer.status != "NOERROR" or not fe.process.alive():
            p.append("after SIGHUP as nobody: %s, alive %s" % (answer, fe.process.alive()))
    finally:
        fe.stop()
    return p


TESTS = [test_refused_dnsmasq_options_stop_start_up, test_old_metrics_flag_spellings_still_work,
         test_kubedns_kube_dns_flags,
         test_log_queries_lines,
         test_log_queries_flood_stays_within_its_rate,
         test_log_queries_sampling,
         test_interface_and_user,
         test_user_drops_root_in_every_thread]


def main():
    return harness.main("kdns-options-e2e-", TESTS,
                        tools=(os.path.join(harness.BIN, "frontend-cache"),
                               os.path.join(harness.BIN, "kubedns"), servers.NSD, "/usr/bin/dig"),
                        setup=servers.start_nsd)


if __name__ == "__main__":
    sys.exit(main())
