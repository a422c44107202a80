"""What the kubedns API suites (kubedns_api_*_test.py, kubedns_pods_test.py) share: the fake
API server (test/fake_apiserver) serving the conformance objects, kubedns following it
through a kubeconfig, object builders, the fake's request log, and main(tests), which
starts both, waits until kubedns is ready, runs the tests (each test(env) returns its
problems), clears injected faults after each, and stops everything. KDNS_API_HTTP2=1 makes
the main fake offer HTTP/2 as well; KDNS_KEEP_TMP=1 keeps the temporary directory.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import servers  # noqa: E402
import kubedns_conformance_test as conformance  # noqa: E402

ROOT = harness.ROOT
BIN = harness.BIN
ZONE = "cluster.local."
MAIN_HTTP2 = bool(os.environ.get("KDNS_API_HTTP2"))  # the main fake offers h2 too


def start_fake(workdir, *extra):
    """The fake API server serving the conformance objects."""
    return servers.FakeApiserver(
        os.path.join(workdir, "fake"),
        "--objects", os.path.join(ROOT, "test", "conformance", "objects.json"),
        "--bookmark-interval", "0.5", *extra)


def Kubedns(workdir, kubeconfig, name="kubedns", *extra):
    """kubedns following the fake API server through `kubeconfig`, not waited for."""
    return servers.Kubedns(workdir, name, "--kubecfg-file=" + kubeconfig, "--domain=" + ZONE,
                           "--api-backoff-max=1s", "--api-stall-timeout=4s", *extra,
                           wait=False)


def dig(server, name, qtype="A"):
    """(rcode, sorted answer rdata) for name/qtype."""
    got = harness.dig(server.port, name, qtype, None, "+noall", "+comments", "+answer",
                      timeout=2)
    return got.status, sorted(r.rdata for r in got.answer if r.type == qtype)


def expect(server, name, qtype, rcode, answers=None, timeout=15.0):
    def check():
        got_rcode, got = dig(server, name, qtype)
        if got_rcode != rcode or (answers is not None and got != sorted(answers)):
            return "%s %s: %s %s, want %s %s" % (name, qtype, got_rcode, got, rcode, answers)
        return None
    return harness.eventually(check, timeout)


def service(ns, name, cluster_ip=None, external=None, ports=(("http", 80),), rv_free=True):
    spec = {"ports": [{"name": n, "port": p, "protocol": "TCP"} for n, p in ports]}
    if external:
        spec = {"type": "ExternalName", "externalName": external}
    else:
        spec["type"] = "ClusterIP"
        spec["clusterIP"] = cluster_ip or "None"
        spec["clusterIPs"] = [cluster_ip or "None"]
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": ns}, "spec": spec}


def slice_(ns, name, svc, ips, ready=True):
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": name, "namespace": ns,
                         "labels": {"kubernetes.io/service-name": svc}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": [ip], "conditions": {"ready": ready}} for ip in ips],
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}


def delete(fake, kind, ns, name):
    fake.control("/control/delete", {"kind": kind, "metadata": {"namespace": ns, "name": name}})


def api_requests(fake, since=0):
    """The fake's request log: kubedns's LIST and WATCH requests, oldest first."""
    return [e for e in fake.control("/control/requests?since=%d" % since)["requests"]
            if e["verb"] in ("list", "watch")]


def conformance_problems(dns):
    with open(os.path.join(ROOT, "test", "conformance", "cases.json")) as f:
        spec = json.load(f)
    problems = []
    for case in spec["cases"]:
        got, _ = conformance.ask("dig", dns.port, case)
        for p in conformance.check(case, got, spec["ttl"]):
            problems.append("%s: %s" % (case["id"], p))
    return problems


def kubeconfig(server, ca_file, credential):
    """A kubeconfig for `server` trusting `ca_file`, its user's `credential` a kubeconfig
    user field ("token: T" or "tokenFile: PATH")."""
    return """apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: u
  user:
    %s
contexts:
- name: c
  context: {cluster: fake, user: u}
current-context: c
""" % (server, ca_file, credential)


def start(workdir, owned, kubedns_flags):
    """The fake API server and kubedns following it with `kubedns_flags`, once it is ready."""
    fake = start_fake(workdir, "--history-size", "50", *(["--http2"] if MAIN_HTTP2 else []))
    owned.append(fake)
    dns = Kubedns(workdir, fake.info["kubeconfig"], "kubedns", *kubedns_flags)
    owned.append(dns)
    if not harness.wait_until(dns.ready, 30):
        raise RuntimeError("kubedns never became ready: " + dns.log()[-2000:])
    return {"fake": fake, "dns": dns}


def clear_faults(env):
    """After each test: the fake's injected faults cleared (when the suite started it)."""
    if "fake" in env:
        env["fake"].control("/control/fault/clear", {})


def kubedns_log_on_failure(env, failed):
    """What kubedns logged, when something failed."""
    if failed and "dns" in env:
        print("--- kubedns log (tail) ---")
        print(env["dns"].log()[-4000:])


def main(tests, main_instance=True, kubedns_flags=()):
    """Starts the fake and kubedns following it with `kubedns_flags` (without
    main_instance: neither; the tests start their own), runs the tests, stops everything;
    the exit code."""
    started = {}

    def setup(workdir, owned):
        if main_instance:
            started.update(start(workdir, owned, kubedns_flags))
        return started

    return harness.main("kdns-api-e2e-", tests, setup=setup,
                        after_each=lambda: clear_faults(started), report=kubedns_log_on_failure)
