#!/usr/bin/python3
"""The objects around the kube-dns pod: ports, Service, RBAC, autoscaler, security.

  - every port a probe, annotation or Service names is declared by the pod; the kube-dns
    Service publishes DNS and CoreDNS's `metrics` 9153 (in front of kubedns's metrics
    port), port names and (port, protocol) pairs unique; every container has liveness, and readiness where it
    serves the Service's traffic (kubedns and the cache);
  - RBAC: kubedns may only list and watch Services, Endpoints, EndpointSlices (and Pods for
    --pod-records=verified); the autoscaler reads the nodes, gets its own ConfigMap and
    writes the kube-dns scale, each by name, and creates nothing (RBAC cannot limit
    `create` to a name: it would reach the kube-dns ConfigMap);
  - security: non-root, read-only root file system, no privilege escalation, capabilities
    dropped, NET_BIND_SERVICE only where a port below 1024 is bound;
  - the pods are selected, spread and protected; the autoscaler's target and ConfigMap
    agree, and it has no --default-params (they would make it create the ConfigMap); the kube-dns ConfigMap is valid (both ConfigMaps from the
    configmaps component, manifests/components/configmaps).
Closes with `N passed, M failed`.
"""
import ipaddress
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kustomize import all_containers, pod_spec  # noqa: E402
import manifests  # noqa: E402
from manifests import (  # noqa: E402
    KUBEDNS_POD_READ,
    KUBEDNS_READS,
    NAMESPACE,
    SERVICE_ACCOUNT_DIR,
    declared_ports,
    gflags,
    labels_match,
    probes)


def test_every_named_port_exists(r):
    p = []
    deployment = r.kube_dns()
    for doc in r.docs:
        spec = pod_spec(doc)
        if not spec:
            continue
        ports = declared_ports(spec)
        where = doc["metadata"]["name"]
        names = [name for _, name, _, _ in ports if name]
        for name in sorted({x for x in names if names.count(x) > 1}):
            p.append("%s: port name %s used twice in the pod" % (where, name))
        for name in names:
            if len(name) > 15 or not re.fullmatch(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?", name):
                p.append("%s: port name %r is not an IANA service name" % (where, name))
        for container in all_containers(spec):
            for kind, handler, action in probes(container):
                port = action.get("port")
                if isinstance(port, str):
                    if not any(c == container["name"] and n == port for c, n, _, _ in ports):
                        p.append("%s/%s %s: port %s is not declared by that container"
                                 % (where, container["name"], kind, port))
                elif not any(number == port and proto == "TCP" for _, _, number, proto in ports):
                    p.append("%s/%s %s: port %s is declared by no container of the pod"
                             % (where, container["name"], kind, port))
        annotations = (doc["spec"].get("template", {}).get("metadata", {})
                       .get("annotations", {}))
        if "prometheus.io/port" in annotations:
            port = int(annotations["prometheus.io/port"])
            if not any(number == port and proto == "TCP" for _, _, number, proto in ports):
                p.append("%s: prometheus.io/port %d is declared by no container" % (where, port))
    # Services: select the kube-dns pods, target declared ports; a scrape annotation names a
    # port of the selected pods (the endpoints job scrapes each pod IP at that port).
    template = deployment["spec"]["template"]
    spec = pod_spec(deployment)
    ports = declared_ports(spec)
    for service in r.find("Service"):
        name = service["metadata"]["name"]
        selector = service["spec"].get("selector", {})
        if not selector or not labels_match({"matchLabels": selector},
                                            template["metadata"]["labels"]):
            p.append("Service %s does not select the kube-dns pods" % name)
            continue
        for port in service["spec"]["ports"]:
            target = port.get("targetPort", port["port"])
            proto = port.get("protocol", "TCP")
            if not any((n == target if isinstance(target, str) else number == target) and
                       pr == proto for _, n, number, pr in ports):
                p.append("Service %s port %s/%s targets %s, declared by no container"
                         % (name, port["port"], proto, target))
        annotated = service["metadata"].get("annotations", {}).get("prometheus.io/port")
        if annotated and not any(number == int(annotated) and proto == "TCP"
                                 for _, _, number, proto in ports):
            p.append("Service %s: prometheus.io/port %s is declared by no container of the "
                     "pods it selects" % (name, annotated))
    return p


def test_kube_dns_service(r):
    p = []
    service = r.one("Service", "kube-dns")
    cluster_ip = service["spec"].get("clusterIP")
    try:
        ipaddress.ip_address(cluster_ip)
    except (TypeError, ValueError):
        p.append("Service kube-dns: clusterIP %r is not an IP (set it in kustomization.yaml)"
                 % cluster_ip)
    dns = {(pt["port"], pt.get("protocol", "TCP")) for pt in service["spec"]["ports"]}
    for want in ((53, "UDP"), (53, "TCP")):
        if want not in dns:
            p.append("Service kube-dns lacks port %d/%s" % want)
    # DNS, and the port kubeadm's CoreDNS Service has (name, number, protocol), so this
    # Service applies over that one (manifests_migration_test.py), in front of kubedns's
    # metrics; nothing else (every pod reaches the Service).
    by_key = {(pt["port"], pt.get("protocol", "TCP")): pt for pt in service["spec"]["ports"]}
    metrics = by_key.get((9153, "TCP"))
    if metrics is None or metrics.get("name") != "metrics":
        p.append("Service kube-dns lacks CoreDNS's port `metrics` 9153/TCP")
    else:
        kubedns = r.containers_running("kubedns")[0]
        targets = {pt.get("name") for pt in kubedns.get("ports", [])} | {
            pt["containerPort"] for pt in kubedns.get("ports", [])}
        if metrics.get("targetPort") not in targets or \
                metrics.get("targetPort") not in ("metrics", 10055):
            p.append("Service kube-dns port metrics targets %s, not kubedns's metrics port"
                     % metrics.get("targetPort"))
    for port, proto in sorted(set(by_key) - {(53, "UDP"), (53, "TCP"), (9153, "TCP")}):
        p.append("Service kube-dns publishes %d/%s: DNS and metrics only" % (port, proto))
    names = [pt.get("name") for pt in service["spec"]["ports"]]
    for name in sorted({n for n in names if names.count(n) > 1}):
        p.append("Service kube-dns: port name %s twice" % name)
    if len(by_key) != len(service["spec"]["ports"]):
        p.append("Service kube-dns: a (port, protocol) twice")
    return p


def test_every_container_has_liveness_and_the_serving_ones_readiness(r):
    p = []
    for container in all_containers(pod_spec(r.kube_dns())):
        kinds = {kind for kind, _, _ in probes(container)}
        if "livenessProbe" not in kinds:
            p.append("container %s has no liveness probe" % container["name"])
        # kubedns answers the cache's cluster names, the cache answers the Service: a pod
        # must not take traffic before both can answer.
        if container["name"] in ("kubedns", "dnsmasq") and "readinessProbe" not in kinds:
            p.append("container %s has no readiness probe" % container["name"])
    return p


def rbac_of(r, account, namespace):
    """The rules granted to a service account: [(binding kind, role kind, role name, rule)]."""
    out = []
    for kind in ("ClusterRoleBinding", "RoleBinding"):
        for binding in r.find(kind):
            if not any(s.get("kind") == "ServiceAccount" and s.get("name") == account and
                       s.get("namespace", binding["metadata"].get("namespace")) == namespace
                       for s in binding.get("subjects", [])):
                continue
            ref = binding["roleRef"]
            roles = r.find(ref["kind"], ref["name"])
            if not roles:
                raise AssertionError("%s %s refers to %s %s, which is not here"
                                     % (kind, binding["metadata"]["name"], ref["kind"],
                                        ref["name"]))
            for rule in roles[0].get("rules", []):
                out.append((kind, ref["kind"], ref["name"], rule))
    return out


def test_kubedns_may_only_list_and_watch(r):
    p = []
    deployment = r.kube_dns()
    spec = pod_spec(deployment)
    account = spec.get("serviceAccountName", "default")
    if not r.find("ServiceAccount", account):
        p.append("ServiceAccount %s (the Deployment's) is not in the manifests" % account)
    granted = set()
    for binding_kind, role_kind, role, rule in rbac_of(r, account, NAMESPACE):
        verbs = set(rule.get("verbs", []))
        if not verbs <= {"list", "watch"}:
            p.append("%s %s grants %s: kubedns only lists and watches"
                     % (role_kind, role, sorted(verbs - {"list", "watch"})))
        if rule.get("nonResourceURLs"):
            p.append("%s %s grants nonResourceURLs" % (role_kind, role))
        for group in rule.get("apiGroups", []):
            for resource in rule.get("resources", []):
                if (group, resource) not in KUBEDNS_READS | {KUBEDNS_POD_READ}:
                    p.append("%s %s grants %s/%s, which kubedns does not read"
                             % (role_kind, role, group or "core", resource))
                if verbs >= {"list", "watch"}:
                    granted.add((group, resource))
    for need in sorted(KUBEDNS_READS - granted):
        p.append("kubedns cannot list and watch %s/%s" % (need[0] or "core", need[1]))
    verified = any(gflags(r.argv(c)[1:]).get("pod-records") == "verified"
                   for c in r.containers_running("kubedns"))
    if verified and KUBEDNS_POD_READ not in granted:
        p.append("--pod-records=verified needs list and watch on pods")
    if not verified and KUBEDNS_POD_READ in granted:
        p.append("pods are readable, but --pod-records is not verified: drop the rule")
    # Only the kubedns container holds the token.
    if spec.get("automountServiceAccountToken", True):
        p.append("automountServiceAccountToken is on: every container gets the token")
    for container in spec["containers"]:
        mounts = any(m.get("mountPath") == SERVICE_ACCOUNT_DIR
                     for m in container.get("volumeMounts", []))
        if mounts != (r.program_of(container) == "kubedns"):
            p.append("container %s %s the service account token" % (
                container["name"], "mounts" if mounts else "does not mount"))
    return p


def test_autoscaler(r):
    p = []
    deployments = [d for d in r.find("Deployment")
                   if any("cluster-proportional-autoscaler" in c["image"]
                          for c in pod_spec(d)["containers"])]
    if len(deployments) != 1:
        return ["expected one cluster-proportional-autoscaler Deployment, found %d"
                % len(deployments)]
    autoscaler = deployments[0]
    spec = pod_spec(autoscaler)
    container = spec["containers"][0]
    flags = gflags(container.get("command", [])[1:] + container.get("args", []))
    kind, _, name = flags.get("target", "").partition("/")
    namespace = flags.get("namespace", NAMESPACE)
    if kind != "deployment" or name != "kube-dns" or namespace != NAMESPACE:
        p.append("--target=%s --namespace=%s must be deployment/kube-dns in %s"
                 % (flags.get("target"), namespace, NAMESPACE))
    configmaps = manifests.operator_configmaps(flags.get("configmap"))
    if not configmaps:
        p.append("--configmap=%s is not in the manifests" % flags.get("configmap"))
    else:
        data = configmaps[0].get("data", {})
        try:
            params = {key: json.loads(value) for key, value in data.items()}
        except ValueError as e:
            return p + ["ConfigMap %s: %s" % (flags.get("configmap"), e)]
        if set(params) - {"linear", "ladder"} or len(params) != 1:
            p.append("ConfigMap %s must hold one of linear or ladder, not %s"
                     % (flags.get("configmap"), sorted(params)))
        linear = params.get("linear", {})
        for key in ("coresPerReplica", "nodesPerReplica"):
            if key in linear and not (isinstance(linear[key], (int, float)) and linear[key] > 0):
                p.append("linear.%s must be positive" % key)
    if "default-params" in flags:
        p.append("--default-params makes the autoscaler create its ConfigMap when missing, "
                 "which its RBAC must not allow (create cannot be limited to a name)")
    account = spec.get("serviceAccountName", "default")
    grants = rbac_of(r, account, NAMESPACE)
    p += autoscaler_rbac_problems(grants, flags.get("configmap"), name)
    # The negative control: the check flags what the RBAC used to grant.
    for bad_rule in ({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]},
                     {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}):
        bad = grants + [("RoleBinding", "Role", "control", bad_rule)]
        if not autoscaler_rbac_problems(bad, flags.get("configmap"), name):
            p.append("the RBAC check passes %s: it cannot fail" % bad_rule)
    return p


# What the autoscaler may do, and to what: read the nodes; read its ConfigMap and read and
# write the kube-dns scale, each by name, in kube-system. It needs nothing else (the
# cluster-proportional-autoscaler only gets its ConfigMap, and creates it only with
# --default-params, which the manifests do not pass).
AUTOSCALER_NAMED_VERBS = {"get", "update", "patch"}


def autoscaler_rbac_problems(grants, configmap, target):
    """Problems with the autoscaler's grants ((binding kind, role kind, role, rule)):
    every write and every ConfigMap access limited to one name; nothing created."""
    p = []
    reads_configmap = False
    for _, role_kind, role, rule in grants:
        verbs = set(rule.get("verbs", []))
        resources = set(rule.get("resources", []))
        names = rule.get("resourceNames")
        where = "%s %s (%s on %s)" % (role_kind, role, sorted(verbs), sorted(resources))
        if "*" in verbs or "*" in resources or "*" in rule.get("apiGroups", []):
            p.append("%s uses a wildcard" % where)
        elif verbs & {"create", "deletecollection"}:
            p.append("%s: create and deletecollection cannot be limited to a name in RBAC, "
                     "so they reach every object of the kind (the kube-dns ConfigMap too)"
                     % where)
        elif resources == {"nodes"}:
            if not verbs <= {"list", "watch"}:
                p.append("%s: nodes are only listed and watched" % where)
        elif resources == {"configmaps"}:
            if role_kind != "Role" or names != [configmap] or \
                    not verbs <= AUTOSCALER_NAMED_VERBS:
                p.append("%s: ConfigMaps only as a Role in %s, limited to resourceNames "
                         "[%s], %s at most" % (where, NAMESPACE, configmap,
                                               sorted(AUTOSCALER_NAMED_VERBS)))
            reads_configmap = reads_configmap or "get" in verbs
        elif resources == {"deployments/scale"}:
            if role_kind != "Role" or names != [target] or \
                    not verbs <= AUTOSCALER_NAMED_VERBS:
                p.append("%s: the scale only as a Role limited to resourceNames [%s]"
                         % (where, target))
        else:
            p.append("%s: the autoscaler needs nothing of %s" % (where, sorted(resources)))
    if not reads_configmap:
        p.append("the autoscaler may not get its ConfigMap %s" % configmap)
    return p


def test_security_contexts(r):
    p = []
    for doc in r.docs:
        spec = pod_spec(doc)
        if not spec:
            continue
        where = doc["metadata"]["name"]
        pod = spec.get("securityContext", {})
        if pod.get("seccompProfile", {}).get("type") != "RuntimeDefault":
            p.append("%s: pod seccompProfile must be RuntimeDefault" % where)
        for key in ("hostNetwork", "hostPID", "hostIPC"):
            if spec.get(key):
                p.append("%s: %s" % (where, key))
        unprivileged_start = None
        for sysctl in pod.get("sysctls", []):
            if sysctl["name"] == "net.ipv4.ip_unprivileged_port_start":
                unprivileged_start = int(sysctl["value"])
            else:
                p.append("%s: sysctl %s is not needed" % (where, sysctl["name"]))
        for container in all_containers(spec):
            name = "%s/%s" % (where, container["name"])
            sc = container.get("securityContext", {})
            merged = dict(pod)
            merged.update(sc)
            if merged.get("runAsNonRoot") is not True:
                p.append("%s: runAsNonRoot is not true" % name)
            uid = merged.get("runAsUser")
            if not isinstance(uid, int) or uid <= 0:
                p.append("%s: runAsUser must be a non-zero uid (got %r)" % (name, uid))
            if sc.get("readOnlyRootFilesystem") is not True:
                p.append("%s: readOnlyRootFilesystem is not true" % name)
            if sc.get("allowPrivilegeEscalation") is not False:
                p.append("%s: allowPrivilegeEscalation is not false" % name)
            if sc.get("privileged"):
                p.append("%s: privileged" % name)
            caps = sc.get("capabilities", {})
            if "ALL" not in caps.get("drop", []):
                p.append("%s: capabilities.drop must hold ALL" % name)
            added = set(caps.get("add", []))
            low_ports = sorted({port["containerPort"] for port in container.get("ports", [])
                                if port["containerPort"] < 1024})
            if added - {"NET_BIND_SERVICE"}:
                p.append("%s: adds %s; only NET_BIND_SERVICE may be added"
                         % (name, sorted(added - {"NET_BIND_SERVICE"})))
            if low_ports and "NET_BIND_SERVICE" not in added:
                p.append("%s: binds %s as uid %s without NET_BIND_SERVICE" % (name, low_ports,
                                                                             uid))
            if not low_ports and "NET_BIND_SERVICE" in added:
                p.append("%s: NET_BIND_SERVICE but no port below 1024" % name)
            if low_ports and unprivileged_start is not None and \
                    unprivileged_start > low_ports[0]:
                p.append("%s: ip_unprivileged_port_start %d is above port %d"
                         % (name, unprivileged_start, low_ports[0]))
            resources = container.get("resources", {})
            if not resources.get("requests", {}).get("cpu") or \
                    not resources.get("requests", {}).get("memory"):
                p.append("%s: no cpu and memory requests" % name)
            if not resources.get("limits", {}).get("memory"):
                p.append("%s: no memory limit" % name)
    return p


def test_pods_are_selected_spread_and_protected(r):
    p = []
    deployment = r.kube_dns()
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    spec = pod_spec(deployment)
    for doc in r.find("Deployment"):
        if not labels_match(doc["spec"]["selector"], doc["spec"]["template"]["metadata"]
                            ["labels"]):
            p.append("Deployment %s: selector does not match its pods" % doc["metadata"]["name"])
    if spec.get("priorityClassName") != "system-cluster-critical":
        p.append("kube-dns pods must be system-cluster-critical")
    if spec.get("dnsPolicy") != "Default":
        p.append("kube-dns pods must use dnsPolicy Default (never resolve through themselves)")
    if "replicas" in deployment["spec"]:
        p.append("kube-dns replicas are the autoscaler's: every apply would reset them")
    rolling = deployment["spec"].get("strategy", {}).get("rollingUpdate", {})
    if rolling.get("maxUnavailable") not in (0, "0", "0%"):
        p.append("a rolling update must not take a DNS pod away before its replacement is up")
    constraints = spec.get("topologySpreadConstraints", [])
    if not constraints:
        p.append("kube-dns pods have no topologySpreadConstraints")
    for c in constraints:
        if not labels_match(c.get("labelSelector", {}), labels):
            p.append("topology spread on %s does not select the kube-dns pods"
                     % c.get("topologyKey"))
    pdbs = [d for d in r.find("PodDisruptionBudget")
            if labels_match(d["spec"].get("selector", {}), labels)]
    if len(pdbs) != 1:
        p.append("expected one PodDisruptionBudget for the kube-dns pods, found %d" % len(pdbs))
    elif pdbs[0]["spec"].get("minAvailable") not in (None, 0) and \
            "maxUnavailable" not in pdbs[0]["spec"]:
        p.append("the PodDisruptionBudget should use maxUnavailable, so one replica can be "
                 "drained")
    tolerations = {t.get("key") for t in spec.get("tolerations", [])}
    if "CriticalAddonsOnly" not in tolerations:
        p.append("kube-dns pods must tolerate CriticalAddonsOnly (as kube-dns does)")
    return p


def test_kube_dns_configmap(r):
    p = []
    configmaps = manifests.operator_configmaps("kube-dns")
    if len(configmaps) != 1:
        return ["expected the kube-dns ConfigMap once, found %d" % len(configmaps)]
    data = configmaps[0].get("data") or {}
    for key in set(data) - {"stubDomains", "upstreamNameservers"}:
        p.append("kube-dns ConfigMap: unknown key %s" % key)
    try:
        if "stubDomains" in data:
            stubs = json.loads(data["stubDomains"])
            if not isinstance(stubs, dict) or not all(isinstance(v, list) and v
                                                      for v in stubs.values()):
                p.append("stubDomains must be a JSON object of non-empty lists")
        if "upstreamNameservers" in data:
            upstreams = json.loads(data["upstreamNameservers"])
            if not isinstance(upstreams, list) or len(upstreams) > 3:
                p.append("upstreamNameservers must be a JSON list of at most 3")
    except ValueError as e:
        p.append("kube-dns ConfigMap: %s" % e)
    return p


TESTS = [test_every_named_port_exists,
         test_kube_dns_service,
         test_every_container_has_liveness_and_the_serving_ones_readiness,
         test_kubedns_may_only_list_and_watch,
         test_autoscaler,
         test_security_contexts,
         test_pods_are_selected_spread_and_protected,
         test_kube_dns_configmap]


if __name__ == "__main__":
    sys.exit(manifests.main(TESTS))
