#!/usr/bin/python3
"""The network-policy component of the manifests (manifests/components/network-policy),
rendered with manifests/ as an operator's kustomization would (by the suites' renderer,
and compared with `kubectl kustomize` or `kustomize build` when either is installed):

  - it adds one NetworkPolicy and changes nothing else; the policy selects the kube-dns
    pods and restricts ingress only (egress stays open: upstreams, the API server);
  - DNS, 53 over UDP and TCP, the ports the kube-dns Service targets, is allowed from
    everywhere (a rule with no `from`);
  - every other port the pod declares that a probe, a scrape annotation or the Service
    reaches (readiness, the sidecar, the three metrics ports) is allowed only from one
    ipBlock (the nodes; a real CIDR, not everything) and one namespaceSelector naming one
    namespace (monitoring), never from all namespaces or all pods;
  - nothing else is allowed: no rule names kubedns's DNS port 10053 (loopback only);
  - docs/operators.md's "Network policy" section names both values the operator edits, as
    the file has them.
Closes with `N passed, M failed`.
"""
import ipaddress
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from kustomize import pod_spec  # noqa: E402
import manifests  # noqa: E402
from manifests import NAMESPACE, declared_ports, labels_match, probes  # noqa: E402

COMPONENT = os.path.join(manifests.MANIFESTS, "components", "network-policy")
OPERATORS_MD = os.path.join(manifests.ROOT, "docs", "operators.md")
DNS = {(53, "UDP"), (53, "TCP")}


def key(doc):
    return json.dumps(doc, sort_keys=True)


def rendered(workdir):
    """(base objects, base with the component, the overlay's directory)."""
    overlay = manifests.write_overlay(os.path.join(workdir, "site"), [COMPONENT])
    return manifests.render().docs, manifests.render(overlay).docs, overlay


def the_policy(docs):
    policies = [d for d in docs if d.get("kind") == "NetworkPolicy"]
    if len(policies) != 1:
        raise AssertionError("expected one NetworkPolicy, found %d" % len(policies))
    return policies[0]


def rule_ports(rule):
    """(port, protocol) pairs; port 0 stands for an entry without a port, which allows
    every port of its protocol."""
    return {(p.get("port", 0), p.get("protocol", "TCP")) for p in rule.get("ports", [])}


def reached_ports(deployment, service):
    """The pod's ports that something outside the pod reaches: the Service's targets, the
    probes' ports and the scrape annotations', as (number, protocol)."""
    spec = pod_spec(deployment)
    declared = declared_ports(spec)  # (container, name, number, protocol)
    reached = set()
    for port in service["spec"]["ports"]:
        target = port.get("targetPort", port["port"])
        protocol = port.get("protocol", "TCP")
        for _, name, number, proto in declared:
            if proto == protocol and (name == target if isinstance(target, str)
                                      else number == target):
                reached.add((number, proto))
    for container in spec["containers"]:
        for _, _, action in probes(container):
            port = action.get("port")
            if isinstance(port, str):
                port = next(n for c, name, n, _ in declared if name == port)
            reached.add((port, "TCP"))
    for meta in (deployment["spec"]["template"]["metadata"], service["metadata"]):
        annotated = meta.get("annotations", {}).get("prometheus.io/port")
        if annotated:
            reached.add((int(annotated), "TCP"))
    # Every declared metrics port is scraped (docs/operators.md, "Scraping").
    reached |= {(n, p) for _, name, n, p in declared if "metrics" in (name or "")}
    return reached


def test_the_component_adds_one_policy_and_nothing_else(env):
    base, docs, overlay = rendered(env["workdir"])
    env["docs"] = docs
    p = []
    added = [d for d in docs if key(d) not in {key(b) for b in base}]
    if [d.get("kind") for d in added] != ["NetworkPolicy"] or len(docs) != len(base) + 1:
        p.append("the component adds %s, not one NetworkPolicy" % [
            (d.get("kind"), d["metadata"]["name"]) for d in added])
    policy = the_policy(docs)
    if policy["metadata"].get("namespace") != NAMESPACE:
        p.append("the NetworkPolicy is not in %s" % NAMESPACE)
    deployment = next(d for d in docs if d.get("kind") == "Deployment" and
                      d["metadata"]["name"] == "kube-dns")
    if not labels_match(policy["spec"].get("podSelector", {}),
                        deployment["spec"]["template"]["metadata"]["labels"]):
        p.append("the NetworkPolicy does not select the kube-dns pods")
    if policy["spec"].get("policyTypes") != ["Ingress"]:
        p.append("policyTypes %s: restrict ingress only (the pods must reach upstreams and "
                 "the API server)" % policy["spec"].get("policyTypes"))
    return p


def test_dns_from_everywhere_health_and_metrics_from_the_nodes_and_monitoring(env):
    docs = env.get("docs") or rendered(env["workdir"])[1]
    policy = the_policy(docs)
    deployment = next(d for d in docs if d.get("kind") == "Deployment" and
                      d["metadata"]["name"] == "kube-dns")
    service = next(d for d in docs if d.get("kind") == "Service" and
                   d["metadata"]["name"] == "kube-dns")
    rules = policy["spec"].get("ingress", [])
    p = []
    open_rules = [r for r in rules if "from" not in r]
    if len(open_rules) != 1 or rule_ports(open_rules[0]) != DNS:
        p.append("expected one rule with no `from` allowing exactly %s, found %s" % (
            sorted(DNS), [sorted(rule_ports(r)) for r in open_rules]))
    service_dns = {pt for pt in reached_ports(deployment, service) if pt[0] == 53}
    if service_dns != DNS:
        p.append("the Service targets DNS on %s, not the policy's %s" % (sorted(service_dns),
                                                                        sorted(DNS)))
    limited = [r for r in rules if "from" in r]
    if len(limited) != 1:
        return p + ["expected one rule for health and metrics, found %d" % len(limited)]
    rule = limited[0]
    wanted = reached_ports(deployment, service) - DNS
    if rule_ports(rule) != wanted:
        p.append("health and metrics allowed on %s; the pod is reached on %s" % (
            sorted(rule_ports(rule)), sorted(wanted)))
    peers = rule["from"]
    blocks = [peer["ipBlock"] for peer in peers if "ipBlock" in peer]
    selectors = [peer for peer in peers if "ipBlock" not in peer]
    if len(blocks) != 1 or len(selectors) != 1 or len(peers) != 2:
        p.append("health and metrics: expected one ipBlock (the nodes) and one "
                 "namespaceSelector (monitoring), found %s" % peers)
    for block in blocks:
        try:
            network = ipaddress.ip_network(block["cidr"])
        except (KeyError, ValueError) as e:
            p.append("ipBlock %s: %s" % (block, e))
            continue
        if network.prefixlen == 0:
            p.append("ipBlock %s allows every address: name the nodes' range" % network)
    for peer in selectors:
        if "podSelector" in peer:
            p.append("%s: a podSelector here lets pods of other namespaces (or of "
                     "kube-system) in; name the monitoring namespace alone" % peer)
        labels = peer.get("namespaceSelector", {}).get("matchLabels", {})
        if list(labels) != ["kubernetes.io/metadata.name"] or \
                peer["namespaceSelector"].get("matchExpressions"):
            p.append("namespaceSelector %s must name one namespace by "
                     "kubernetes.io/metadata.name (an empty one is every namespace)"
                     % peer.get("namespaceSelector"))
    allowed = set().union(*(rule_ports(r) for r in rules)) if rules else set()
    internal = {(n, pr) for _, _, n, pr in declared_ports(pod_spec(deployment))} - \
        reached_ports(deployment, service)
    for port in sorted(allowed & internal):
        p.append("port %s/%s is only used inside the pod, yet allowed" % port)
    return p


def test_the_operators_guide_names_what_to_edit(env):
    docs = env.get("docs") or rendered(env["workdir"])[1]
    rule = [r for r in the_policy(docs)["spec"]["ingress"] if "from" in r][0]
    cidr = next(peer["ipBlock"]["cidr"] for peer in rule["from"] if "ipBlock" in peer)
    namespace = next(peer["namespaceSelector"].get("matchLabels", {}).get(
        "kubernetes.io/metadata.name", "a namespace name")
        for peer in rule["from"] if "namespaceSelector" in peer)
    with open(OPERATORS_MD) as f:
        text = f.read()
    m = re.search(r"^### Network policy\n(.*?)(?=^#{1,3} )", text, re.M | re.S)
    if not m:
        return ["docs/operators.md has no \"### Network policy\" section"]
    section = m.group(1)
    return ["docs/operators.md's Network policy section does not name %s" % what
            for what in (cidr, namespace, "components/network-policy")
            if what not in section]


def main():
    return harness.main("kdns-manifests-netpol-",
                        [test_the_component_adds_one_policy_and_nothing_else,
                         test_dns_from_everywhere_health_and_metrics_from_the_nodes_and_monitoring,
                         test_the_operators_guide_names_what_to_edit])


if __name__ == "__main__":
    sys.exit(main())
