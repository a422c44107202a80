#!/usr/bin/python3
"""Moving a cluster to kdns, re-applying, rolling back: what the operators' guide
("Migrating", "Upgrades and re-applying") promises, checked on the rendered manifests.

  - the kube-dns Service applied over the one kubeadm creates for CoreDNS (and over the
    kube-dns addon's) is valid and whole: port names and (port, protocol) pairs unique,
    every port reaching a port the new pods declare; the Service before this change
    (DNS only) left CoreDNS's `metrics` 9153 pointing at nothing, and is shown to fail;
  - re-applying manifests/ keeps ConfigMaps edited in the cluster (stubDomains, the
    autoscaler's parameters), while applying the configmaps component resets them (so
    the check can fail);
  - the cluster domain is one parameter: changed in kustomization.yaml, every container's
    command line follows, and the binaries accept them;
  - threads are left to the CPU limit (no thread flag; the flags' default is 0), a rollout
    waits minReadySeconds with no pod unavailable, and `kubectl rollout undo` has a
    revision to go back to;
  - nothing carries the addon manager's label, and the autoscaler adopts the
    kube-dns-autoscaler ConfigMap kube-dns clusters already have;
  - the guide's default command, client-side `kubectl apply`, run for real
    (kubectl_apply.py: the real kubectl against a minimal API server that merges with
    kubectl's own strategic-merge code) over kubeadm's and the kube-dns addon's Service,
    twice (the second time with the last-applied annotation); the same Service with its
    two port-53 entries swapped is shown to break (client-side apply pairs them by port
    alone), so the check can fail;
  - the guide's CoreDNS steps, run in their written order on a model of the cluster (an
    autoscaler that resets coredns's replicas while it exists, kubeadm's DNS addon lookup
    that fails on two Deployments labelled k8s-app=kube-dns): CoreDNS ends with no pod
    and `kubeadm upgrade` passes; the same steps with the autoscaler removed last fail;
  - kube-prometheus-stack's CoreDNS Service (as its chart renders it) reaches the cache's
    metrics port, serving coredns_* with the coredns-metrics component, with the
    documented value, and reaches nothing with the chart's default.
Server-side apply is modelled as the API server merges (objects key by key; a Service's
ports are a map keyed by port and protocol; other lists replaced whole).
Closes with `N passed, M failed`.
"""
import copy
import os
import re
import shutil
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kustomize import pod_spec  # noqa: E402
import harness  # noqa: E402
import kubectl_apply  # noqa: E402
import manifests  # noqa: E402
from manifests import (  # noqa: E402
    MANIFESTS,
    NAMESPACE,
    check_flags,
    declared_ports,
    flag_defaults,
    gflags,
    split_nanny_args)

# The kube-dns Service kubeadm creates with CoreDNS (kubernetes/kubernetes
# cmd/kubeadm/app/phases/addons/dns/manifests.go), as the API server returns it.
KUBEADM_COREDNS_SERVICE = yaml.safe_load("""
apiVersion: v1
kind: Service
metadata:
  name: kube-dns
  namespace: kube-system
  labels:
    k8s-app: kube-dns
    kubernetes.io/cluster-service: "true"
    kubernetes.io/name: CoreDNS
  annotations:
    prometheus.io/port: "9153"
    prometheus.io/scrape: "true"
spec:
  clusterIP: 10.96.0.10
  clusterIPs: [10.96.0.10]
  selector:
    k8s-app: kube-dns
  ports:
    - {name: dns, port: 53, protocol: UDP, targetPort: 53}
    - {name: dns-tcp, port: 53, protocol: TCP, targetPort: 53}
    - {name: metrics, port: 9153, protocol: TCP, targetPort: 9153}
""")
# The kube-dns addon's (cluster/addons/dns/kube-dns/kube-dns.yaml.base).
KUBE_DNS_ADDON_SERVICE = yaml.safe_load("""
apiVersion: v1
kind: Service
metadata:
  name: kube-dns
  namespace: kube-system
  labels:
    k8s-app: kube-dns
    kubernetes.io/cluster-service: "true"
    addonmanager.kubernetes.io/mode: Reconcile
    kubernetes.io/name: KubeDNS
spec:
  clusterIP: 10.96.0.10
  selector:
    k8s-app: kube-dns
  ports:
    - {name: dns, port: 53, protocol: UDP, targetPort: 53}
    - {name: dns-tcp, port: 53, protocol: TCP, targetPort: 53}
""")
# This tree's Service before CoreDNS's port was added (DNS only): the negative control.
DNS_ONLY_PORTS = [{"name": "dns", "port": 53, "targetPort": 53, "protocol": "UDP"},
                  {"name": "dns-tcp", "port": 53, "targetPort": 53, "protocol": "TCP"}]


def port_key(port):
    return (port["port"], port.get("protocol", "TCP"))


def merge(live, applied, path=()):
    """Server-side apply of `applied` over `live`: maps merged key by key, a Service's
    spec.ports merged as a map keyed by (port, protocol), other lists replaced whole."""
    if isinstance(live, dict) and isinstance(applied, dict):
        out = copy.deepcopy(live)
        for key, value in applied.items():
            out[key] = merge(live.get(key), value, path + (key,)) if key in live else \
                copy.deepcopy(value)
        return out
    if path == ("spec", "ports") and isinstance(live, list):
        out = [copy.deepcopy(p) for p in live]
        for port in applied:
            same = [i for i, p in enumerate(out) if port_key(p) == port_key(port)]
            if same:
                out[same[0]] = merge(out[same[0]], port)
            else:
                out.append(copy.deepcopy(port))
        return out
    return copy.deepcopy(applied)


def service_problems(service, spec):
    """What the API server would refuse in a Service, or what would reach nothing on the
    pods of `spec`."""
    p = []
    ports = service["spec"]["ports"]
    names = [pt.get("name") for pt in ports]
    for name in sorted({n for n in names if names.count(n) > 1}):
        p.append("spec.ports: Duplicate value: %r (name)" % name)
    keys = [port_key(pt) for pt in ports]
    for key in sorted({k for k in keys if keys.count(k) > 1}):
        p.append("spec.ports: Duplicate value: %s/%s" % key)
    if len(ports) > 1 and not all(names):
        p.append("spec.ports: every port needs a name when there are several")
    declared = declared_ports(spec)
    for pt in ports:
        target = pt.get("targetPort", pt["port"])
        proto = pt.get("protocol", "TCP")
        if not any((n == target if isinstance(target, str) else number == target) and
                   pr == proto for _, n, number, pr in declared):
            p.append("port %s %s/%s targets %s, which no container of the new pods declares"
                     % (pt.get("name"), pt["port"], proto, target))
    return p


def test_service_applies_over_coredns_and_kube_dns(r):
    p = []
    ours = r.one("Service", "kube-dns")
    spec = pod_spec(r.kube_dns())
    for what, live in (("kubeadm's CoreDNS Service", KUBEADM_COREDNS_SERVICE),
                       ("the kube-dns addon's Service", KUBE_DNS_ADDON_SERVICE)):
        result = merge(live, ours)
        for problem in service_problems(result, spec):
            p.append("over %s: %s" % (what, problem))
        if result["spec"]["clusterIP"] != live["spec"]["clusterIP"]:
            p.append("over %s: the clusterIP changes (%s to %s): the API server refuses it"
                     % (what, live["spec"]["clusterIP"], result["spec"]["clusterIP"]))
    # The negative control: the DNS-only Service left CoreDNS's 9153 dangling.
    old = copy.deepcopy(ours)
    old["spec"]["ports"] = DNS_ONLY_PORTS
    if not service_problems(merge(KUBEADM_COREDNS_SERVICE, old), spec):
        p.append("the check passes a DNS-only Service over CoreDNS's: it cannot fail")
    return p


def swapped_dns_ports(service):
    """`service` with its two port-53 entries in the other order (TCP first)."""
    out = copy.deepcopy(service)
    ports = out["spec"]["ports"]
    first, second = [i for i, p in enumerate(ports) if p["port"] == 53][:2]
    ports[first], ports[second] = ports[second], ports[first]
    return out


def client_side_apply(live, applied, times):
    """(problems, the Service after) of `kubectl apply` of `applied` over `live`, `times`
    times, with the real kubectl."""
    with kubectl_apply.ApplyServer([live]) as api:
        for attempt in range(times):
            code, out = api.apply([applied])
            if code != 0:
                return ["kubectl apply #%d: %s" % (attempt + 1, out.strip()[-400:])], None
        return [], api.get(live)


def test_client_side_apply_over_coredns_and_kube_dns(r):
    if not kubectl_apply.available():
        raise harness.Skip("kubectl is not installed (mk/deps.sh installs Debian's "
                           "kubernetes-client)", provided=True)
    p = []
    ours = r.one("Service", "kube-dns")
    spec = pod_spec(r.kube_dns())
    for what, live in (("kubeadm's CoreDNS Service", KUBEADM_COREDNS_SERVICE),
                       ("the kube-dns addon's Service", KUBE_DNS_ADDON_SERVICE)):
        problems, result = client_side_apply(live, ours, times=2)
        p += ["over %s: %s" % (what, problem) for problem in problems]
        if result is None:
            continue
        for problem in service_problems(result, spec):
            p.append("over %s, after kubectl apply: %s" % (what, problem))
        if result["spec"]["clusterIP"] != live["spec"]["clusterIP"]:
            p.append("over %s: the clusterIP changed" % what)
        # What server-side apply makes, the same ports (by port and protocol).
        server_side = merge(live, ours)
        if sorted(map(port_key, result["spec"]["ports"])) != \
                sorted(map(port_key, server_side["spec"]["ports"])):
            p.append("over %s: client-side apply gives ports %s, server-side %s" % (
                what, result["spec"]["ports"], server_side["spec"]["ports"]))
    # The negative control: the port-53 entries swapped. kubectl pairs them by port alone
    # and makes two `dns-tcp`, which the API server refuses.
    problems, result = client_side_apply(KUBEADM_COREDNS_SERVICE, swapped_dns_ports(ours), 1)
    if not problems and not service_problems(result, spec):
        p.append("client-side apply of the Service with dns-tcp first passes: the check "
                 "cannot fail")
    return p


GUIDE = os.path.join(manifests.ROOT, "docs", "operators.md")
MIGRATION_SECTION = "### Migrating from CoreDNS (kubeadm clusters)"
# The commands of the guide's CoreDNS steps that change Deployments or run kubeadm.
GUIDE_COMMAND = re.compile(
    r"`(kubectl -n kube-system (?:delete|scale) deployment [^`]+|kubeadm upgrade apply [^`]+)`")


def guide_commands():
    with open(GUIDE) as f:
        text = f.read()
    start = text.index(MIGRATION_SECTION)
    end = text.index("\n### ", start + len(MIGRATION_SECTION))
    return GUIDE_COMMAND.findall(text[start:end])


class KubeadmCluster:
    """Deployments in kube-system after `kubectl apply -k manifests/` on a kubeadm cluster
    with CoreDNS and a CoreDNS autoscaler, and what acts on them by itself: the autoscaler
    (cluster-proportional-autoscaler, --target=deployment/coredns) resets its target's
    replicas at every poll while it exists, and `kubeadm upgrade` looks its DNS addon up
    as cmd/kubeadm/app/phases/addons/dns does (Deployments labelled k8s-app=kube-dns: more
    than one is an error; with one, the CoreDNS addon phase creates `coredns` again)."""

    def __init__(self):
        dns = {"k8s-app": "kube-dns"}
        self.deployments = {"coredns": {"replicas": 2, "labels": dns},
                            "coredns-autoscaler": {"replicas": 1, "target": "coredns",
                                                   "labels": {"k8s-app": "coredns-autoscaler"}},
                            "kube-dns": {"replicas": 2, "labels": dns}}
        self.problems = []

    def poll_autoscalers(self):
        for d in list(self.deployments.values()):
            target = self.deployments.get(d.get("target"))
            if target is not None and d["replicas"] > 0:
                target["replicas"] = 2

    def run(self, command):
        words = command.split()
        if words[:4] == ["kubectl", "-n", "kube-system", "delete"]:
            self.deployments.pop(words[5], None)
        elif words[:4] == ["kubectl", "-n", "kube-system", "scale"]:
            name = words[5]
            replicas = int(command.split("--replicas=")[1].split()[0])
            if name in self.deployments:
                self.deployments[name]["replicas"] = replicas
            self.poll_autoscalers()
            if name in self.deployments and self.deployments[name]["replicas"] != replicas:
                self.problems.append("`%s`: an autoscaler set %s back to %d replicas" % (
                    command, name, self.deployments[name]["replicas"]))
        elif words[:3] == ["kubeadm", "upgrade", "apply"] and "--help" not in words:
            found = [n for n, d in self.deployments.items()
                     if d["labels"].get("k8s-app") == "kube-dns"]
            if len(found) > 1:
                self.problems.append("`%s`: multiple DNS addon deployments found: %s" % (
                    command, sorted(found)))
            elif "--skip-phases=addon/coredns" not in words and "--dry-run" not in words:
                replicas = self.deployments[found[0]]["replicas"] if found else 2
                self.deployments["coredns"] = {"replicas": replicas,
                                               "labels": {"k8s-app": "kube-dns"}}
        self.poll_autoscalers()

    def coredns_pods(self):
        return self.deployments.get("coredns", {}).get("replicas", 0)


def guide_steps_problems(commands):
    cluster = KubeadmCluster()
    for command in commands:
        cluster.run(command)
    p = list(cluster.problems)
    if cluster.coredns_pods():
        p.append("CoreDNS still runs %d pods after the guide's steps" % cluster.coredns_pods())
    if "kube-dns" not in cluster.deployments:
        p.append("the steps removed kdns's kube-dns Deployment")
    return p


def test_guide_removes_the_coredns_autoscaler_first_and_kubeadm_upgrade_passes(r):
    commands = guide_commands()
    wanted = ("delete deployment coredns-autoscaler", "scale deployment coredns --replicas=0",
              "delete deployment coredns", "kubeadm upgrade apply")
    p = ["the CoreDNS steps name no `%s`" % w for w in wanted
         if not any(w in c for c in commands)]
    if p:
        return p + ["commands found: %s" % commands]
    p += guide_steps_problems(commands)
    # The negative control: the autoscaler removed last, and kubeadm run while coredns is
    # still there.
    late = [c for c in commands if "autoscaler" not in c] + \
        [c for c in commands if "autoscaler" in c]
    late = [c for c in late if c != "kubectl -n kube-system delete deployment coredns"]
    if not guide_steps_problems(late):
        p.append("the steps pass with the autoscaler removed last and coredns kept: the "
                 "check cannot fail")
    return p


# kube-prometheus-stack's CoreDNS Service (charts/kube-prometheus-stack/templates/exporters/
# core-dns/service.yaml), rendered with the chart's default values (coreDns.service.port
# and targetPort 9153, no selector: k8s-app: kube-dns).
def kube_prometheus_stack_service(target_port=9153):
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "kube-prometheus-stack-coredns", "namespace": "kube-system",
                         "labels": {"app": "kube-prometheus-stack-coredns",
                                    "jobLabel": "coredns"}},
            "spec": {"clusterIP": "None",
                     "ports": [{"name": "http-metrics", "port": 9153, "protocol": "TCP",
                                "targetPort": target_port}],
                     "selector": {"k8s-app": "kube-dns"}}}


COREDNS_METRICS_COMPONENT = os.path.join(MANIFESTS, "components", "coredns-metrics")
DOCUMENTED_TARGET_PORT = 10056  # coreDns.service.targetPort in the guide


def test_kube_prometheus_stack_keeps_its_coredns_target(r):
    p = []
    work = tempfile.mkdtemp(prefix="kdns-coredns-metrics-")
    try:
        rendered = manifests.render(manifests.write_overlay(
            os.path.join(work, "site"), [COREDNS_METRICS_COMPONENT]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    deployment = rendered.kube_dns()
    spec = pod_spec(deployment)
    selector = {"matchLabels": kube_prometheus_stack_service()["spec"]["selector"]}
    if not manifests.labels_match(selector, deployment["spec"]["template"]["metadata"]
                                  .get("labels", {})):
        p.append("kube-prometheus-stack's selector k8s-app: kube-dns does not select the pods")
    # The chart's default reaches no port of ours: the reason for the documented value.
    if not service_problems(kube_prometheus_stack_service(), spec):
        p.append("the chart's default targetPort 9153 reaches a kdns port: the guide's "
                 "values change is not needed, or the check cannot fail")
    service = kube_prometheus_stack_service(DOCUMENTED_TARGET_PORT)
    p += ["with targetPort %d: %s" % (DOCUMENTED_TARGET_PORT, x)
          for x in service_problems(service, spec)]
    # The port it reaches is frontend-cache's metrics port, with CoreDNS's names on.
    for container in spec["containers"]:
        if not any(port["containerPort"] == DOCUMENTED_TARGET_PORT
                   for port in container.get("ports", [])):
            continue
        _, child = split_nanny_args(rendered.argv(container))
        if "--prometheus-port=%d" % DOCUMENTED_TARGET_PORT not in child:
            p.append("container %s declares %d but its program does not serve metrics there: "
                     "%s" % (container["name"], DOCUMENTED_TARGET_PORT, child))
        if "--metrics-compat=coredns" not in child:
            p.append("container %s: no --metrics-compat=coredns with the coredns-metrics "
                     "component: %s" % (container["name"], child))
        code, out = check_flags("frontend-cache", child)
        if code != 0:
            p.append("frontend-cache refuses its command line: %s" % out[-300:])
    kubedns = [c for c in spec["containers"] if c["name"] == "kubedns"][0]
    if "--metrics-compat=coredns" not in rendered.argv(kubedns):
        p.append("kubedns has no --metrics-compat=coredns with the component")
    return p


def edited(docs):
    """The operator's edits in the cluster: a stub domain, the autoscaler's ladder."""
    docs = copy.deepcopy(docs)
    for doc in docs:
        if doc["kind"] == "ConfigMap" and doc["metadata"]["name"] == "kube-dns":
            doc["data"] = {"stubDomains": '{"acme.local": ["10.150.0.1"]}'}
        if doc["kind"] == "ConfigMap" and doc["metadata"]["name"] == "kube-dns-autoscaler":
            doc["data"] = {"linear": '{"coresPerReplica": 64, "nodesPerReplica": 4, "min": 3}'}
    return docs


def apply(live_docs, applied_docs):
    def key(d):
        return (d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"])
    store = {key(d): d for d in copy.deepcopy(live_docs)}
    for doc in applied_docs:
        store[key(doc)] = merge(store[key(doc)], doc) if key(doc) in store else doc
    return store


def test_reapply_keeps_configmaps_edited_in_the_cluster(r):
    p = []
    installed = manifests.render(components=[manifests.CONFIGMAPS_COMPONENT]).docs
    live = edited(installed)
    wanted = {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]): d
              for d in live if d["kind"] == "ConfigMap" and
              d["metadata"]["name"] in ("kube-dns", "kube-dns-autoscaler")}
    if len(wanted) != 2:
        return ["the configmaps component does not hold kube-dns and kube-dns-autoscaler: %s"
                % sorted(wanted)]
    for key in wanted:
        if any(d["kind"] == key[0] and d["metadata"]["name"] == key[2] for d in r.docs):
            p.append("manifests/ applies ConfigMap %s: a re-apply resets the operator's "
                     "edits (keep it in components/configmaps)" % key[2])
    after = apply(live, r.docs)
    for key, doc in wanted.items():
        if after[key].get("data") != doc["data"]:
            p.append("re-applying manifests/ changed ConfigMap %s: %s" % (key[2],
                                                                         after[key].get("data")))
    # The negative control: the component itself does reset the autoscaler's parameters.
    again = apply(live, installed)
    if all(again[key].get("data") == doc["data"] for key, doc in wanted.items()):
        p.append("applying the configmaps component kept every edit: the check cannot fail")
    return p


def domain_probe(rendered):
    """{container: argv} of the kube-dns pod's containers."""
    return {c["name"]: rendered.argv(c) for c in pod_spec(rendered.kube_dns())["containers"]}


def test_cluster_domain_is_one_parameter(r):
    p = []
    with open(os.path.join(MANIFESTS, "deployment.yaml")) as f:
        for number, line in enumerate(f, 1):
            code = "" if line.lstrip().startswith("#") else line
            if "cluster.local" in code:
                p.append("deployment.yaml:%d names cluster.local: use $(CLUSTER_DOMAIN)"
                         % number)
    work = tempfile.mkdtemp(prefix="kdns-domain-")
    try:
        copy_dir = os.path.join(work, "manifests")
        shutil.copytree(MANIFESTS, copy_dir)
        path = os.path.join(copy_dir, "kustomization.yaml")
        with open(path) as f:
            text = f.read()
        if text.count("domain=cluster.local") != 1:
            return p + ["kustomization.yaml does not set domain=cluster.local once"]
        with open(path, "w") as f:
            f.write(text.replace("domain=cluster.local", "domain=corp.internal"))
        rendered = manifests.render(copy_dir)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    argvs = domain_probe(rendered)
    for name, argv in argvs.items():
        for arg in argv:
            if "cluster.local" in arg:
                p.append("%s: %s still names cluster.local" % (name, arg))
    kubedns = gflags(argvs["kubedns"][1:])
    own, child = split_nanny_args(argvs["dnsmasq"])
    if kubedns.get("domain") != "corp.internal.":
        p.append("kubedns --domain=%s" % kubedns.get("domain"))
    if gflags(own[1:]).get("clusterDomain") != "corp.internal":
        p.append("nanny -clusterDomain=%s" % gflags(own[1:]).get("clusterDomain"))
    if "--server=/corp.internal/127.0.0.1#10053" not in child:
        p.append("frontend-cache routes no --server=/corp.internal/ to kubedns: %s" % child)
    probes = [a for a in argvs["sidecar"] if a.startswith("--probe=")]
    if not probes or not all(".svc.corp.internal," in a for a in probes):
        p.append("sidecar probes outside corp.internal: %s" % probes)
    for program, args in (("kubedns", argvs["kubedns"][1:] + ["--kube-master-url=http://x"]),
                          ("frontend-cache", child), ("sidecar", argvs["sidecar"][1:])):
        code, out = check_flags(program, args)
        if code != 0:
            p.append("%s refuses the corp.internal command line: %s" % (program, out[-300:]))
    return p


def test_threads_rollout_and_rollback(r):
    p = []
    deployment = r.kube_dns()
    for container in pod_spec(deployment)["containers"]:
        for arg in r.argv(container):
            if re.match(r"^--?(threads|dns-threads|dns_threads)=", arg):
                p.append("%s sets %s: leave it to the container's CPU limit" % (
                    container["name"], arg))
    if flag_defaults("kubedns").get("dns-threads") != "0":
        p.append("kubedns --dns-threads defaults to %s, not 0 (one per usable CPU)"
                 % flag_defaults("kubedns").get("dns-threads"))
    spec = deployment["spec"]
    if not spec.get("minReadySeconds", 0) > 0:
        p.append("no minReadySeconds: a pod that is ready once counts as available")
    rolling = spec.get("strategy", {}).get("rollingUpdate", {})
    if str(rolling.get("maxUnavailable")) not in ("0", "0%"):
        p.append("maxUnavailable %s: a rollout may take serving pods away first"
                 % rolling.get("maxUnavailable"))
    if spec.get("revisionHistoryLimit", 10) < 1:
        p.append("revisionHistoryLimit 0: `kubectl rollout undo` has nothing to go back to")
    return p


def test_addon_manager_and_autoscaler(r):
    p = []
    for doc in r.docs:
        labels = doc["metadata"].get("labels", {})
        if "addonmanager.kubernetes.io/mode" in labels:
            p.append("%s %s carries addonmanager.kubernetes.io/mode: the addon manager "
                     "would reconcile or prune it" % (doc["kind"], doc["metadata"]["name"]))
    autoscalers = [d for d in r.find("Deployment", "kube-dns-autoscaler")]
    if len(autoscalers) != 1:
        return p + ["no Deployment kube-dns-autoscaler (the name kube-dns clusters use)"]
    container = pod_spec(autoscalers[0])["containers"][0]
    flags = gflags(container.get("command", [])[1:] + container.get("args", []))
    if flags.get("configmap") != "kube-dns-autoscaler" or \
            flags.get("namespace", NAMESPACE) != NAMESPACE:
        p.append("the autoscaler reads --configmap=%s, not kube-dns's kube-dns-autoscaler"
                 % flags.get("configmap"))
    return p


TESTS = [test_service_applies_over_coredns_and_kube_dns,
         test_client_side_apply_over_coredns_and_kube_dns,
         test_guide_removes_the_coredns_autoscaler_first_and_kubeadm_upgrade_passes,
         test_kube_prometheus_stack_keeps_its_coredns_target,
         test_reapply_keeps_configmaps_edited_in_the_cluster,
         test_cluster_domain_is_one_parameter,
         test_threads_rollout_and_rollback,
         test_addon_manager_and_autoscaler]


if __name__ == "__main__":
    sys.exit(manifests.main(TESTS))
