#!/usr/bin/python3
"""Forwarded names in random 0x20 case, end to end (common/upstream/dns0x20.h).

Real upstreams echo the case: frontend-cache with --upstream-0x20=on (never falls back, so
every answer proves the upstream echoed the random spelling) forwarding to NSD and to
unbound, frontend-cache forwarding cluster names to kubedns, and kubedns's forwarder to
NSD, answer every miss right, with the client's spelling. Against the scripted fake
(test/e2e/fake_upstream.py): a reply with our port, ID and question in the wrong case (a
spoof that guessed all but the case) is dropped and the real answer wins; an upstream that
lower-cases every question (echo_case=False) keeps answering under the default
--upstream-0x20=auto, and after a few replies gets the plain name.

Closes with `N passed, M failed`. KDNS_ONLY=substring runs the matching tests only;
KDNS_KEEP_TMP=1 keeps the temporary directory (logs of every process) after a failure.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_upstream as fu  # noqa: E402
import harness  # noqa: E402
import servers  # noqa: E402

MISMATCH = 'kdns_limit_hits_total{limit="upstream_0x20_mismatch"}'
FALLBACK = 'kdns_limit_hits_total{limit="upstream_0x20_fallback"}'

# Distinct spellings of names NSD (example.test) and unbound (other.test) serve: with
# --cache-size=0 each is a miss, forwarded in its own random case.
NSD_NAMES = [("WwW.ExAmPlE.tEsT.", "192.0.2.10"), ("www.EXAMPLE.test.", "192.0.2.10"),
             ("MAIL.example.TEST.", "192.0.2.25"), ("mAiL.eXaMpLe.TeSt.", "192.0.2.25"),
             ("Short.Example.Test.", "192.0.2.12")]
UNBOUND_NAMES = [("wWw.OtHeR.tEsT.", "198.51.100.7"), ("WWW.OTHER.TEST.", "198.51.100.7"),
                 ("www.other.test.", "198.51.100.7")]

OBJECTS = """{"apiVersion": "v1", "kind": "List", "items": [
 {"apiVersion": "v1", "kind": "Service",
  "metadata": {"name": "kubernetes", "namespace": "default"},
  "spec": {"clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1"],
           "ports": [{"name": "https", "port": 443, "protocol": "TCP"}]}}]}
"""
CLUSTER_NAMES = [("kubernetes.default.svc.cluster.local.", "10.96.0.1"),
                 ("KuBeRnEtEs.DeFaUlT.sVc.ClUsTeR.lOcAl.", "10.96.0.1"),
                 ("KUBERNETES.default.SVC.cluster.LOCAL.", "10.96.0.1")]


def start_kubedns(workdir, name, *flags):
    objects = os.path.join(workdir, "objects.json")
    with open(objects, "w") as f:
        f.write(OBJECTS)
    resolv = os.path.join(workdir, "resolv.conf")
    with open(resolv, "w") as f:
        f.write("# none: --nameservers only\n")
    return servers.Kubedns(workdir, name, "--objects-file=" + objects,
                           "--resolv-conf=" + resolv, *flags)


def answered_as_asked(got, name, ip):
    """Problems with `got`, the answer to `name`: NOERROR, `ip` among the A records, every
    A record owned by the name as the client spelt it."""
    if got.status != "NOERROR":
        return ["%s: %s, want NOERROR" % (name, got.status)]
    a = [r for r in got.answer if r.type == "A"]
    p = []
    if ip not in [r.rdata for r in a]:
        p.append("%s: answer %s, want %s" % (name, got.answer, ip))
    if any(r.name != name for r in a):
        p.append("%s: owners %s, want the client's spelling" % (name, [r.name for r in a]))
    return p


def test_frontend_cache_against_nsd_and_unbound(env):
    workdir, nsd, unbound = env["workdir"], env["nsd"], env["unbound"]
    fe = servers.FrontendCache(workdir, "fe-0x20-on", "--upstream-0x20=on", "--cache-size=0",
                               "--server=/other.test/" + unbound.address,
                               "--server=" + nsd.address)
    try:
        p = []
        for name, ip in NSD_NAMES + UNBOUND_NAMES:
            p += answered_as_asked(fe.dig(name), name, ip)
        forwarded = fe.metric("kdns_frontend_forward_requests_total")
        if forwarded < len(NSD_NAMES) + len(UNBOUND_NAMES):
            p.append("only %s queries forwarded: the answers did not come from the "
                     "upstreams" % forwarded)
        for series in (MISMATCH, FALLBACK):
            if fe.metric(series) != 0:
                p.append("%s = %s: a real upstream's reply was taken for a wrong case" % (
                    series, fe.metric(series)))
        return p
    finally:
        fe.stop()


def test_kubedns_against_nsd(env):
    workdir, nsd = env["workdir"], env["nsd"]
    kd = start_kubedns(workdir, "kubedns-0x20-on", "--upstream-0x20=on",
                       "--nameservers=127.0.0.1:%d" % nsd.port)
    try:
        p = []
        for name, ip in NSD_NAMES:
            p += answered_as_asked(harness.dig(kd.port, name), name, ip)
        for series in (MISMATCH, FALLBACK):
            if kd.metric(series) != 0:
                p.append("%s = %s against NSD" % (series, kd.metric(series)))
        return p
    finally:
        kd.stop()


def test_frontend_cache_against_kubedns(env):
    """The pod's own path: cluster names from frontend-cache to kubedns, which echoes."""
    workdir = env["workdir"]
    kd = start_kubedns(workdir, "kubedns-upstream")
    fe = None
    try:
        fe = servers.FrontendCache(workdir, "fe-0x20-kubedns", "--upstream-0x20=on",
                                   "--cache-size=0",
                                   "--server=/cluster.local/127.0.0.1#%d" % kd.port)
        p = []
        for name, ip in CLUSTER_NAMES:
            p += answered_as_asked(fe.dig(name), name, ip)
        got = fe.dig("nope.default.svc.cluster.local.")
        if got.status != "NXDOMAIN":
            p.append("nope.default.svc.cluster.local.: %s, want NXDOMAIN" % got.status)
        if fe.metric("kdns_frontend_forward_requests_total") < len(CLUSTER_NAMES) + 1:
            p.append("the cluster names were not forwarded to kubedns")
        if fe.metric(MISMATCH) != 0:
            p.append("%s = %s against kubedns" % (MISMATCH, fe.metric(MISMATCH)))
        return p
    finally:
        if fe:
            fe.stop()
        kd.stop()


def test_spoof_in_the_wrong_case_is_dropped(env):
    workdir = env["workdir"]
    fake = fu.FakeUpstream(name="fake-spoof")
    fe = None
    try:
        fe = servers.FrontendCache(workdir, "fe-0x20-spoof", "--server=" + fake.address,
                                   threads=1)
        p = answered_as_asked(fe.dig("Warm.Up.Fake.Test."), "Warm.Up.Fake.Test.", "192.0.2.1")
        victims = ["Victim-%d.Fake.Test." % i for i in range(5)]
        for victim in victims:
            fake.set(victim, "wrongcase")
            got = fe.dig(victim)
            if fu.POISON_IP in [r.rdata for r in got.answer]:
                p.append("%s: the spoofed answer %s was taken" % (victim, fu.POISON_IP))
            p += answered_as_asked(got, victim, "192.0.2.1")
        # The spoofs landed (our port, ID and question) and were counted.
        if fe.metric(MISMATCH) < len(victims):
            p.append("%s = %s, want >= %d: the spoofs never reached the check" % (
                MISMATCH, fe.metric(MISMATCH), len(victims)))
        if fe.metric(FALLBACK) != 0:
            p.append("spoofs in the wrong case turned 0x20 off (%s = %s)" % (
                FALLBACK, fe.metric(FALLBACK)))
        if any(len(fake.received(v)) != 1 for v in victims):
            p.append("a victim was asked again: %s" % [len(fake.received(v)) for v in victims])
        return p
    finally:
        if fe:
            fe.stop()
        fake.stop()


def test_upstream_that_lower_cases_gets_the_plain_name(env):
    workdir = env["workdir"]
    fake = fu.FakeUpstream(name="fake-lower", echo_case=False)
    fe = None
    try:
        fe = servers.FrontendCache(workdir, "fe-0x20-auto", "--server=" + fake.address,
                                   threads=1)
        p = []
        names = ["Name-%d.Lower.Test." % i for i in range(6)]
        for name in names:
            p += answered_as_asked(fe.dig(name), name, "192.0.2.1")
        if fe.metric(FALLBACK) != 1:
            p.append("%s = %s, want 1 (one serving thread)" % (FALLBACK, fe.metric(FALLBACK)))
        # Before the fallback: random case, then the plain name; after it: the plain name.
        first, last = fake.received(names[0]), fake.received(names[-1])
        if len(first) != 2 or first[-1]["name"] != names[0]:
            p.append("first name: asked as %s, want random case then %s" % (
                [q["name"] for q in first], names[0]))
        if [q["name"] for q in last] != [names[-1]]:
            p.append("after the fallback: asked as %s, want [%s]" % (
                [q["name"] for q in last], names[-1]))
        return p
    finally:
        if fe:
            fe.stop()
        fake.stop()


TESTS = [test_frontend_cache_against_nsd_and_unbound,
         test_kubedns_against_nsd,
         test_frontend_cache_against_kubedns,
         test_spoof_in_the_wrong_case_is_dropped,
         test_upstream_that_lower_cases_gets_the_plain_name]


def setup(workdir, owned):
    env = servers.start_nsd(workdir, owned)
    unbound = servers.Unbound(workdir)
    owned.append(unbound)
    env["unbound"] = unbound
    return env


def main():
    return harness.main("kdns-upstream-0x20-", TESTS,
                        tools=(os.path.join(harness.BIN, "frontend-cache"),
                               os.path.join(harness.BIN, "kubedns"), servers.NSD,
                               servers.UNBOUND),
                        setup=setup)


if __name__ == "__main__":
    sys.exit(main())
