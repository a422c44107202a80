#!/usr/bin/python3
"""The node-local component of the manifests (manifests/components/node-local), rendered
with the base as an operator's overlay would: the DaemonSet's command line passes the
nanny's own flag check (`--check-flags`, from $KDNS_BIN; its arguments after `--` through
frontend-cache's), and the DaemonSet agrees with itself, with the base and with what it
replaces (node-local-dns): the ClusterIP it takes over is the base Service's, the probes
ask the health port on the link-local address, the metrics annotation names the metrics
address's port, the kube-dns ConfigMap is mounted where -kubednscm reads it, the update
can surge (no host ports), kube-dns-upstream selects the central pods. Closes with
`N passed, M failed`.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import kustomize  # noqa: E402
import manifests  # noqa: E402
from manifests import gflags, split_nanny_args  # noqa: E402

COMPONENT = os.path.join(manifests.MANIFESTS, "components", "node-local")


def rendered():
    """manifests.Rendered of the base with the node-local component."""
    return manifests.render(components=[COMPONENT])


def node_cache(r):
    """(DaemonSet, its node-cache container, the nanny's flags, frontend-cache's args)."""
    ds = r.one("DaemonSet", "node-local-dns")
    containers = kustomize.pod_spec(ds)["containers"]
    if [c["name"] for c in containers] != ["node-cache"]:
        raise AssertionError("want one container named node-cache (node-local-dns's name), "
                             "got %s" % [c["name"] for c in containers])
    own, child = split_nanny_args(r.argv(containers[0]))
    return ds, containers[0], gflags(own[1:]), child


def test_the_command_line_passes_the_flag_checks(r):
    _, container, flags, child = node_cache(r)
    p = []
    if r.program_of(container) != "nanny":
        p.append("the node cache runs %s, not the nanny" % r.program_of(container))
    argv = r.argv(container)
    problem = manifests.check_command(container, argv, "nanny", r.image_env(container))
    if problem:
        p.append(problem)
    problem = manifests.check_command(container, ["frontend-cache"] + child, "frontend-cache",
                                      r.image_env(container))
    if problem:
        p.append(problem)
    # The checks can fail: a node-cache flag the nanny does not know stops it.
    code, out = manifests.check_flags("nanny", argv[1:] + ["-no-such-node-cache-flag=1"])
    if code == 0:
        p.append("the nanny's flag check passed an unknown flag: %s" % out)
    if "localip" not in flags:
        p.append("no -localip: the nanny would not run in node-local mode")
    return p


def test_it_takes_over_the_base_clusterip_and_a_link_local_address(r):
    _, _, flags, _ = node_cache(r)
    addresses = flags.get("localip", "").split(",")
    cluster_ip = r.one("Service", "kube-dns")["spec"].get("clusterIP")
    p = []
    if not addresses or not addresses[0].startswith("169.254."):
        p.append("-localip starts with %r, want the link-local address" % addresses[:1])
    if cluster_ip not in addresses:
        p.append("-localip %s lacks the kube-dns ClusterIP %s (transparent mode)"
                 % (addresses, cluster_ip))
    return p


def test_probes_health_and_metrics_agree_with_the_flags(r):
    ds, container, flags, _ = node_cache(r)
    p = []
    health_port = int(flags.get("health-port", manifests.flag_defaults("nanny")["health-port"]))
    link_local = flags["localip"].split(",")[0]
    for name in ("livenessProbe", "readinessProbe"):
        get = container.get(name, {}).get("httpGet")
        if get is None:
            p.append("no %s" % name)
            continue
        if (get.get("path"), get.get("port"), get.get("host")) != ("/health", health_port,
                                                                    link_local):
            p.append("%s asks %s, want /health on %s:%d" % (name, get, link_local, health_port))
    metrics = flags.get("metrics-listen-address",
                        manifests.flag_defaults("nanny")["metrics-listen-address"])
    annotations = ds["spec"]["template"]["metadata"].get("annotations", {})
    if annotations.get("prometheus.io/port") != metrics.rsplit(":", 1)[1]:
        p.append("prometheus.io/port %s, but the metrics listen on %s"
                 % (annotations.get("prometheus.io/port"), metrics))
    return p


def test_the_kube_dns_configmap_is_mounted_where_kubednscm_reads(r):
    ds, container, flags, _ = node_cache(r)
    spec = kustomize.pod_spec(ds)
    mounts = {m["mountPath"]: m["name"] for m in container.get("volumeMounts", [])}
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    p = []
    path = flags.get("kubednscm", manifests.flag_defaults("nanny")["kubednscm"])
    volume = volumes.get(mounts.get(path), {})
    if volume.get("configMap", {}).get("name") != "kube-dns":
        p.append("-kubednscm %s is not the kube-dns ConfigMap's mount (%s)" % (path, mounts))
    run_dir = flags.get("runDir")
    if run_dir is None or run_dir not in mounts or "emptyDir" not in volumes[mounts[run_dir]]:
        p.append("-runDir %s is not a writable emptyDir (the root file system is read-only)"
                 % run_dir)
    return p


def test_the_daemonset_runs_on_every_node_and_can_surge(r):
    ds, container, _, _ = node_cache(r)
    spec = kustomize.pod_spec(ds)
    p = []
    wants = {"hostNetwork": True, "dnsPolicy": "Default",
             "priorityClassName": "system-node-critical"}
    for key, want in wants.items():
        if spec.get(key) != want:
            p.append("%s is %r, want %r" % (key, spec.get(key), want))
    if {"operator": "Exists"} not in spec.get("tolerations", []):
        p.append("it does not tolerate every taint: %s" % spec.get("tolerations"))
    rolling = ds["spec"].get("updateStrategy", {}).get("rollingUpdate", {})
    if rolling.get("maxSurge") in (None, 0, "0") or rolling.get("maxUnavailable") not in (0, "0"):
        p.append("the update does not surge: %s" % rolling)
    # Under hostNetwork a declared container port is a host port, which keeps the surge
    # pod off the node its old pod holds.
    if container.get("ports"):
        p.append("the node cache declares ports %s: host ports block maxSurge"
                 % container["ports"])
    if ds["spec"]["selector"]["matchLabels"] != {"k8s-app": "node-local-dns"}:
        p.append("selector %s is not node-local-dns's (an apply over it would be refused)"
                 % ds["spec"]["selector"])
    caps = container.get("securityContext", {}).get("capabilities", {})
    if sorted(caps.get("add", [])) != ["NET_ADMIN", "NET_BIND_SERVICE"] or \
            caps.get("drop") != ["ALL"]:
        p.append("capabilities %s, want ALL dropped but NET_ADMIN and NET_BIND_SERVICE" % caps)
    return p


def test_kube_dns_upstream_selects_the_central_pods(r):
    _, _, flags, _ = node_cache(r)
    name = flags.get("upstreamsvc", manifests.flag_defaults("nanny")["upstreamsvc"])
    service = r.one("Service", name)
    labels = kustomize.pod_spec(r.kube_dns()) and \
        r.kube_dns()["spec"]["template"]["metadata"]["labels"]
    p = []
    if not manifests.labels_match(service["spec"]["selector"], labels):
        p.append("Service %s selects %s, not the kube-dns pods (%s)"
                 % (name, service["spec"]["selector"], labels))
    ports = sorted((x["port"], x["protocol"]) for x in service["spec"]["ports"])
    if ports != [(53, "TCP"), (53, "UDP")]:
        p.append("Service %s ports %s, want 53 UDP and TCP" % (name, ports))
    return p


def main():
    return harness.main("kdns-manifests-node-local-",
                        [test_the_command_line_passes_the_flag_checks,
                         test_it_takes_over_the_base_clusterip_and_a_link_local_address,
                         test_probes_health_and_metrics_agree_with_the_flags,
                         test_the_kube_dns_configmap_is_mounted_where_kubednscm_reads,
                         test_the_daemonset_runs_on_every_node_and_can_surge,
                         test_kube_dns_upstream_selects_the_central_pods],
                        setup=lambda workdir, owned: rendered())


if __name__ == "__main__":
    sys.exit(main())
