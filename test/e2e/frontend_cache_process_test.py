#!/usr/bin/python3
"""frontend-cache as a process, end to end: signals, start-up, kill -9.

SIGHUP reloads of --servers-file (applied, or rejected with the running routing kept),
SIGTERM's lameduck period (answering, then exit 0), the start-up refusal of an upstream
that is ourselves, and kill -9 on sockets a parent keeps: what is queued on them is
answered by the next frontend-cache.

Closes with `N passed, M failed`. KDNS_ONLY=substring runs the matching tests only;
KDNS_KEEP_TMP=1 keeps the temporary directory (logs of every process) after a failure.
"""
import os
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dns_wire  # noqa: E402
import fake_upstream as fu  # noqa: E402
import frontend_cache  # noqa: E402
import harness  # noqa: E402
import servers  # noqa: E402
from frontend_cache import (  # noqa: E402
    KeptSockets,
    expect,
    upstream_sent)


def test_sighup_reload(env):
    workdir, nsd = env["workdir"], env["nsd"]
    fake_a = fu.FakeUpstream(name="reload-a", answer_ip="192.0.2.1")
    fake_b = fu.FakeUpstream(name="reload-b", answer_ip="198.51.100.9")
    servers_file = os.path.join(workdir, "servers.conf")

    def write(text):
        with open(servers_file + ".tmp", "w") as f:
            f.write(text)
        os.rename(servers_file + ".tmp", servers_file)

    write("# first\nserver=/reload.test/%s\n" % fake_a.address)
    fe = None
    p = []
    try:
        fe = servers.FrontendCache(workdir, "fe-reload", "--servers-file=" + servers_file,
                                   "--server=" + nsd.address)
        p += expect(fe.dig("www.reload.test"), "NOERROR", ["192.0.2.1"], what="before")
        p += expect(fe.dig("www.example.test"), "NOERROR", ["192.0.2.10", "192.0.2.11"],
                    what="default before")
        write("server=/reload.test/%s\n\nserver=/new.test/%s\n" % (fake_b.address,
                                                                    fake_a.address))
        fe.process.signal(signal.SIGHUP)
        if not harness.wait_until(lambda: fe.metric("kdns_frontend_config_reloads_total") == 1, 15):
            return p + ["the reload was not applied: " + fe.process.log()[-1500:]]
        p += expect(fe.dig("www.reload.test"), "NOERROR", ["198.51.100.9"],
                    what="after the reload (cache of the re-routed domain dropped)")
        p += expect(fe.dig("www.new.test"), "NOERROR", ["192.0.2.1"], what="a new domain")
        sent = upstream_sent(fe, nsd.address)
        p += expect(fe.dig("www.example.test"), "NOERROR", ["192.0.2.10", "192.0.2.11"],
                    what="default after")
        if upstream_sent(fe, nsd.address) != sent:
            p.append("the cache of an unchanged route was dropped by the reload")
        # A bad file: rejected, the running routing kept.
        write("server=/reload.test/%s\nserver=/reload.test/not-an-address\n" % fake_a.address)
        fe.process.signal(signal.SIGHUP)
        if not harness.wait_until(
                lambda: fe.metric("kdns_frontend_config_reload_rejected_total") == 1, 15):
            return p + ["the bad file was not rejected: " + fe.process.log()[-1500:]]
        p += expect(fe.dig("www2.reload.test"), "NOERROR", ["198.51.100.9"],
                    what="after a rejected reload")
        if fe.metric("kdns_frontend_config_generation") != 2:
            p.append("config generation %s, want 2" % fe.metric("kdns_frontend_config_generation"))
        if fe.metric("kdns_frontend_config_reloads_total") != 1:
            p.append("a rejected reload counted as applied")
        rejected = [line for line in fe.process.log().splitlines() if "reload rejected" in line]
        if len(rejected) != 1 or "not-an-address" not in rejected[0]:
            p.append("want one log line naming the bad value: %s" % rejected)
        if not fe.process.alive():
            p.append("frontend-cache exited")
    finally:
        if fe:
            fe.stop()
        fake_a.stop()
        fake_b.stop()
    return p


def test_sigterm_lameduck(env):
    workdir, nsd = env["workdir"], env["nsd"]
    fe = servers.FrontendCache(workdir, "fe-lameduck", "--server=" + nsd.address, lameduck="1s")
    p = []
    try:
        p += expect(fe.dig("www.example.test"), "NOERROR", ["192.0.2.10", "192.0.2.11"],
                    what="before SIGTERM")
        fe.process.signal(signal.SIGTERM)
        signalled = time.time()
        for name, ident in (("www.example.test", 0x1111), ("mail.example.test", 0x2222)):
            reply = dns_wire.udp_exchange(fe.port, dns_wire.build_query(name, ident=ident),
                                          timeout=0.8)
            if reply is None:
                p.append("no answer to %s %.2f s into the lameduck period"
                         % (name, time.time() - signalled))
                continue
            msg = dns_wire.parse_message(reply)
            if msg["id"] != ident or msg["rcode"] != dns_wire.NOERROR or not msg["answers"]:
                p.append("lameduck answer to %s: %s" % (name, msg))
        if not fe.process.alive():
            p.append("exited before the lameduck period was over")
        rc = fe.process.wait(20)
        if rc != 0:
            p.append("exit code %s after the lameduck period, want 0" % rc)
        if "lameduck" not in fe.process.log():
            p.append("no lameduck log line")
        if dns_wire.udp_exchange(fe.port, dns_wire.build_query("www.example.test"), timeout=0.5):
            p.append("still answering after the exit")
    finally:
        fe.stop()
    return p


def test_refuses_itself_as_upstream(env):
    workdir = env["workdir"]
    p = []
    for server in ("--server=127.0.0.1#%d", "--server=/x.test/127.0.0.1#%d"):
        port = harness.free_port()
        fe = servers.FrontendCache(workdir, "fe-self", server % port, port=port, wait=False,
                                   metrics=False)
        rc = fe.process.wait(20)
        log = fe.process.log()
        fe.stop()
        lines = [line for line in log.splitlines() if line.startswith("frontend-cache:")]
        if rc is None or rc == 0:
            p.append("%s: exit code %s, want non-zero" % (server % port, rc))
        if len(lines) != 1 or "127.0.0.1#%d" % port not in lines[0]:
            p.append("%s: want one error line naming the upstream, got: %s"
                     % (server % port, log[-800:]))
    return p


def stopped(pid):
    """Whether every thread of `pid` is stopped (SIGSTOP taken, none inside a syscall)."""
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
        states = []
        for task in tasks:
            with open("/proc/%d/task/%s/stat" % (pid, task)) as f:
                states.append(f.read().rsplit(") ", 1)[1][0])
    except OSError:
        return False
    return bool(states) and all(state in "Tt" for state in states)


def test_kill_leaves_queued_queries(env):
    """kill -9 of frontend-cache on sockets a parent keeps, as the nanny does: every query
    queued on the socket when it dies is answered by the next one. The child is stopped
    (SIGSTOP) before the queries are sent, so none of its threads is inside a receive call
    when they arrive and every one waits in the socket: no load, no timing. (A receiver
    asleep in recvmmsg, woken by a SIGKILL, takes what arrived meanwhile and dies with it;
    that load-dependent loss is measured by test/bench/frontend_cache_kill_bench.sh.)"""
    sockets = KeptSockets(env["workdir"], env["nsd"].address)
    client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    p = []
    try:
        if not harness.wait_until(sockets.answers, 20):
            return ["frontend-cache did not answer: " + sockets.log_tail()]
        names = ("www.example.test", "mail.example.test", "example.test")
        for round_ in range(3):
            pid = sockets.child.pid
            os.kill(pid, signal.SIGSTOP)
            if not harness.wait_until(lambda: stopped(pid), 10, 0.01):
                return p + ["round %d: frontend-cache did not stop" % round_]
            sent = {}
            for i in range(60):
                qid = round_ * 1000 + i
                packet = dns_wire.build_query(names[i % 3], "A" if i % 3 != 2 else "MX",
                                              ident=qid, edns=False)
                client.sendto(packet, ("127.0.0.1", sockets.port))
                sent[qid] = names[i % 3]
            sockets.kill()
            sockets.spawn()
            replies = {}
            client.settimeout(0.5)
            deadline = time.monotonic() + 20
            while len(replies) < len(sent) and time.monotonic() < deadline:
                try:
                    data = client.recv(4096)
                except socket.timeout:
                    continue
                reply = dns_wire.parse_message(data)
                replies[reply["id"]] = (reply["rcode"], reply["counts"][1])
            missing = sorted(set(sent) - set(replies))
            if missing:
                p.append("round %d: %d of %d queries queued at the kill -9 unanswered (ids "
                         "%s)" % (round_, len(missing), len(sent), missing[:10]))
            bad = {qid: r for qid, r in replies.items() if r[0] != 0 or r[1] < 1}
            if bad:
                p.append("round %d: answers not NOERROR with records: %s" % (round_, bad))
            if p:
                return p + [sockets.log_tail()]
    finally:
        client.close()
        sockets.stop()
    return p


TESTS = [test_sighup_reload,
         test_sigterm_lameduck,
         test_refuses_itself_as_upstream,
         test_kill_leaves_queued_queries]


if __name__ == "__main__":
    sys.exit(frontend_cache.main(TESTS, main_instance=False))
