#!/usr/bin/python3
"""Node-local lifecycle end to end (issue 34): what an update, a kill or a restart of the
node cache costs the pods of the node, under a steady load, every query counted.

On the "node" of node_local_env.py (a network and mount namespace of its own, kube-proxy
emulated by DNAT to a central kubedns; root, skipped with the reason otherwise), once per
backend (nftables: the nanny's own table, owned; then --firewall=iptables), a client on the
node sends `kubernetes.default.svc.cluster.local A` at 2,000 q/s to the ClusterIP and
200 q/s to the link-local address (steady_load.py: a new source port per query in turn, a
2 s timeout) while:

1. an update with maxSurge: a second nanny starts beside the first (SO_REUSEPORT), takes
   its share, then the first gets SIGTERM, leaves the rules and addresses to the second and
   drains: 0 lost, 0 SERVFAIL on both addresses (and DNS over TCP, a connection per query,
   one after another: its failures printed);
2. kill -9 of the nanny and frontend-cache together (what an OOM kill of the pod's
   processes or a SIGKILL after the grace period does): nftables: the owned table goes with
   the nanny (gone when the kill returns), so while the node cache is dead the ClusterIP is
   answered by the central DNS through kube-proxy's DNAT (with the addresses still on lo);
   iptables: the rules stay (no owner), and the ClusterIP is answered again only when the
   node cache is back. The link-local address has no server meanwhile (refused). A new
   nanny then takes over: its rules before its cache serves (right after its sockets), and
   nothing lost from then on;
3. SIGTERM with no other node cache: rules, then the child's lameduck, then the addresses:
   0 lost on the ClusterIP; the link-local address is gone with the addresses;
4. a crash loop of frontend-cache alone (kill -9 of the child three times; the nanny keeps
   the sockets): at most 1 lost per restart, 0 SERVFAIL.

Each case also checks that every target sent queries while its event went on. Times (how
soon the central DNS answered, the longest gap, the rate reached) are printed figures, not
bounds: the asserts are what happened and in what order. Prints each case's figures and
`N passed, M failed` last.
"""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import node_local_env  # noqa: E402
from nanny_env import children_of, cmdline  # noqa: E402
from node_local_env import (CLIENT, CLUSTER_IP, LINK_LOCAL, LOCAL_IPS, NAME,  # noqa: E402
                            addresses_present, answers, serving, start_nanny)
from steady_load import SteadyLoad, TcpQueries  # noqa: E402

CLUSTER_IP_QPS = 2000
LINK_LOCAL_QPS = 200


def start_load():
    load = SteadyLoad(NAME, [("ClusterIP", CLUSTER_IP, CLUSTER_IP_QPS),
                             ("link-local", LINK_LOCAL, LINK_LOCAL_QPS)], CLIENT, max_s=40)
    load.start()
    time.sleep(0.5)  # steady before the event
    return load


def record(env, case, load, extra=""):
    """The case's figures, printed at the end (and into the operators' guide)."""
    for target in load.targets:
        f = target.figures()
        env["figures"].append((
            "%-9s %-46s %-10s" % (env["backend"].name, case, target.label),
            "sent %6d  lost %4d  SERVFAIL %d  refused %4d  longest gap %7.1f ms  "
            "slowest %6.1f ms%s" % (f["sent"], f["lost"], f["servfail"], f["refused"],
                                    f["longest_gap_ms"], f["slowest_ms"], extra)))
    env["figures"].append(("%-9s %-46s achieved" % (env["backend"].name, case),
                           "%.0f q/s" % load.achieved_qps()))


# Queries each target must have sent while the case's event went on, for its "none lost"
# to mean something (the rate reached is printed with the figures, never bounded).
MIN_SENT_IN_EVENT = 50


def load_covered(load, since, until, p):
    for target in load.targets:
        sent = target.sent_between(since, until)
        if sent < MIN_SENT_IN_EVENT:
            p.append("%s: %d queries sent while the event went on, want %d or more"
                     % (target.label, sent, MIN_SENT_IN_EVENT))


def whole_node_cache(nanny):
    return [nanny.pid] + children_of(nanny.pid)


def serving_lines(nanny):
    return nanny.log().count("serving DNS on %s:53" % LINK_LOCAL)


TCP_MIGRATE_REQ = "/proc/sys/net/ipv4/tcp_migrate_req"


def update_with_surge(env, case):
    """An update: a new node cache beside the old one, then the old one's SIGTERM, under
    the steady load and DNS over TCP; returns (problems, the TCP client, the new nanny)."""
    backend, old = env["backend"], env["nanny"]
    load = start_load()
    tcp = TcpQueries(NAME, CLUSTER_IP, CLIENT, max_s=40)
    tcp.start()
    new = start_nanny(env, backend, wait=False)
    p = []
    if not harness.wait_until(lambda: serving(new) or not new.alive(), 20):
        p.append("the new node cache did not serve beside the old one: " + new.log()[-1500:])
    time.sleep(0.5)  # both serve: the kernel spreads the queries over both
    swap_at = time.monotonic()
    old.signal(signal.SIGTERM)
    code = old.wait(20)
    swapped_at = time.monotonic()
    time.sleep(1.0)
    load.stop()
    tcp.stop()
    record(env, case, load)
    env["figures"].append(("%-9s %-46s TCP" % (backend.name, case[:2] + " ..."),
                           "%d answered, %d failed %s" % (tcp.answered, tcp.failed,
                                                          tcp.errors or "")))
    load_covered(load, swap_at, swapped_at, p)
    if code != 0:
        p.append("the old node cache exited with %s" % code)
    for target in load.targets:
        if target.lost or target.servfail or target.other:
            p.append("%s: %s" % (target.label, target.figures()))
    if tcp.answered == 0:
        p.append("no TCP query answered during the update: %s" % tcp.errors)
    log = old.log()
    if "another node cache is alive" not in log or "TCP listeners left to the other" not in log:
        p.append("the old node cache did not see the new one: " + log[-1500:])
    if not (new.alive() and backend.rules_present() and addresses_present() == LOCAL_IPS):
        p.append("after the update: new alive %s, rules %s, addresses %s" %
                 (new.alive(), backend.rules_present(), addresses_present()))
    return p, tcp, new


def test_update_with_surge_loses_nothing(env):
    """The node cache turns net.ipv4.tcp_migrate_req on (root in its network namespace, as
    on the host or in a privileged container): the TCP connections the old one's listeners
    held when they left the group move to the new one's, so none is reset either."""
    p, tcp, new = update_with_surge(env, "1. update (maxSurge): new beside old, old SIGTERM")
    with open(TCP_MIGRATE_REQ) as f:
        if f.read().strip() != "1":
            p.append("net.ipv4.tcp_migrate_req is not on: " + new.log()[-1000:])
    if tcp.failed:
        p.append("%d TCP queries failed across the update: %s" % (tcp.failed, tcp.errors))
    return p


def test_update_without_tcp_migration(env):
    """As a node cache whose /proc/sys is read-only (an unprivileged container) on a node
    with net.ipv4.tcp_migrate_req=0: UDP and the ClusterIP lose nothing; a TCP connection
    caught in the old one's listener queue as it leaves is reset (printed, not bounded:
    the client retries on the new one)."""
    with open(TCP_MIGRATE_REQ, "w") as f:
        f.write("0\n")
    zero = os.path.join(env["workdir"], "tcp_migrate_req")
    with open(zero, "w") as f:
        f.write("0\n")
    subprocess.run(["mount", "--bind", zero, TCP_MIGRATE_REQ], check=True)
    subprocess.run(["mount", "-o", "remount,bind,ro", TCP_MIGRATE_REQ], check=True)
    try:
        p, tcp, new = update_with_surge(env, "1b. the same, net.ipv4.tcp_migrate_req=0")
    finally:
        subprocess.run(["umount", TCP_MIGRATE_REQ], check=True)
    if "net.ipv4.tcp_migrate_req is off and" not in new.log():
        p.append("the new node cache did not warn that it cannot turn tcp_migrate_req on")
    return p


def test_kill_9_of_the_node_cache_then_its_return(env):
    backend, nanny = env["backend"], env["nanny"]
    load = start_load()
    pids = whole_node_cache(nanny)
    killed_at = time.monotonic()
    os.killpg(nanny.pid, signal.SIGKILL)  # the container's processes, all at once
    nanny.wait(10)
    p = []
    if not harness.wait_until(lambda: not any(os.path.exists("/proc/%d" % pid) for pid in pids
                                              if pid != nanny.pid), 5):
        p.append("frontend-cache survived the kill")
    # The addresses stay on lo (only a live process removes them): they must not block
    # kube-proxy's DNAT of the ClusterIP.
    if addresses_present() != LOCAL_IPS:
        p.append("addresses after kill -9: %s" % addresses_present())
    # nftables: the owned table went with the nanny's netlink socket, before wait() returned.
    if backend.name == "nftables" and backend.rules_present():
        p.append("nftables: the rules outlived the nanny")
    time.sleep(2.0)
    dead_until = time.monotonic()
    restarted_at = time.monotonic()
    new = start_nanny(env, backend, wait=False)
    rules_in = harness.time_until(backend.rules_present, timeout=10, start=restarted_at)
    serving_in = harness.time_until(lambda: serving(new) or not new.alive(), timeout=20,
                                    start=restarted_at)
    time.sleep(1.0)
    load.stop()
    cluster, link = load.target("ClusterIP"), load.target("link-local")
    central_after_ms = cluster.first_ok_after(killed_at)
    cache_back_ms = link.first_ok_after(restarted_at)
    lost_dead = cluster.lost_between(killed_at, dead_until)
    lost_back = cluster.lost_between(restarted_at, float("inf"))
    record(env, "2. kill -9 nanny+child, restart after 2 s", load,
           "  (ClusterIP answered %s ms after the kill; rules %s ms after the restart)" % (
               "never" if central_after_ms is None else "%.0f" % central_after_ms,
               "never" if rules_in is None else "%.0f" % (rules_in * 1000)))
    env["figures"].append(("%-9s %-46s" % (backend.name, "2. ... while dead / after restart"),
                           "ClusterIP lost %d / %d; link-local refused %d; link-local "
                           "answered %s ms after the restart" % (
                               lost_dead, lost_back, link.refused,
                               "never" if cache_back_ms is None else "%.0f" % cache_back_ms)))
    load_covered(load, killed_at, dead_until, p)
    # Times are figures (printed above); what is asserted is what happened, and in what order.
    if backend.name == "nftables":
        # The owned table went with the nanny: kube-proxy's DNAT reaches the central DNS
        # while the node cache is dead.
        if central_after_ms is None or central_after_ms > (dead_until - killed_at) * 1000:
            p.append("the ClusterIP was not answered while the node cache was dead")
    else:
        # iptables has no owner: the NOTRACK rules stay, the ClusterIP is black-holed until
        # the node cache is back (documented; node-cache does the same).
        if lost_dead == 0:
            p.append("iptables: no query lost while the node cache was dead (rules gone?)")
    # The restarted node cache puts its rules in before its cache serves (right after its
    # sockets), and from then on nothing is lost and the link-local address answers.
    if rules_in is None or serving_in is None or rules_in > serving_in:
        p.append("the restarted node cache's rules came at %s s, its cache served at %s s"
                 % (rules_in, serving_in))
    if cache_back_ms is None:
        p.append("the link-local address was not answered after the restart")
    # nftables: the DNAT serves until our rules come, right after our sockets: nothing lost.
    # iptables: the old rules still send the ClusterIP to us: refused until our sockets are
    # bound (milliseconds), none lost once it serves.
    if backend.name == "nftables" and lost_back:
        p.append("ClusterIP queries lost after the restart: %d" % lost_back)
    if serving_in is not None:
        late_lost = cluster.lost_between(restarted_at + serving_in, float("inf"))
        if late_lost:
            p.append("ClusterIP queries lost once the restarted cache served: %d" % late_lost)
    if cluster.servfail or link.servfail:
        p.append("SERVFAIL: ClusterIP %d, link-local %d" % (cluster.servfail, link.servfail))
    return p


def test_sigterm_alone_loses_nothing_on_the_cluster_ip(env):
    backend, nanny = env["backend"], env["nanny"]
    load = start_load()
    time.sleep(0.5)
    term_at = time.monotonic()
    nanny.signal(signal.SIGTERM)
    code = nanny.wait(20)
    exited_at = time.monotonic()
    time.sleep(1.0)
    load.stop()
    record(env, "3. SIGTERM, no other node cache", load)
    cluster = load.target("ClusterIP")
    p = []
    load_covered(load, term_at, exited_at, p)
    if code != 0:
        p.append("the nanny exited with %s" % code)
    if cluster.lost or cluster.servfail or cluster.other:
        p.append("ClusterIP: %s" % cluster.figures())
    if not backend.rules_gone() or addresses_present():
        p.append("left: rules %s, addresses %s" % (not backend.rules_gone(), addresses_present()))
    if not answers(CLUSTER_IP):
        p.append("the central DNS does not answer the ClusterIP after the teardown")
    start_nanny(env, backend)  # the next case's node cache
    return p


def test_crash_loop_of_the_child_loses_at_most_one_per_restart(env):
    nanny = env["nanny"]
    load = start_load()
    restarts = 3
    p = []
    first_kill_at = time.monotonic()
    for _ in range(restarts):
        before = serving_lines(nanny)
        # frontend-cache only, not a command the nanny runs (ip, nft) at that moment.
        for child in children_of(nanny.pid):
            if os.path.basename((cmdline(child) or [""])[0]) != "frontend-cache":
                continue
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass  # it exited meanwhile
        if not harness.wait_until(lambda: serving_lines(nanny) > before, 10):
            p.append("frontend-cache was not started again: " + nanny.log()[-1500:])
            break
        time.sleep(0.3)
    time.sleep(0.5)
    load.stop()
    record(env, "4. kill -9 of frontend-cache x%d (nanny stays)" % restarts, load)
    load_covered(load, first_kill_at, time.monotonic(), p)
    for target in load.targets:
        if target.lost > restarts or target.servfail or target.other or target.refused:
            p.append("%s: %s" % (target.label, target.figures()))
    if not nanny.alive():
        p.append("the nanny gave up: " + nanny.log()[-1500:])
    return p


TESTS = [test_update_with_surge_loses_nothing, test_update_without_tcp_migration,
         test_kill_9_of_the_node_cache_then_its_return,
         test_sigterm_alone_loses_nothing_on_the_cluster_ip,
         test_crash_loop_of_the_child_loses_at_most_one_per_restart]


def run_phases(env, checks):
    env["figures"] = []
    node_local_env.run_per_backend(env, checks, TESTS)
    harness.print_figures("node-local lifecycle under load (%d q/s to the ClusterIP, %d q/s to "
                          "the link-local address, 2 s timeout)" % (CLUSTER_IP_QPS,
                                                                   LINK_LOCAL_QPS),
                          env["figures"], width=80)


def main():
    return node_local_env.main(__file__, "kdns-node-local-lifecycle-e2e-", run_phases)


if __name__ == "__main__":
    sys.exit(main())
