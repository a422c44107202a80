#!/usr/bin/python3
"""The kube-dns pod's command lines, checked by the built binaries themselves.

Each kdns container's command line (the image's ENTRYPOINT from images/Dockerfile, the
container's command and args, its env applied as the kubelet does, the service account
files where the container mounts them) is run through the binary's flag-check mode
(`--check-flags`: validate, exit) from $KDNS_BIN (default build/bin); the nanny's arguments
after `--` also go through frontend-cache's; and the check modes are shown to reject a bad
flag, so a pass means something. Then the containers agree with each other: cluster domain,
kubedns's DNS port in the cache's --server routes and the sidecar's probes, declared ports,
config mounts, lameduck periods inside the grace period, reading every flag's default and
which options take a value from the binaries (manifests.py). Closes with
`N passed, M failed`.
"""
import os
import re
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kustomize  # noqa: E402
from kustomize import all_containers, pod_spec  # noqa: E402
import manifests  # noqa: E402
from manifests import (  # noqa: E402
    FRONTEND_DEFAULTS,
    NAMESPACE,
    check_command,
    check_flags,
    container_env,
    declared_ports,
    dnsmasq_options,
    duration_seconds,
    flag_defaults,
    gflags,
    has_check_mode,
    kubedns_metrics_port_default,
    last_option,
    probes,
    split_nanny_args)


def test_command_lines_pass_the_flag_checks(r):
    p = []
    checked = 0
    spec = pod_spec(r.kube_dns())
    for container in spec["containers"]:
        program = r.program_of(container)
        if program is None:
            continue
        argv = r.argv(container)
        if program == "nanny":
            own, child = split_nanny_args(argv)
            child_program = os.path.basename(
                gflags(own[1:]).get("dnsmasqExec", flag_defaults("nanny")["dnsmasqExec"]))
            # The child's arguments, through its own check (the nanny adds --server
            # arguments from the ConfigMap; these are the fixed ones).
            problem = check_command(container, [child_program] + child, child_program,
                                    r.image_env(container))
            checked += 1
            if problem:
                p.append("child of the nanny: " + problem)
        if not has_check_mode(program):
            p.append("%s has no --check-flags mode: its command line cannot be checked" % program)
            continue
        problem = check_command(container, argv, program, r.image_env(container))
        checked += 1
        if problem:
            p.append(problem)
    for doc in r.docs:  # kdns binaries in the other workloads, if any
        if doc is r.kube_dns() or not pod_spec(doc):
            continue
        for container in all_containers(pod_spec(doc)):
            if r.program_of(container) in ("kubedns", "frontend-cache", "nanny", "sidecar"):
                p.append("%s runs %s: add it to this test" % (doc["metadata"]["name"],
                                                              r.program_of(container)))
    if checked == 0:
        p.append("no command line was checked")
    return p


def test_flag_check_modes_reject_a_bad_flag(r):
    p = []
    for program, argv in (("kubedns", ["--objects-file=/dev/null", "--dns-port=70000"]),
                          ("kubedns", ["--objects-file=/dev/null", "--no-such-flag=1"]),
                          ("frontend-cache", ["--cache-size=lots"]),
                          ("frontend-cache", ["--server=/cluster.local/not-an-ip#53"]),
                          ("nanny", ["-syncInterval=soon"]),
                          ("nanny", ["--", "--cache-size=lots"]),
                          ("sidecar", ["--probe=kubedns,127.0.0.1:10053"]),
                          ("sidecar", ["--prometheus-port=70000"])):
        if not has_check_mode(program):
            p.append("%s has no --check-flags mode" % program)
            continue
        if check_flags(program, argv)[0] == 0:
            p.append("%s --check-flags %s passed; it must fail" % (program, " ".join(argv)))
    return p


def test_containers_agree_with_each_other(r):
    p = []
    deployment = r.kube_dns()
    spec = pod_spec(deployment)
    kubedns = r.containers_running("kubedns")
    nanny = r.containers_running("nanny")
    sidecar = r.containers_running("sidecar")
    if len(kubedns) != 1 or len(nanny) != 1 or len(sidecar) != 1:
        return ["the kube-dns pod must run kubedns, nanny and sidecar once each; it runs "
                "%s" % [r.program_of(c) for c in spec["containers"]]]
    kubedns, nanny, sidecar = kubedns[0], nanny[0], sidecar[0]
    ports = declared_ports(spec)

    def declared(container, number, protocols=("TCP",)):
        have = {proto for c, _, n, proto in ports
                if c == container["name"] and n == int(number)}
        return set(protocols) <= have

    # kubedns.
    k_env = container_env(kubedns, NAMESPACE)
    k = dict(flag_defaults("kubedns"))
    k.update(gflags(r.argv(kubedns)[1:]))
    domain = k["domain"].rstrip(".").lower()
    dns_port = int(k["dns-port"])
    metrics_port = int(k["prometheus-port"])
    if metrics_port < 0:  # the deprecated old name
        metrics_port = int(k["metrics-port"])
    if metrics_port < 0:  # not given: $PROMETHEUS_PORT, else kubedns's fallback
        metrics_port = int(k_env.get("PROMETHEUS_PORT", kubedns_metrics_port_default()))
    healthz_port = int(k["healthz-port"])
    if not declared(kubedns, dns_port, ("UDP", "TCP")):
        p.append("kubedns serves DNS on %d (UDP and TCP) but does not declare both" % dns_port)
    for port, what in ((metrics_port, "metrics"), (healthz_port, "readiness")):
        if not declared(kubedns, port):
            p.append("kubedns serves %s on %d but does not declare it" % (what, port))
    readiness = kubedns.get("readinessProbe", {}).get("httpGet", {})
    if readiness.get("path") != "/readiness" or readiness.get("port") != healthz_port:
        p.append("kubedns readinessProbe must GET /readiness on %d, not %s" % (healthz_port,
                                                                               readiness))
    if k["pod-records"] not in ("insecure", "verified", "disabled"):
        p.append("kubedns --pod-records=%s" % k["pod-records"])

    # The cache: the nanny's child.
    own, child = split_nanny_args(r.argv(nanny))
    n = dict(flag_defaults("nanny"))
    n.update(gflags(own[1:]))
    options = dnsmasq_options(child)
    cache_port = int(last_option(options, "port", FRONTEND_DEFAULTS["port"]))
    cache_metrics = int(last_option(options, "prometheus-port",
                                    FRONTEND_DEFAULTS["prometheus-port"]))
    if not declared(nanny, cache_port, ("UDP", "TCP")):
        p.append("the cache serves DNS on %d (UDP and TCP) but does not declare both"
                 % cache_port)
    if cache_metrics and not declared(nanny, cache_metrics):
        p.append("frontend-cache serves metrics on %d but does not declare it" % cache_metrics)
    if n["clusterDomain"].rstrip(".").lower() != domain:
        p.append("nanny -clusterDomain=%s differs from kubedns --domain=%s"
                 % (n["clusterDomain"], k["domain"]))
    if n["kubednsServer"] != "127.0.0.1:%d" % dns_port:
        p.append("nanny -kubednsServer=%s, but kubedns serves 127.0.0.1:%d"
                 % (n["kubednsServer"], dns_port))
    # The run directory (servers file, metrics file) must be writable: -runDir, else a new
    # directory under $TMPDIR or /tmp.
    run_dir = n["runDir"] or container_env(nanny, NAMESPACE).get("TMPDIR", "/tmp")
    if nanny.get("securityContext", {}).get("readOnlyRootFilesystem") and not any(
            m["mountPath"].rstrip("/") == run_dir.rstrip("/") and not m.get("readOnly")
            for m in nanny.get("volumeMounts", [])):
        p.append("the nanny's run directory %s is on the read-only root file system: mount a "
                 "volume there" % run_dir)
    servers = [value for key, value in options if key == "server"]
    for zone in (domain, "in-addr.arpa", "ip6.arpa"):
        want = "/%s/127.0.0.1#%d" % (zone, dns_port)
        if want not in servers:
            p.append("frontend-cache needs --server=%s (kubedns's zone and port); it has %s"
                     % (want, servers))

    # The sidecar's probes: kubedns and the cache, by the ports they serve on.
    s = dict(flag_defaults("sidecar"))
    s.update(gflags(r.argv(sidecar)[1:]))
    probes_by_label = {}
    for arg in r.argv(sidecar)[1:]:
        m = re.match(r"^--?probe=(.*)$", arg)
        if m:
            fields = m.group(1).split(",")
            probes_by_label[fields[0]] = fields
    for label, port in (("kubedns", dns_port), ("dnsmasq", cache_port)):
        fields = probes_by_label.get(label)
        if not fields:
            p.append("the sidecar has no --probe=%s,..." % label)
            continue
        if fields[1] != "127.0.0.1:%d" % port:
            p.append("--probe=%s asks %s; that server listens on 127.0.0.1:%d"
                     % (label, fields[1], port))
        name = fields[2].rstrip(".").lower()
        if not name.endswith("." + domain):
            p.append("--probe=%s asks %s, outside the cluster domain %s" % (label, name,
                                                                             domain))
    sidecar_port = int(s["prometheus-port"])
    if not declared(sidecar, sidecar_port):
        p.append("the sidecar serves on %d but does not declare it" % sidecar_port)
    for container in spec["containers"]:
        for kind, handler, action in probes(container):
            path = action.get("path", "")
            if action.get("port") == sidecar_port and path.startswith("/healthcheck/"):
                label = path[len("/healthcheck/"):]
                if label not in probes_by_label:
                    p.append("%s %s asks /healthcheck/%s, but the sidecar has no such probe"
                             % (container["name"], kind, label))

    # The kube-dns ConfigMap reaches both readers at the directories their flags name.
    config_volumes = {v["name"] for v in spec.get("volumes", [])
                      if v.get("configMap", {}).get("name") == "kube-dns"}
    for container, directory, flag in ((kubedns, k.get("config-dir"), "--config-dir"),
                                       (nanny, n["configDir"], "-configDir")):
        if not directory:
            p.append("%s has no %s: the ConfigMap would be ignored" % (container["name"],
                                                                     flag))
            continue
        if not any(m["name"] in config_volumes and m["mountPath"].rstrip("/") ==
                   directory.rstrip("/") for m in container.get("volumeMounts", [])):
            p.append("%s %s=%s is not where the kube-dns ConfigMap is mounted"
                     % (container["name"], flag, directory))
    for v in spec.get("volumes", []):
        if v["name"] in config_volumes and not v["configMap"].get("optional"):
            p.append("the kube-dns ConfigMap volume must be optional (kube-dns's is)")

    # Graceful shutdown: kubedns outlives the cache's lameduck, all within the grace period.
    kubedns_lameduck = duration_seconds(k["lameduck"])
    cache_lameduck = duration_seconds(last_option(options, "lameduck",
                                                  FRONTEND_DEFAULTS["lameduck"]))
    grace = spec.get("terminationGracePeriodSeconds", 30)
    if kubedns_lameduck <= cache_lameduck:
        p.append("kubedns --lameduck (%gs) must be longer than frontend-cache's (%gs): cluster "
                 "names would fail during the cache's last seconds"
                 % (kubedns_lameduck, cache_lameduck))
    if grace < max(kubedns_lameduck, cache_lameduck) + 10:
        p.append("terminationGracePeriodSeconds %d leaves under 10s after the longest "
                 "lameduck (%gs)" % (grace, max(kubedns_lameduck, cache_lameduck)))
    return p


# The --check-flags pre-flight (tools/check_flags.py) on an operator's live Deployment: the
# upstream kube-dns addon's, as is and with common customizations, passes; one with refused
# arguments lists each of them.
ADDON_FIXTURE = os.path.join(manifests.ROOT, "test", "fixtures", "kube-dns-addon.yaml")
PREFLIGHT = os.path.join(manifests.ROOT, "tools", "check_flags.py")


def preflight(docs):
    """(exit status, output) of the pre-flight on `docs` (a list of objects)."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump_all(docs, f)
    try:
        result = subprocess.run([sys.executable, PREFLIGHT, "--bin", manifests.BIN, f.name],
                                capture_output=True, text=True, timeout=300)
    finally:
        os.unlink(f.name)
    return result.returncode, result.stdout + result.stderr


def addon_with(extra_args):
    """The addon Deployment with `extra_args` {container name: [args]} appended."""
    docs = kustomize.load_docs(ADDON_FIXTURE)
    for container in docs[0]["spec"]["template"]["spec"]["containers"]:
        container["args"] = container["args"] + extra_args.get(container["name"], [])
    return docs


def test_upstream_addon_passes_the_preflight(r):
    code, out = preflight(kustomize.load_docs(ADDON_FIXTURE))
    if code != 0 or "3 container(s) checked, 0 argument(s) refused" not in out:
        return ["the upstream kube-dns addon Deployment: exit %d: %s" % (code, out[-2000:])]
    return []


def test_common_customizations_pass_the_preflight(r):
    code, out = preflight(addon_with({
        "dnsmasq": ["--log-queries", "--address=/ads.example.com/0.0.0.0",
                    "--address=/blocked.example.com/", "--address=/null.example.com/#",
                    "--no-hosts", "--filter-AAAA", "--log-queries=extra", "--strict-order",
                    "--all-servers", "--domain-needed", "--bogus-priv", "--local-ttl=30",
                    "--addn-hosts=/etc/hosts.extra", "--local=/corp.example.com/",
                    "--min-cache-ttl=30", "--max-cache-ttl=300", "--no-poll", "--no-daemon",
                    "--bind-interfaces", "--interface=lo", "--user=nobody"],
        "kubedns": ["--config-map=kube-dns", "--log-queries"],
    }))
    if code != 0 or "3 container(s) checked, 0 argument(s) refused" not in out:
        return ["the addon with common customizations: exit %d: %s" % (code, out[-2000:])]
    return []


def test_preflight_lists_every_refused_argument(r):
    code, out = preflight(addon_with({
        "dnsmasq": ["--cname=a.example.com,b.example.com", "--dhcp-range", "10.0.0.2,10.0.0.9",
                    "-c", "500", "--no-such-dnsmasq-option"],
        "kubedns": ["--federations=myfed=example.com"],
        "sidecar": ["--no-such-sidecar-flag=1"],
    }))
    p = []
    if code != 1:
        p.append("exit %d, want 1" % code)
    refused = [line for line in out.splitlines() if ": refused: " in line]
    for want in ("(kubedns): refused: --federations=myfed=example.com: ",
                 "(nanny): refused: (to frontend-cache) --cname=a.example.com,b.example.com: ",
                 "(nanny): refused: (to frontend-cache) --dhcp-range 10.0.0.2,10.0.0.9: ",
                 "(nanny): refused: (to frontend-cache) --no-such-dnsmasq-option: ",
                 "(sidecar): refused: --no-such-sidecar-flag=1: "):
        if not any(want in line for line in refused):
            p.append("not listed: %s" % want)
    if len(refused) != 5:
        p.append("%d refused, want 5 (-c 500 is good): %s" % (len(refused), refused))
    return p + ([out[-2000:]] if p else [])


TESTS = [test_command_lines_pass_the_flag_checks,
         test_flag_check_modes_reject_a_bad_flag,
         test_containers_agree_with_each_other,
         test_upstream_addon_passes_the_preflight,
         test_common_customizations_pass_the_preflight,
         test_preflight_lists_every_refused_argument]


if __name__ == "__main__":
    sys.exit(manifests.main(TESTS))
