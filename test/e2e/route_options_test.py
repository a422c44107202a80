#!/usr/bin/python3
"""Per-route transport and health (--route-options, the ConfigMap's kdns.routeOptions;
CoreDNS forward's force_tcp, prefer_udp, policy, max_fails, health_check), end to end.

Against scripted upstreams (test/e2e/fake_upstream.py), each counting what it receives:
frontend-cache with force_tcp asks a route's upstream over TCP only and prefer_udp asks a
TCP client's query over UDP; policy=sequential always asks the first upstream; max_fails
unanswered health probes mark a silent upstream down (queries fail at once, the metric says
so) until it answers again; kubedns applies the same options from --route-options and
from kdns.routeOptions in its --config-dir; and the nanny hands kdns.routeOptions to
frontend-cache (its servers file), applied and removed at run time.

Closes with `N passed, M failed`. KDNS_ONLY=substring runs the matching tests only;
KDNS_KEEP_TMP=1 keeps the temporary directory (logs of every process) after a failure.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_upstream as fu  # noqa: E402
import harness  # noqa: E402
import nanny_env  # noqa: E402
import servers  # noqa: E402


def own(env, thing):
    """`thing`, stopped after the test (the suite runs with reset_each)."""
    env["owned"].append(thing)
    return thing


def expect_answer(got, ip, what):
    if got.status != "NOERROR" or [r.rdata for r in got.answer] != [ip]:
        return ["%s: got %s, want NOERROR %s" % (what, got, ip)]
    return []


def test_force_tcp_and_prefer_udp(env):
    workdir = env["workdir"]
    forced = own(env, fu.FakeUpstream(name="forced", answer_ip="192.0.2.10"))
    preferred = own(env, fu.FakeUpstream(name="preferred", answer_ip="192.0.2.20"))
    p = []
    fe = own(env, servers.FrontendCache(workdir, "fe-transport",
                                        "--server=/forced.test/" + forced.address,
                                        "--server=/preferred.test/" + preferred.address,
                                        "--route-options=/forced.test/force_tcp",
                                        "--route-options=/preferred.test/prefer_udp"))
    for i in range(5):
        p += expect_answer(fe.dig("h%d.forced.test" % i), "192.0.2.10", "force_tcp route")
        p += expect_answer(fe.dig("h%d.preferred.test" % i, "A", "+tcp"), "192.0.2.20",
                           "prefer_udp route, client over TCP")
    if forced.received(transport="udp"):
        p.append("force_tcp: %d queries over UDP" % len(forced.received(transport="udp")))
    if len(forced.received(transport="tcp")) < 5:
        p.append("force_tcp: %d queries over TCP, want 5" % len(forced.received(transport="tcp")))
    if preferred.received(transport="tcp"):
        p.append("prefer_udp: %d queries over TCP" % len(preferred.received(transport="tcp")))
    label = 'kdns_frontend_upstream_queries_total{upstream="tcp://%s"}' % forced.address
    if fe.metric(label) < 5:
        p.append("%s is %s, want >= 5" % (label, fe.metric(label)))
    return p


def test_sequential(env):
    """The second upstream is never asked while the first answers; without the option the
    fastest (the never-measured second one, at first) is asked too. The first answers 20 ms
    late, so it is measured slower: on loopback both would measure 0 ms and tie, and the tie
    keeps the written order."""
    workdir = env["workdir"]
    first = own(env, fu.FakeUpstream(name="first", answer_ip="192.0.2.1", default="slow",
                                      default_params={"delay": 0.02}))
    second = own(env, fu.FakeUpstream(name="second", answer_ip="192.0.2.2"))
    p = []
    fe = own(env, servers.FrontendCache(workdir, "fe-sequential",
                                        "--server=/seq.test/" + first.address,
                                        "--server=/seq.test/" + second.address,
                                        "--server=/fast.test/" + first.address,
                                        "--server=/fast.test/" + second.address,
                                        "--route-options=/seq.test/policy=sequential"))
    for i in range(10):
        p += expect_answer(fe.dig("h%d.seq.test" % i), "192.0.2.1", "sequential route")
    if second.received():
        p.append("policy=sequential: the second upstream got %d queries" % len(second.received()))
    for i in range(10):
        fe.dig("h%d.fast.test" % i)
    if not second.received():
        p.append("without a policy the second upstream is never asked either: the "
                 "check above proves nothing")
    return p


def test_max_fails(env):
    """max_fails=2,health_check=200ms: a silent upstream is marked down after two
    unanswered probes, its queries then fail at once without reaching it, and it is back as
    soon as it answers a probe."""
    workdir = env["workdir"]
    fake = own(env, fu.FakeUpstream(name="flaky", default="silent", answer_ip="192.0.2.30"))
    p = []
    fe = own(env, servers.FrontendCache(workdir, "fe-max-fails",
                                        "--server=/mf.test/" + fake.address,
                                        "--route-options=/mf.test/max_fails=2,health_check=200ms",
                                        threads=1))
    upstream = 'upstream="%s"' % fake.address
    # Two queries of two tries each: 3 timeouts in a row mark the upstream failed, which
    # starts the probes.
    asked = [harness.dig_async(fe.port, "q%d.mf.test" % i, timeout=15) for i in (1, 2)]
    for proc in asked:
        out, _ = proc.communicate(timeout=60)
        got = harness.Answer(out, proc.returncode)
        if got.status != "SERVFAIL":
            p.append("a silent upstream: got %s, want SERVFAIL" % got)
    if not harness.wait_until(
            lambda: fe.metric("kdns_frontend_upstream_marked_down_total{%s}" % upstream) == 1,
            15):
        return p + ["the silent upstream was never marked down: %s" % fe.process.log()[-800:]]
    failures = fe.metric("kdns_frontend_upstream_health_check_failures_total{%s}" % upstream)
    if failures < 2:
        p.append("marked down after %s unanswered probes, want max_fails=2" % failures)
    got = fe.dig("two.mf.test", timeout=15)
    if got.status != "SERVFAIL":
        p.append("an upstream marked down: got %s, want SERVFAIL" % got)
    if fake.received("two.mf.test"):
        p.append("a query was sent to the upstream marked down")
    fake.default = "answer"
    if not harness.wait_until(lambda: fe.dig("three.mf.test").status == "NOERROR", 15):
        p.append("the upstream never came back after it answered again")
    return p


def test_kubedns_flag_and_configmap(env):
    """kubedns: --route-options for the default upstreams (force_tcp), kdns.routeOptions
    in the ConfigMap for a stub domain (force_tcp), both counted at the upstream."""
    workdir = env["workdir"]
    default = own(env, fu.FakeUpstream(name="kd-default", answer_ip="192.0.2.40"))
    stub = own(env, fu.FakeUpstream(name="kd-stub", answer_ip="192.0.2.50"))
    p = []
    objects = os.path.join(workdir, "objects.json")
    with open(objects, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": []}, f)
    config = os.path.join(workdir, "kube-dns-config")
    os.makedirs(config)
    stub_port = stub.address.split("#")[1]
    with open(os.path.join(config, "stubDomains"), "w") as f:
        json.dump({"acme.test": ["127.0.0.1:" + stub_port]}, f)
    with open(os.path.join(config, "kdns.routeOptions"), "w") as f:
        json.dump({"acme.test": "force_tcp"}, f)
    kd = own(env, servers.Kubedns(workdir, "kubedns-routes", "--objects-file=" + objects,
                                  "--config-dir=" + config, "--config-period=100ms",
                                  "--nameservers=127.0.0.1:" + default.address.split("#")[1],
                                  "--route-options=force_tcp"))
    for i in range(3):
        p += expect_answer(harness.dig(kd.port, "h%d.example.test" % i, "A", None),
                           "192.0.2.40", "kubedns default route")
        p += expect_answer(harness.dig(kd.port, "h%d.acme.test" % i, "A", None),
                           "192.0.2.50", "kubedns stub domain")
    for fake, what in ((default, "--route-options=force_tcp"),
                       (stub, "kdns.routeOptions force_tcp")):
        if fake.received(transport="udp") or len(fake.received(transport="tcp")) < 3:
            p.append("%s: %d queries over UDP and %d over TCP, want TCP only" % (
                what, len(fake.received(transport="udp")), len(fake.received(transport="tcp"))))
    return p


def test_nanny_hands_on_configmap_options(env):
    """kdns.routeOptions in the ConfigMap volume (as the kubelet writes it): the nanny's
    frontend-cache asks the stub domain's upstream over TCP only; with the key removed,
    over UDP again, without a restart."""
    workdir = env["workdir"]
    stub = own(env, fu.FakeUpstream(name="nanny-stub", answer_ip="192.0.2.60"))
    p = []
    volume = harness.ConfigMapDir(os.path.join(workdir, "nanny-route-options"))
    stubs = json.dumps({"acme.test": ["127.0.0.1:" + stub.address.split("#")[1]]})
    volume.publish({"stubDomains": stubs,
                    "kdns.routeOptions": json.dumps({"acme.test": "force_tcp"})})
    nanny = own(env, nanny_env.Nanny(workdir, "nanny-routes", volume.path))
    if not harness.wait_until(
            lambda: harness.dig(nanny.port, "first.acme.test").status == "NOERROR", 20):
        return ["the stub domain never answered through the nanny's frontend-cache"]
    for i in range(3):
        p += expect_answer(harness.dig(nanny.port, "h%d.acme.test" % i), "192.0.2.60",
                           "stub domain with force_tcp from the ConfigMap")
    if stub.received(transport="udp"):
        p.append("kdns.routeOptions force_tcp: %d queries over UDP"
                 % len(stub.received(transport="udp")))
    pid = nanny.child()
    volume.publish({"stubDomains": stubs})
    if not harness.wait_until(
            lambda: (harness.dig(nanny.port, "u%f.acme.test" % os.times()[4]) and
                     stub.received(transport="udp")), 20):
        p.append("kdns.routeOptions removed: the stub domain is still asked over TCP only")
    if nanny.child() != pid:
        p.append("frontend-cache was restarted to apply kdns.routeOptions")
    return p


TESTS = [test_force_tcp_and_prefer_udp,
         test_sequential,
         test_max_fails,
         test_kubedns_flag_and_configmap,
         test_nanny_hands_on_configmap_options]


if __name__ == "__main__":
    sys.exit(harness.main(
        "kdns-route-options-e2e-", TESTS, reset_each=True,
        tools=(os.path.join(harness.BIN, "frontend-cache"), os.path.join(harness.BIN, "kubedns"),
               os.path.join(harness.BIN, "nanny"), "/usr/bin/dig")))
