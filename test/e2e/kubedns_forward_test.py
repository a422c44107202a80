#!/usr/bin/python3
"""kubedns forwarding what it does not own, end to end, against real upstreams.

Starts, unprivileged on free loopback ports: two unbound servers from Debian (the default
upstreams; each serves example.test with its own address for www, and a reverse zone) and
NSD (authoritative for acme.test, a stub domain, with a CNAME out of its zone), then the
real kubedns binary with an objects file, --nameservers naming the first unbound and a
--config-dir laid out as the kubelet mounts a ConfigMap (timestamped directories behind an
atomically swapped `..data` link). Checks with real dig: forwarding over UDP and TCP with
the client's ID and name case, EDNS, reverse names (ours answered, unknown ones
forwarded), NXDOMAIN passed through, ExternalName chains completed through the upstreams
(and through a stub domain, and an authoritative out-of-zone CNAME followed); then
ConfigMap changes at run time: stubDomains routing to NSD, upstreamNameservers overriding
--nameservers, an invalid change rejected with the previous configuration kept, and the
return to --nameservers; the metrics; --nameservers=tcp:// (over TCP only, one persistent
connection); and SERVFAIL from a kubedns with no upstream at all.
Closes with `N passed, M failed`.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import servers  # noqa: E402
import kubedns_conformance_test as conformance  # noqa: E402

BIN = harness.BIN


def wait_until(check, timeout=15.0):
    """harness.wait_until, a server that does not answer yet counting as "not yet"."""
    return harness.wait_until(check, timeout, ignore=(Exception,))

OBJECTS = {
    "apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": "kubernetes", "namespace": "default"},
         "spec": {"clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1"],
                  "ports": [{"name": "https", "port": 443, "protocol": "TCP"}]}},
    ] + [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "default"},
         "spec": {"type": "ExternalName", "externalName": target}}
        for name, target in (("ext", "www.example.test"), ("stubext", "host.acme.test"),
                             ("chain", "out.acme.test"), ("missing", "nope.example.test"))
    ],
}


def dig(port, name, qtype="A", *options):
    """What dig sees, as conformance.sections_of reads it, with the raw output, the
    question's name and the answer and authority record lines."""
    answer = harness.dig(port, name, qtype, None, *options, timeout=3)
    got = conformance.sections_of(answer)
    got["raw"] = answer.raw
    got["question"] = answer.question.split()[0] if answer.question else None
    got["answer"] = got["sections"]["ANSWER"]
    got["authority"] = got["sections"]["AUTHORITY"]
    return got


def rrs(records):
    """(owner, type, rdata) of each folded record line."""
    out = []
    for record in records:
        parts = record.split(" ", 4)
        out.append((parts[0], parts[3], parts[4] if len(parts) > 4 else ""))
    return out


def start_unbound(procs, tmp, name, www):
    """unbound serving example.test with `www` as www's address, and a reverse zone."""
    unbound = servers.Unbound(tmp, name, local=f"""  local-zone: "example.test." static
  local-data: "example.test. 300 IN SOA ns.example.test. hostmaster.example.test. 1 3600 600 86400 60"
  local-data: "www.example.test. 60 IN A {www}"
  local-data: "www.example.test. 60 IN AAAA 2001:db8::10"
  local-zone: "2.0.192.in-addr.arpa." static
  local-data-ptr: "192.0.2.10 www.example.test."
""", probe="www.example.test")
    procs.append(unbound)
    return unbound.port


ACME_ZONE = """$ORIGIN acme.test.
$TTL 60
@ IN SOA ns.acme.test. hostmaster.acme.test. 1 3600 600 86400 60
@ IN NS ns.acme.test.
ns IN A 127.0.0.1
host IN A 198.51.100.5
out IN CNAME www.example.test.
"""


def start_nsd(procs, tmp):
    """NSD authoritative for acme.test, with a CNAME out of its zone."""
    nsd = servers.Nsd(tmp, zones=[("acme.test", ACME_ZONE)])
    procs.append(nsd)
    return nsd.port


def Kubedns(procs, tmp, name, *flags):
    """kubedns serving tmp/objects.json, ready, owned by `procs`."""
    kd = servers.Kubedns(tmp, name, "--objects-file=" + os.path.join(tmp, "objects.json"),
                         *flags)
    procs.append(kd)
    return kd


def run(results, tmp):
    procs = []
    try:
        unbound_a = start_unbound(procs, tmp, "unbound-a", "192.0.2.10")
        unbound_b = start_unbound(procs, tmp, "unbound-b", "192.0.2.20")
        nsd = start_nsd(procs, tmp)
        with open(os.path.join(tmp, "objects.json"), "w") as f:
            json.dump(OBJECTS, f)
        with open(os.path.join(tmp, "resolv.conf"), "w") as f:
            f.write("# no nameserver: only --nameservers and the ConfigMap give upstreams\n")
        config = harness.ConfigMapDir(os.path.join(tmp, "config"))
        kd = Kubedns(procs, tmp, "kubedns", "--nameservers=127.0.0.1:%d" % unbound_a,
                     "--config-dir=" + config.path, "--config-period=100ms",
                     "--resolv-conf=" + os.path.join(tmp, "resolv.conf"))
        check = results.check

        def www(got):
            return [r for o, t, r in rrs(got["answer"]) if t == "A"]

        # --- forwarding with --nameservers -----------------------------------------------
        got = dig(kd.port, "www.example.test.")
        check("a name outside the cluster is forwarded to --nameservers",
              got["status"] == "NOERROR" and www(got) == ["192.0.2.10"], got["raw"])
        check("RA is set on forwarded answers", "ra" in got["flags"], got["raw"])
        got = dig(kd.port, "WwW.Example.TEST.")
        check("the client's name case comes back in the question and the answer",
              got["question"] == "WwW.Example.TEST." and got["answer"] and
              got["answer"][0].startswith("WwW.Example.TEST. "), got["raw"])
        got = dig(kd.port, "www.example.test.", "A", "+tcp")
        check("a TCP client is answered over TCP", www(got) == ["192.0.2.10"], got["raw"])
        got = dig(kd.port, "www.example.test.", "AAAA", "+noedns")
        check("no OPT for a client without EDNS", got["status"] == "NOERROR" and
              not got["edns"] and "2001:db8::10" in got["raw"], got["raw"])
        got = dig(kd.port, "www.example.test.", "A", "+edns=0")
        check("OPT for a client with EDNS", got["edns"], got["raw"])
        got = dig(kd.port, "nope.example.test.")
        check("NXDOMAIN from the upstream is passed on with its SOA",
              got["status"] == "NXDOMAIN" and
              any(t == "SOA" and o == "example.test." for o, t, _ in rrs(got["authority"])),
              got["raw"])

        # --- reverse names ---------------------------------------------------------------
        got = dig(kd.port, "10.2.0.192.in-addr.arpa.", "PTR")
        check("the reverse name of an unknown IP is forwarded",
              rrs(got["answer"]) == [("10.2.0.192.in-addr.arpa.", "PTR", "www.example.test.")],
              got["raw"])
        got = dig(kd.port, "1.0.96.10.in-addr.arpa.", "PTR")
        check("the reverse name of a ClusterIP is kubedns's own",
              "aa" in got["flags"] and rrs(got["answer"]) ==
              [("1.0.96.10.in-addr.arpa.", "PTR", "kubernetes.default.svc.cluster.local.")],
              got["raw"])
        got = dig(kd.port, "nope.default.svc.cluster.local.")
        check("a missing cluster name is NXDOMAIN from kubedns, never forwarded",
              got["status"] == "NXDOMAIN" and "aa" in got["flags"] and
              any(o == "cluster.local." for o, t, _ in rrs(got["authority"])), got["raw"])

        # --- ExternalName chains -----------------------------------------------------------
        got = dig(kd.port, "ext.default.svc.cluster.local.")
        check("an ExternalName outside the zone is chased through the upstream",
              got["status"] == "NOERROR" and rrs(got["answer"]) == [
                  ("ext.default.svc.cluster.local.", "CNAME", "www.example.test."),
                  ("www.example.test.", "A", "192.0.2.10")], got["raw"])
        got = dig(kd.port, "ext.default.svc.cluster.local.", "AAAA")
        check("the chase asks for the client's type",
              [t for _, t, _ in rrs(got["answer"])] == ["CNAME", "AAAA"], got["raw"])
        got = dig(kd.port, "ext.default.svc.cluster.local.", "A", "+tcp")
        check("a chase for a TCP client", www(got) == ["192.0.2.10"], got["raw"])
        got = dig(kd.port, "missing.default.svc.cluster.local.")
        check("a chase to a missing name: the CNAME, NXDOMAIN and the target zone's SOA",
              got["status"] == "NXDOMAIN" and
              [t for _, t, _ in rrs(got["answer"])] == ["CNAME"] and
              any(o == "example.test." for o, t, _ in rrs(got["authority"])), got["raw"])
        got = dig(kd.port, "ext.default.svc.cluster.local.", "CNAME")
        check("a CNAME question gets the CNAME alone",
              [t for _, t, _ in rrs(got["answer"])] == ["CNAME"], got["raw"])

        # --- stubDomains from the ConfigMap --------------------------------------------------
        config.publish({"stubDomains": '{"acme.test": ["127.0.0.1:%d"]}' % nsd})
        ok = wait_until(lambda: "198.51.100.5" in dig(kd.port, "host.acme.test.")["raw"], 10)
        check("stubDomains route a domain to its server", ok)
        got = dig(kd.port, "Host.Acme.Test.", "A", "+tcp")
        check("a stub domain over TCP, in the client's case",
              got["question"] == "Host.Acme.Test." and "198.51.100.5" in got["raw"], got["raw"])
        got = dig(kd.port, "nothere.acme.test.")
        check("a stub domain's NXDOMAIN comes from the stub server",
              got["status"] == "NXDOMAIN" and
              any(o == "acme.test." for o, t, _ in rrs(got["authority"])), got["raw"])
        got = dig(kd.port, "stubext.default.svc.cluster.local.")
        check("an ExternalName target in a stub domain is chased through the stub server",
              rrs(got["answer"]) == [
                  ("stubext.default.svc.cluster.local.", "CNAME", "host.acme.test."),
                  ("host.acme.test.", "A", "198.51.100.5")], got["raw"])
        got = dig(kd.port, "chain.default.svc.cluster.local.")
        check("an authoritative server's out-of-zone CNAME is followed",
              rrs(got["answer"]) == [
                  ("chain.default.svc.cluster.local.", "CNAME", "out.acme.test."),
                  ("out.acme.test.", "CNAME", "www.example.test."),
                  ("www.example.test.", "A", "192.0.2.10")], got["raw"])

        # --- upstreamNameservers, an invalid change, and back -------------------------------
        stubs = '{"acme.test": ["127.0.0.1:%d"]}' % nsd
        config.publish({"stubDomains": stubs,
                        "upstreamNameservers": '["127.0.0.1:%d"]' % unbound_b})
        ok = wait_until(lambda: www(dig(kd.port, "www.example.test.")) == ["192.0.2.20"], 10)
        check("upstreamNameservers take over from --nameservers", ok)
        config.publish({"stubDomains": stubs,
                        "upstreamNameservers": '["1.1.1.1", "1.1.1.2", "1.1.1.3", "1.1.1.4"]'})
        key = 'kdns_kubedns_forward_config_reloads_total{result="rejected"}'
        ok = wait_until(lambda: kd.metrics().get(key) == 1, 10)
        check("an invalid ConfigMap is rejected and counted", ok)
        check("the rejection is visible in kdns_kubedns_forward_config_error",
              kd.metrics().get("kdns_kubedns_forward_config_error") == 1)
        log = kd.log()
        check("the rejection is logged with the reason",
              "invalid configuration rejected" in log and "more than three entries" in log)
        got = dig(kd.port, "www.example.test.")
        check("after the rejection the previous configuration still serves",
              www(got) == ["192.0.2.20"] and "198.51.100.5" in
              dig(kd.port, "host.acme.test.")["raw"], got["raw"])
        config.publish({"stubDomains": stubs})
        ok = wait_until(lambda: www(dig(kd.port, "www.example.test.")) == ["192.0.2.10"], 10)
        check("without upstreamNameservers, --nameservers serves again", ok)
        check("the error clears once a valid version is applied",
              kd.metrics().get("kdns_kubedns_forward_config_error") == 0)

        # --- metrics -----------------------------------------------------------------------
        m = kd.metrics()
        check("skydns counts forwarded names as recursive",
              m.get('skydns_skydns_dns_request_count_total{system="recursive"}', 0) >= 10)
        check("skydns counts reverse names, forwarded or not, as reverse",
              m.get('skydns_skydns_dns_request_count_total{system="reverse"}', 0) == 2)
        check("forwarded and chased queries are counted by route",
              m.get('kdns_kubedns_forward_queries_total{route="stub",kind="forward"}', 0) >= 3 and
              m.get('kdns_kubedns_forward_queries_total{route="default",kind="chase"}', 0) >= 4
              and m.get('kdns_kubedns_forward_queries_total{route="stub",kind="chase"}', 0) >= 2)
        check("forwarding latency is measured",
              m.get("kdns_kubedns_forward_duration_seconds_count", 0) >= 15)
        check("every thread's forwarder is summed (the upstream queries, as frontend-cache's)",
              m.get("kdns_kubedns_forwarder_requests_total", 0) >=
              m.get('kdns_kubedns_forward_queries_total{route="stub",kind="forward"}', 0) +
              m.get('kdns_kubedns_forward_queries_total{route="default",kind="chase"}', 0) and
              m.get("kdns_kubedns_forwarder_in_flight", -1) == 0)
        check("per-upstream counters",
              m.get('kdns_kubedns_upstream_queries_total{upstream="127.0.0.1#%d"}' % nsd, 0) >= 3)
        check("config reloads are counted",
              m.get('kdns_kubedns_forward_config_reloads_total{result="applied"}', 0) >= 4)

        # --- --nameservers=tcp://: over TCP only, one persistent connection ------------------
        kd_tcp = servers.Kubedns(tmp, "kubedns-tcp",
                                 "--objects-file=" + os.path.join(tmp, "objects.json"),
                                 "--nameservers=tcp://127.0.0.1:%d" % unbound_b,
                                 "--resolv-conf=" + os.path.join(tmp, "resolv.conf"), threads=1)
        procs.append(kd_tcp)
        got = dig(kd_tcp.port, "www.example.test.")
        check("--nameservers=tcp://ip:port forwards", www(got) == ["192.0.2.20"], got["raw"])
        for i in range(10):
            dig(kd_tcp.port, "n%d.example.test." % i)
        m = harness.scrape_metrics(kd_tcp.metrics_port)
        label = 'kdns_kubedns_upstream_queries_total{upstream="tcp://127.0.0.1#%d"}' % unbound_b
        check("a tcp:// upstream has its own label", m.get(label, 0) >= 11,
              {k: v for k, v in m.items() if "upstream_queries" in k})
        ss = subprocess.run(["ss", "-Htnp", "state", "established", "dport", "=",
                             ":%d" % unbound_b], capture_output=True, text=True)
        mine = [line for line in ss.stdout.splitlines() if "pid=%d," % kd_tcp.pid in line]
        check("eleven queries went over one persistent TCP connection", len(mine) == 1,
              ss.stdout + ss.stderr)

        # --- no upstream at all --------------------------------------------------------------
        lone = Kubedns(procs, tmp, "kubedns-lone",
                       "--resolv-conf=" + os.path.join(tmp, "resolv.conf"))
        got = dig(lone.port, "www.example.test.")
        check("with no upstream at all a forwarded name gets SERVFAIL",
              got["status"] == "SERVFAIL" and "ra" in got["flags"], got["raw"])
        got = dig(lone.port, "kubernetes.default.svc.cluster.local.")
        check("... while cluster names are answered", got["status"] == "NOERROR", got["raw"])
        got = dig(lone.port, "ext.default.svc.cluster.local.")
        check("... and an ExternalName chase gets SERVFAIL too",
              got["status"] == "SERVFAIL", got["raw"])
    finally:
        harness.stop_all(procs)


def main():
    return harness.main("kdns-forward-e2e.", lambda env, checks: run(checks, env["workdir"]),
                        tools=(servers.UNBOUND, servers.NSD, "/usr/bin/dig",
                               os.path.join(BIN, "kubedns")),
                        skip_unmet=True)


if __name__ == "__main__":
    sys.exit(main())
