#!/usr/bin/python3
"""External names, endpoint pod names and the namespace and label filters end to end
(CoreDNS k8s_external, and the kubernetes plugin's endpoint_pod_names, namespaces and labels
options), from the real kubedns asked with real dig.

From an objects file: every case of test/conformance/external_cases.json with dig and
kdig; under --external-zone, a LoadBalancer Service's externalIPs and
load balancer IPs (A, AAAA, SRV with glue), the zone's SOA and NS, NODATA and NXDOMAIN as
k8s_external answers them; --endpoint-pod-names naming endpoints by their pod; --namespaces
and --labels leaving other Services NXDOMAIN, counted in kdns_kubedns_filtered_objects_total.
Through the fake API server (test/fake_apiserver): --labels is sent as the Services watch's
labelSelector, and a Service whose labels stop matching disappears. The kustomize component
(manifests/components/external-names) renders with the operator's zone on both kubedns and
the cache route, and kubedns accepts the rendered arguments (--check-flags).
Closes with `N passed, M failed`.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import kubedns_api  # noqa: E402
import kubedns_conformance_test as conformance  # noqa: E402
import manifests  # noqa: E402
import servers  # noqa: E402
from kubedns_api import api_requests, expect  # noqa: E402

ZONE = "example.org."


def lb_service(ns, name, labels, external_ips=(), ingress=(), ports=(("http", "TCP", 80),)):
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": ns, "labels": dict(labels)},
            "spec": {"type": "LoadBalancer", "clusterIP": "10.96.7.%d" % (len(name) + 10),
                     "externalIPs": list(external_ips),
                     "ports": [{"name": n, "protocol": p, "port": port}
                               for n, p, port in ports]},
            "status": {"loadBalancer": {"ingress": list(ingress)}}}


def cluster_service(ns, name, labels, cluster_ip="None"):
    svc = kubedns_api.service(ns, name, cluster_ip)
    svc["metadata"]["labels"] = dict(labels)
    return svc


def pod_slice(ns, name, svc, endpoints):
    """An EndpointSlice whose endpoints are (ip, pod name or None)."""
    out = kubedns_api.slice_(ns, name, svc, [ip for ip, _ in endpoints])
    for endpoint, (_, pod) in zip(out["endpoints"], endpoints):
        if pod:
            endpoint["targetRef"] = {"kind": "Pod", "namespace": ns, "name": pod}
    return out


OBJECTS = [
    lb_service("shop", "web", {"app": "web"}, ["192.0.2.10"],
               [{"ip": "198.51.100.1"}, {"ip": "2001:db8::1"}],
               ports=(("http", "TCP", 80), ("dns", "UDP", 53))),
    cluster_service("shop", "db", {"app": "db", "internal": "true"}, "10.96.7.99"),
    cluster_service("shop", "pets", {"app": "pets"}),
    pod_slice("shop", "pets-1", "pets", [("10.244.1.5", "pets-5d8f6-x2x9q"),
                                         ("10.244.1.6", "has.dots"), ("10.244.1.7", None)]),
    cluster_service("other", "web", {"app": "web"}, "10.96.8.1"),
]


def write_objects(workdir, items):
    path = os.path.join(workdir, "objects.json")
    with open(path, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": items}, f)
    return path


def dig_full(dns, name, qtype):
    return harness.dig(dns.port, name, qtype, None, timeout=2)


def records(answer, section, qtype=None):
    return sorted("%s %d %s %s" % (r.name.lower(), r.ttl, r.type, r.rdata)
                  for r in getattr(answer, section) if qtype is None or r.type == qtype)


# ---- the objects file ---------------------------------------------------------------------

def test_external_zone_answers_as_k8s_external(env):
    dns = servers.Kubedns(env["workdir"], "kubedns-external",
                          "--objects-file=" + write_objects(env["workdir"], OBJECTS),
                          "--external-zone=" + ZONE, "--nameservers=127.0.0.1:9")
    try:
        p = []

        def want(name, qtype, rcode, section=None, expected=None):
            got = dig_full(dns, name, qtype)
            if got.status != rcode:
                p.append("%s %s: %s, want %s" % (name, qtype, got.status, rcode))
            if "aa" not in got.flags:
                p.append("%s %s: AA not set" % (name, qtype))
            if expected is not None and records(got, section) != sorted(expected):
                p.append("%s %s %s: %s, want %s" % (name, qtype, section,
                                                   records(got, section), sorted(expected)))
            return got

        want("web.shop." + ZONE, "A", "NOERROR", "answer",
             ["web.shop.example.org. 5 A 192.0.2.10", "web.shop.example.org. 5 A 198.51.100.1"])
        want("web.shop." + ZONE, "AAAA", "NOERROR", "answer",
             ["web.shop.example.org. 5 AAAA 2001:db8::1"])
        want("_http._tcp.web.shop." + ZONE, "SRV", "NOERROR", "answer",
             ["_http._tcp.web.shop.example.org. 5 SRV 0 33 80 web.shop.example.org."])
        want("web.shop." + ZONE, "SRV", "NOERROR", "additional",
             ["web.shop.example.org. 5 A 192.0.2.10", "web.shop.example.org. 5 A 198.51.100.1",
              "web.shop.example.org. 5 AAAA 2001:db8::1"])
        want(ZONE, "NS", "NOERROR", "answer", ["example.org. 5 NS ns1.dns.example.org."])
        soa = want(ZONE, "SOA", "NOERROR")
        fields = soa.answer[0].rdata.split() if soa.answer else []
        if fields[:2] != ["ns1.dns.example.org.", "hostmaster.dns.example.org."] or \
                fields[3:] != ["7200", "1800", "86400", "5"]:
            p.append("apex SOA %s, want k8s_external's" % fields)
        want("web.shop." + ZONE, "TXT", "NOERROR", "answer", [])
        want("shop." + ZONE, "A", "NOERROR", "answer", [])
        want("db.shop." + ZONE, "A", "NXDOMAIN")  # no external address
        want("nothing.shop." + ZONE, "A", "NXDOMAIN")
        nx = want("x.web.shop." + ZONE, "A", "NXDOMAIN")
        if [r.type for r in nx.authority] != ["SOA"]:
            p.append("NXDOMAIN without the zone's SOA: %s" % records(nx, "authority"))
        # The cluster zone is unchanged.
        want("web.shop.svc.cluster.local.", "A", "NOERROR", "answer",
             ["web.shop.svc.cluster.local. 30 A 10.96.7.13"])
        return p
    finally:
        dns.stop()


def test_conformance_cases(env):
    """Every case of test/conformance/external_cases.json, asked with dig and kdig."""
    conformance_dir = os.path.join(harness.ROOT, "test", "conformance")
    with open(os.path.join(conformance_dir, "external_cases.json")) as f:
        spec = json.load(f)
    dns = servers.Kubedns(env["workdir"], "kubedns-cases",
                          "--objects-file=" + os.path.join(conformance_dir, spec["objects_file"]),
                          "--domain=" + spec["zone"], "--nameservers=127.0.0.1:9",
                          *spec["flags"])
    try:
        p = []
        for case in spec["cases"]:
            for client in ("dig", "kdig"):
                got, _ = conformance.ask(client, dns.port, case)
                ttl = 30 if case["q"].lower().endswith(spec["zone"]) else spec["ttl"]
                p += ["%s (%s): %s" % (case["id"], client, problem)
                      for problem in conformance.check(case, got, ttl)]
        return p
    finally:
        dns.stop()


def test_endpoint_pod_names(env):
    objects = write_objects(env["workdir"], OBJECTS)
    p = []
    for flags, named, dashed in (
            (["--endpoint-pod-names"], "NOERROR", "NXDOMAIN"),
            ([], "NXDOMAIN", "NOERROR")):
        dns = servers.Kubedns(env["workdir"], "kubedns-pods%d" % len(flags),
                              "--objects-file=" + objects, "--nameservers=127.0.0.1:9", *flags)
        try:
            base = ".pets.shop.svc.cluster.local."
            for name, rcode in (("pets-5d8f6-x2x9q", named), ("10-244-1-5", dashed),
                                ("10-244-1-6", "NOERROR"),  # "has.dots" is not a label
                                ("10-244-1-7", "NOERROR")):  # no pod
                got, answers = kubedns_api.dig(dns, name + base, "A")
                if got != rcode:
                    p.append("%s %s: %s, want %s" % (flags, name + base, got, rcode))
            ptr, answers = kubedns_api.dig(dns, "5.1.244.10.in-addr.arpa.", "PTR")
            want = "pets-5d8f6-x2x9q" if flags else "10-244-1-5"
            if answers != [want + base]:
                p.append("%s PTR of 10.244.1.5: %s, want %s" % (flags, answers, want + base))
            invalid = dns.metric("kdns_kubedns_endpoint_pod_name_invalid_total")
            if invalid != (1 if flags else 0):
                p.append("%s invalid pod names counted %s" % (flags, invalid))
        finally:
            dns.stop()
    return p


def test_namespace_and_label_filters(env):
    dns = servers.Kubedns(env["workdir"], "kubedns-filters",
                          "--objects-file=" + write_objects(env["workdir"], OBJECTS),
                          "--nameservers=127.0.0.1:9", "--namespaces=shop",
                          "--labels=app in (web,pets),!internal", "--external-zone=" + ZONE)
    try:
        p = []
        for name, rcode in (("web.shop.svc.cluster.local.", "NOERROR"),
                            ("pets.shop.svc.cluster.local.", "NOERROR"),
                            ("db.shop.svc.cluster.local.", "NXDOMAIN"),   # labels
                            ("web.other.svc.cluster.local.", "NXDOMAIN"),  # namespace
                            ("other.svc.cluster.local.", "NXDOMAIN"),
                            ("web.shop." + ZONE, "NOERROR")):
            got, _ = kubedns_api.dig(dns, name, "A")
            if got != rcode:
                p.append("%s: %s, want %s" % (name, got, rcode))
        got, answers = kubedns_api.dig(dns, "1.8.96.10.in-addr.arpa.", "PTR")
        if answers:
            p.append("PTR of a Service not served: %s" % answers)
        filtered = dns.metric("kdns_kubedns_filtered_objects_total")
        if filtered != 2:  # shop/db and other/web
            p.append("kdns_kubedns_filtered_objects_total %s, want 2" % filtered)
        return p
    finally:
        dns.stop()


# ---- the API server -----------------------------------------------------------------------

def test_labels_are_the_services_watch_selector(env):
    fake = servers.FakeApiserver(os.path.join(env["workdir"], "fake"), "--objects",
                                 write_objects(env["workdir"], OBJECTS),
                                 "--bookmark-interval", "0.5")
    env["owned"].append(fake)
    dns = kubedns_api.Kubedns(env["workdir"], fake.info["kubeconfig"], "kubedns-api",
                              "--labels=app in (web,pets)", "--external-zone=" + ZONE)
    env["owned"].append(dns)
    if not harness.wait_until(dns.ready, 30):
        return ["kubedns never became ready: " + dns.log()[-1500:]]
    p = []
    selectors = {(r["path"], (r.get("query") or {}).get("labelSelector"))
                 for r in api_requests(fake)}
    for path, selector in sorted(selectors, key=str):
        if path == "/api/v1/services" and selector != "app in (pets,web)":
            p.append("a Services request with labelSelector %r" % selector)
        if path.endswith("/endpointslices") and selector is not None:
            p.append("an EndpointSlices request with labelSelector %r" % selector)
    if not any(path == "/api/v1/services" for path, _ in selectors):
        p.append("no Services request in the fake's log")
    for problem in (expect(dns, "web.shop.svc.cluster.local.", "A", "NOERROR"),
                    expect(dns, "web.other.svc.cluster.local.", "A", "NOERROR"),
                    expect(dns, "db.shop.svc.cluster.local.", "A", "NXDOMAIN")):
        if problem:
            p.append(problem)
    # The label changes: the Service stops matching, the watch says so, the names go.
    changed = json.loads(json.dumps(OBJECTS[0]))
    changed["metadata"]["labels"] = {"app": "retired"}
    fake.control("/control/objects", changed)
    for name in ("web.shop.svc.cluster.local.", "web.shop." + ZONE):
        problem = expect(dns, name, "A", "NXDOMAIN")
        if problem:
            p.append("after the label change: " + problem)
    return p


# ---- the manifests ------------------------------------------------------------------------

def test_manifests_component(env):
    import yaml
    component = os.path.join(manifests.MANIFESTS, "components", "external-names")
    zone_map = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "kdns-external-names", "namespace": "kube-system",
                             "annotations": {"config.kubernetes.io/local-config": "true"}},
                "data": {"zone": "lb.corp.example"}}
    p = []
    # Without the operator's ConfigMap the rendering fails.
    bare = manifests.write_overlay(os.path.join(env["workdir"], "bare"), [component])
    try:
        manifests.kustomize_build(bare)
        p.append("the component renders without the operator's zone")
    except AssertionError:
        pass
    site = manifests.write_overlay(os.path.join(env["workdir"], "site"), [component])
    with open(os.path.join(site, "external-zone.yaml"), "w") as f:
        yaml.safe_dump(zone_map, f)
    with open(os.path.join(site, "kustomization.yaml")) as f:
        kustomization = yaml.safe_load(f)
    kustomization["resources"].append("external-zone.yaml")
    with open(os.path.join(site, "kustomization.yaml"), "w") as f:
        yaml.safe_dump(kustomization, f)
    docs = manifests.kustomize_build(site)
    if any(d["kind"] == "ConfigMap" and d["metadata"]["name"] == "kdns-external-names"
           for d in docs):
        p.append("the zone's local-config ConfigMap is rendered")
    deployment = next(d for d in docs if d["kind"] == "Deployment"
                      and d["metadata"]["name"] == "kube-dns")
    containers = {c["name"]: c for c in deployment["spec"]["template"]["spec"]["containers"]}
    kubedns_args = containers["kubedns"]["args"]
    if "--external-zone=lb.corp.example" not in kubedns_args:
        p.append("kubedns lacks --external-zone=lb.corp.example: %s" % kubedns_args)
    code, out = manifests.check_flags("kubedns", [a for a in kubedns_args if "$(" not in a])
    if code != 0:
        p.append("kubedns --check-flags refuses the rendered arguments: " + out)
    cache_args = containers["dnsmasq"]["args"]
    if "--server=/lb.corp.example/127.0.0.1#10053" not in cache_args[cache_args.index("--") + 1:]:
        p.append("the cache has no route for the zone: %s" % cache_args)
    return p


def main():
    return harness.main("kdns-external-e2e-", [
        test_external_zone_answers_as_k8s_external,
        test_conformance_cases,
        test_endpoint_pod_names,
        test_namespace_and_label_filters,
        test_labels_are_the_services_watch_selector,
        test_manifests_component,
    ], report=kubedns_api.kubedns_log_on_failure)


if __name__ == "__main__":
    sys.exit(main())
