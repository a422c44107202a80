#!/usr/bin/python3
"""Node-local mode end to end: the nanny as the per-node cache, on the "node" of
node_local_env.py (a network and mount namespace of its own; root, skipped with the reason
otherwise).

Once per backend (auto, which finds kube-proxy's nftables table and picks nftables; then
--firewall=iptables): a client on the node resolves a cluster name through each address and
frontend-cache counts the queries (the cache answered, not the central DNS, which the DNAT
would have reached without our NOTRACK rules); /health is 200; the rules are in the backend
and the addresses on lo; a deleted rule and a deleted address are put back within the sync
interval and counted (nftables: the nanny's own table refuses another process's change);
SIGTERM removes the rules that send queries here, then the child stops, then the other rules
and the addresses go, the nanny exits 0,
and the ClusterIP is answered by the central DNS again. Then -skipteardown leaves both in
place. Prints `N passed, M failed` last. The lifecycle under load (updates, kill -9, crash
loops) is node_local_lifecycle_test.py's.
"""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import node_local_env  # noqa: E402
from node_local_env import (CLUSTER_IP, CLUSTER_IP_V6, HEALTH_PORT, LINK_LOCAL,  # noqa: E402
                            LOCAL_IPS, METRICS_PORT, NAME, NAME_IP, SYNC_INTERVAL_S, UPSTREAM_IP,
                            addresses_present, answers, dig_at, health, lo_addresses, metric, sh,
                            start_nanny)


def test_answers_through_every_local_address(env):
    p = []
    before = metric("kdns_frontend_queries_total")
    for server in LOCAL_IPS:
        for options in ((), ("+tcp",)):
            answer = dig_at(server, NAME, *options)
            if answer.status != "NOERROR" or NAME_IP not in answer.rdatas("A"):
                p.append("@%s %s: %s" % (server, " ".join(options), answer))
    # The cache counted every query: traffic to the ClusterIP skipped kube-proxy's DNAT.
    after = metric("kdns_frontend_queries_total")
    if before is None or after is None or after - before < 2 * len(LOCAL_IPS):
        p.append("frontend-cache counted %s -> %s queries, not %d more" %
                 (before, after, 2 * len(LOCAL_IPS)))
    if "-conf has no meaning for kdns" not in env["nanny"].log():
        p.append("no warning line for -conf")
    # Its miss went to kube-dns-upstream over TCP (tcp://, persistent connections), not UDP.
    over_tcp = 'kdns_frontend_upstream_queries_total{upstream="tcp://%s#53"}' % UPSTREAM_IP
    over_udp = 'kdns_frontend_upstream_queries_total{upstream="%s#53"}' % UPSTREAM_IP
    if not metric(over_tcp) or metric(over_udp):
        p.append("upstream queries: %s over TCP, %s over UDP; want TCP only"
                 % (metric(over_tcp), metric(over_udp)))
    return p


def test_health_and_metrics(env):
    p = []
    for address in (LINK_LOCAL, CLUSTER_IP):
        status, body = health(address)
        if (status, body) != (200, "OK"):
            p.append("GET %s:%d/health: %s %r" % (address, HEALTH_PORT, status, body))
    backend = env["backend"].name
    for series, want in (('kdns_nodelocal_firewall_info{backend="%s"}' % backend, 1),
                         ("kdns_nodelocal_rules_ok", 1), ("kdns_nodelocal_interface_ok", 1),
                         ("kdns_nodelocal_sync_errors_total", 0),
                         ("kdns_nanny_config_generation", 1)):
        got = metric(series)
        if got != want:
            p.append("%s is %s, not %s" % (series, got, want))
    return p


def test_rules_and_addresses_in_place(env):
    p = []
    if not env["backend"].rules_present():
        p.append("rules missing from %s" % env["backend"].name)
    if addresses_present() != LOCAL_IPS:
        p.append("addresses on lo: %s" % lo_addresses())
    return p


def test_deleted_rule_and_address_put_back(env):
    backend = env["backend"]
    rules_before = metric('kdns_nodelocal_repairs_total{what="rules"}')
    addresses_before = metric('kdns_nodelocal_repairs_total{what="addresses"}')
    deleted = backend.delete_a_rule()
    sh("ip", "addr", "del", LINK_LOCAL + "/32", "dev", "lo")
    p = []
    if backend.name == "nftables" and deleted:
        p.append("another process changed the nanny's own nftables table")
    # Within the sync interval (and a margin for a loaded machine).
    if not harness.wait_until(lambda: backend.rules_present() and
                              LINK_LOCAL in addresses_present(), SYNC_INTERVAL_S * 5):
        p.append("not put back: rules %s, addresses %s" %
                 (backend.rules_present(), addresses_present()))
    if not harness.wait_until(
            lambda: metric('kdns_nodelocal_repairs_total{what="rules"}') ==
            rules_before + (1 if deleted else 0) and
            metric('kdns_nodelocal_repairs_total{what="addresses"}') == addresses_before + 1, 5):
        p.append("repairs not counted: rules %s -> %s, addresses %s -> %s" % (
            rules_before, metric('kdns_nodelocal_repairs_total{what="rules"}'),
            addresses_before, metric('kdns_nodelocal_repairs_total{what="addresses"}')))
    if not answers(LINK_LOCAL):
        p.append("no answer through %s after the repair" % LINK_LOCAL)
    return p


def test_the_node_local_alerts_read_what_it_serves(env):
    """Every name the monitoring rules' node-local group and the dashboard's node-cache
    panels use is on the metrics address (monitoring_test.py checks the rest on the
    central pod)."""
    import monitoring_test  # its rules and PromQL name reader
    _, _, body = harness.http_get(METRICS_PORT, "/metrics")
    served = monitoring_test.family_names(monitoring_test.names_in(body))
    p = []
    for rule in monitoring_test.rule_groups()[monitoring_test.NODE_LOCAL_GROUP]:
        for name in sorted(monitoring_test.metric_names(rule["expr"])):
            if name not in served:
                p.append("%s uses %s, which the node cache does not serve"
                         % (rule["alert"], name))
    for title, expr in monitoring_test.dashboard_exprs():
        for name in sorted(monitoring_test.metric_names(expr)):
            if name.startswith(monitoring_test.NODE_LOCAL_PREFIX) and name not in served:
                p.append("panel %r uses %s, which the node cache does not serve"
                         % (title, name))
    return p


def test_sigterm_tears_down_and_the_central_dns_answers_again(env):
    backend, nanny = env["backend"], env["nanny"]
    nanny.signal(signal.SIGTERM)
    code = nanny.wait(20)
    p = []
    if code != 0:
        p.append("the nanny exited with %s" % code)
    if not backend.rules_gone():
        p.append("rules left in %s" % backend.name)
    if addresses_present():
        p.append("addresses left on lo: %s" % addresses_present())
    # kube-proxy's DNAT takes the ClusterIPs to the central DNS again.
    for cluster_ip in (CLUSTER_IP, CLUSTER_IP_V6):
        answer = dig_at(cluster_ip)
        if answer.status != "NOERROR" or NAME_IP not in answer.rdatas("A"):
            p.append("@%s after the teardown: %s" % (cluster_ip, answer))
    # The rules that send queries here, then the child's lameduck (it answers what reached
    # us, its replies still untracked), then the other rules and the addresses.
    log = nanny.log()
    capture_at = log.find("node-local rules that send queries here removed")
    child_at = log.find("lameduck: answering")
    rules_at = log.find("node-local rules removed")
    addresses_at = log.find("node-local addresses removed")
    if not 0 <= capture_at < child_at < rules_at < addresses_at:
        p.append("teardown order (capture %d, child %d, rules %d, addresses %d): %s" %
                 (capture_at, child_at, rules_at, addresses_at, log[-1500:]))
    return p


def test_skipteardown_leaves_rules_and_addresses(env):
    backend = env["backend"]
    nanny = start_nanny(env, backend, "-skipteardown")
    p = []
    nanny.signal(signal.SIGTERM)
    code = nanny.wait(20)
    if code != 0:
        p.append("the nanny exited with %s" % code)
    if not backend.rules_present():
        p.append("-skipteardown: rules removed from %s" % backend.name)
    if addresses_present() != LOCAL_IPS:
        p.append("-skipteardown: addresses removed: %s" % lo_addresses())
    backend.clean_up()
    for ip in LOCAL_IPS:
        sh("ip", "addr", "del", ip + ("/128" if ":" in ip else "/32"), "dev", "lo", check=False)
    return p


TESTS = [test_answers_through_every_local_address, test_health_and_metrics,
         test_rules_and_addresses_in_place, test_deleted_rule_and_address_put_back,
         test_the_node_local_alerts_read_what_it_serves,
         test_sigterm_tears_down_and_the_central_dns_answers_again,
         test_skipteardown_leaves_rules_and_addresses]


def run_phases(env, checks):
    node_local_env.run_per_backend(env, checks, TESTS)


def main():
    return node_local_env.main(__file__, "kdns-node-local-e2e-", run_phases)


if __name__ == "__main__":
    sys.exit(main())
