#!/usr/bin/python3
"""manifests/monitoring/: the alert rules and the dashboard, checked with Prometheus's own
tool and against a running pod.

- `promtool check rules` on the PrometheusRule's spec, and `promtool test rules` on
  monitoring_rule_cases.yaml: every alert fires on the series that mean trouble, after its
  `for:`, and not on healthy ones (the unit tests cover every alert of the file);
- every alert has `for:`, a severity and summary, description and runbook annotations;
  group `kube-dns` uses no kdns_* name, group `kdns` only alerts on kdns_* names;
- the dashboard parses, has unique panel ids, and is what the monitoring kustomization
  ships;
- a running pod, started as `make run` starts it but on free loopback ports: kubedns
  following the fake API server (test/fake_apiserver; its first EndpointSlice LIST is
  refused with 403, so kubedns falls back to Endpoints as on a cluster without that RBAC
  rule), the nanny supervising frontend-cache with kube-dns's arguments, the sidecar
  probing both with the probe labels of manifests/deployment.yaml. Its three /metrics
  pass `promtool check metrics` (nothing but kube-dns's legacy names flagged); every
  metric name an alert or a dashboard panel uses is served; the names of group
  `kube-dns` are served by kubedns's and the sidecar's ports alone (what a plain image
  swap keeps); process_* and kdns_build_info are on every port; the client latency
  histogram counts a cache miss as `upstream` and the next ask as `cache`;
- `mk/run.sh` itself (what `make run` starts: the demo cluster from an objects file, on
  its fixed ports), run as root in a network namespace of its own: its three metrics
  ports serve every name the alerts and the dashboard use, but the `kdns_kubedns_api_*`
  names, which only the API source has (the pod above covers those).

promtool comes from Debian's `prometheus` package (`make deps`). Closes with
`N passed, M failed`; KDNS_KEEP_TMP=1 keeps the work directory (every log) after a failure.
"""
import json
import os
import re
import shutil
import subprocess
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import kustomize  # noqa: E402
import manifests  # noqa: E402
import pod  # noqa: E402
import servers  # noqa: E402

ROOT = harness.ROOT
MONITORING = os.path.join(manifests.MANIFESTS, "monitoring")
RULES = os.path.join(MONITORING, "prometheusrule.yaml")
DASHBOARD = os.path.join(MONITORING, "kdns-dashboard.json")
RULE_TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                          "monitoring_rule_cases.yaml")
SWAP_GROUP = "kube-dns"  # names kube-dns had, on the ports a plain image swap keeps
KDNS_GROUP = "kdns"
# The node caches' (manifests/components/node-local): served by a node cache, not by the
# pod below; node_local_test.py checks them on one.
NODE_LOCAL_GROUP = "kdns-node-local"
NODE_LOCAL_PREFIX = "kdns_nodelocal_"  # the dashboard's node-cache panels, likewise
# Names kube-dns chose that Prometheus's conventions (and so `promtool check metrics`)
# frown on: counters without _total, a histogram in ms. Kept for kube-dns's dashboards.
LEGACY_PREFIXES = ("kubedns_dnsmasq_", "kubedns_probe_")

PROMQL_WORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left",
                "group_right", "bool", "offset", "inf", "nan"}


def promtool():
    path = shutil.which("promtool")
    if path is None:
        raise AssertionError("promtool is not installed (Debian's prometheus package: "
                             "make deps)")
    return path


def metric_names(expr):
    """The metric names a PromQL expression reads (functions, keywords, label matchers,
    grouping lists, ranges, strings and Grafana's $variables left out)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', '""', expr)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    text = re.sub(r"\$\w+", " ", text)
    names = set()
    for m in re.finditer(r"(?<![\w.])([A-Za-z_:][A-Za-z0-9_:]*)\b(\s*\()?", text):
        if m.group(2) or m.group(1).lower() in PROMQL_WORDS:
            continue
        names.add(m.group(1))
    return names


def load_rules():
    with open(RULES) as f:
        return yaml.safe_load(f)


def rule_groups():
    return {g["name"]: g["rules"] for g in load_rules()["spec"]["groups"]}


def dashboard_exprs():
    with open(DASHBOARD) as f:
        dashboard = json.load(f)
    out = []
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            out.append((panel["title"], target["expr"]))
    return out


def run(argv, stdin=None):
    result = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=120)
    return result.returncode, result.stdout + result.stderr


# ---------------------------------------------------------------------------------------
# The files.

def test_promtool_checks_the_rules(env):
    path = os.path.join(env.workdir, "kdns.rules.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(load_rules()["spec"], f)
    code, out = run([promtool(), "check", "rules", path])
    return [] if code == 0 else ["promtool check rules: " + out]


def test_promtool_unit_tests_fire_every_alert(env):
    problems = []
    tests_dir = os.path.join(env.workdir, "rule-tests")
    os.makedirs(tests_dir, exist_ok=True)
    spec = load_rules()["spec"]
    for group in spec["groups"]:
        for rule in group["rules"]:
            rule.pop("annotations", None)  # templates: checked by `check rules`
    with open(os.path.join(tests_dir, "kdns.rules.yaml"), "w") as f:
        yaml.safe_dump(spec, f)
    shutil.copy(RULE_TESTS, tests_dir)
    code, out = run([promtool(), "test", "rules",
                     os.path.join(tests_dir, os.path.basename(RULE_TESTS))])
    if code != 0:
        problems.append("promtool test rules: " + out)
    with open(RULE_TESTS) as f:
        tests = yaml.safe_load(f)["tests"]
    fired = {case["alertname"] for test in tests for case in test["alert_rule_test"]
             if case.get("exp_alerts")}
    quiet = {case["alertname"] for test in tests for case in test["alert_rule_test"]
             if not case.get("exp_alerts")}
    for group in load_rules()["spec"]["groups"]:
        for rule in group["rules"]:
            if rule["alert"] not in fired:
                problems.append("%s: no unit test sees it fire" % rule["alert"])
            if rule["alert"] not in quiet:
                problems.append("%s: no unit test sees it stay quiet" % rule["alert"])
    return problems


def test_every_alert_waits_and_says_what_to_do(env):
    problems = []
    names = []
    for group, rules in rule_groups().items():
        for rule in rules:
            name = rule.get("alert")
            names.append(name)
            if not name:
                problems.append("group %s: a rule that is not an alert" % group)
                continue
            if not re.fullmatch(r"\d+[smh]", str(rule.get("for", ""))):
                problems.append("%s: no `for:`" % name)
            if rule.get("labels", {}).get("severity") not in ("critical", "warning"):
                problems.append("%s: severity is not critical or warning" % name)
            annotations = rule.get("annotations", {})
            for key in ("summary", "description", "runbook"):
                if len(annotations.get(key, "")) < 20:
                    problems.append("%s: no %s annotation worth the name" % (name, key))
            uses = metric_names(rule["expr"])
            kdns = {n for n in uses if n.startswith("kdns_")}
            if group == SWAP_GROUP and kdns:
                problems.append("%s (group %s) uses %s, which kube-dns did not have"
                                % (name, group, sorted(kdns)))
            if group in (KDNS_GROUP, NODE_LOCAL_GROUP) and not kdns:
                problems.append("%s (group %s) uses no kdns_* name" % (name, group))
            if group == NODE_LOCAL_GROUP and not all(
                    n.startswith(("kdns_nodelocal_", "kdns_frontend_")) for n in kdns):
                problems.append("%s (group %s) uses %s, which a node cache does not serve"
                                % (name, group, sorted(kdns)))
    if set(rule_groups()) != {SWAP_GROUP, KDNS_GROUP, NODE_LOCAL_GROUP}:
        problems.append("groups %s, want %s, %s and %s" % (
            sorted(rule_groups()), SWAP_GROUP, KDNS_GROUP, NODE_LOCAL_GROUP))
    for dup in sorted({n for n in names if names.count(n) > 1}):
        problems.append("alert %s defined twice" % dup)
    return problems


def test_dashboard_is_shipped_whole(env):
    problems = []
    with open(DASHBOARD) as f:
        dashboard = json.load(f)
    ids = [p["id"] for p in dashboard["panels"]]
    if len(ids) != len(set(ids)):
        problems.append("panel ids repeat: %s" % ids)
    if not dashboard.get("uid"):
        problems.append("the dashboard has no uid (imports would duplicate it)")
    if not dashboard_exprs():
        problems.append("the dashboard queries nothing")
    kubectl = shutil.which("kustomize") or shutil.which("kubectl")
    if kubectl is None:
        return problems  # the files themselves are checked above
    command = [kubectl, "build" if kubectl.endswith("kustomize") else "kustomize", MONITORING]
    code, out = run(command)
    if code != 0:
        return problems + ["`%s` failed: %s" % (" ".join(command), out)]
    docs = [d for d in yaml.safe_load_all(out) if d]
    kinds = sorted((d["kind"], d["metadata"]["name"]) for d in docs)
    if kinds != [("ConfigMap", "kdns-dashboard"), ("PrometheusRule", "kdns")]:
        problems.append("manifests/monitoring renders %s" % kinds)
    for doc in docs:
        if doc["kind"] == "ConfigMap":
            if json.loads(doc["data"]["kdns-dashboard.json"]) != dashboard:
                problems.append("the dashboard ConfigMap differs from kdns-dashboard.json")
            if doc["metadata"].get("labels", {}).get("grafana_dashboard") != "1":
                problems.append("the dashboard ConfigMap lacks the grafana_dashboard label")
    return problems


# ---------------------------------------------------------------------------------------
# The running pod.

class Pod(pod.Pod):
    """kubedns on the fake API server, the nanny with frontend-cache, the sidecar with the
    manifest's probes."""

    def __init__(self, workdir):
        self.fake = servers.FakeApiserver(
            os.path.join(workdir, "fake"),
            "--objects", os.path.join(ROOT, "test", "conformance", "objects.json"),
            "--bookmark-interval", "0.5")
        # An RBAC without the EndpointSlice rule: kubedns falls back to v1 Endpoints.
        try:
            self.fake.control("/control/fault/http", {
                "status": 403, "count": 1, "verb": "list",
                "path_prefix": "/apis/discovery.k8s.io/v1/endpointslices"})
            super().__init__(workdir, ["--kubecfg-file=" + self.fake.info["kubeconfig"],
                                       "--api-backoff-max=1s"],
                             nanny_flags=["-restartDnsmasq=true"], probes=manifest_probes)
        except Exception:
            self.fake.stop()
            raise

    def texts(self):
        """{port name: /metrics text} of the three metrics ports."""
        out = {}
        for what, port in (("kubedns", self.kubedns.metrics_port),
                           ("frontend-cache", self.nanny.metrics_port),
                           ("sidecar", self.sidecar_port)):
            status, _, body = harness.http_get(port, "/metrics")
            if status != 200:
                raise RuntimeError("%s /metrics: %s %s" % (what, status, body[:200]))
            out[what] = body
        return out

    def stop(self):
        super().stop()
        self.fake.stop()


def manifest_probes(running):
    """The sidecar's --probe flags of manifests/deployment.yaml, aimed at this pod's ports
    (10053: kubedns, 53: the cache), as pod.Pod's probes."""
    rendered = manifests.Rendered(*kustomize.render(manifests.MANIFESTS))
    container = rendered.containers_running("sidecar")[0]
    ports = {"10053": running.kubedns.port, "53": running.nanny.port}
    probes = []
    for arg in rendered.argv(container):
        m = re.match(r"--?probe=([^,]+),([^,]+):(\d+),([^,]+),(\d+),(\w+)$", arg)
        if m:
            label, _, port, name, _, qtype = m.groups()
            probes.append((label, ports[port], name, qtype))
    if not probes:
        raise RuntimeError("manifests/deployment.yaml's sidecar has no --probe")
    return probes


def names_in(text):
    return {re.split(r"[{ ]", line, 1)[0] for line in text.splitlines()
            if line and not line.startswith("#")}


def family_names(names):
    """Sample names with their family names (x_bucket, x_sum, x_count -> x) too."""
    return names | {re.sub(r"_(bucket|sum|count)$", "", n) for n in names}


def test_scrapes_pass_promtool_check_metrics(pod):
    problems = []
    for what, text in pod.texts().items():
        code, out = run([promtool(), "check", "metrics"], stdin=text)
        flagged = [line for line in out.splitlines() if line.strip()]
        unexpected = [line for line in flagged
                      if not line.split()[0].startswith(LEGACY_PREFIXES)]
        if unexpected or (code != 0 and not flagged):
            problems.append("%s: promtool check metrics: %s" % (what, "\n".join(
                unexpected or [out])))
    return problems


def test_every_alert_metric_is_served(pod):
    problems = []
    texts = pod.texts()
    everything = family_names(set().union(*(names_in(t) for t in texts.values())))
    swap_ports = family_names(names_in(texts["kubedns"]) | names_in(texts["sidecar"]))
    for group, rules in rule_groups().items():
        if group == NODE_LOCAL_GROUP:
            continue
        for rule in rules:
            for name in sorted(metric_names(rule["expr"])):
                if name not in everything:
                    problems.append("%s uses %s, which no port of the pod serves"
                                    % (rule["alert"], name))
                elif group == SWAP_GROUP and name not in swap_ports:
                    problems.append("%s (group %s) uses %s, which only frontend-cache's "
                                    "--prometheus-port serves: gone after a plain swap"
                                    % (rule["alert"], group, name))
    return problems


def test_every_dashboard_metric_is_served(pod):
    problems = []
    everything = family_names(set().union(*(names_in(t) for t in pod.texts().values())))
    for title, expr in dashboard_exprs():
        for name in sorted(metric_names(expr)):
            if name not in everything and not name.startswith(NODE_LOCAL_PREFIX):
                problems.append("panel %r uses %s, which no port of the pod serves"
                                % (title, name))
    return problems


def test_process_metrics_and_build_info_on_every_port(pod):
    problems = []
    # Every program of one build reports the same version and commit (mk/version.sh).
    build = 'version="%s",revision="%s"' % harness.program_version("kubedns")
    for what, text in pod.texts().items():
        samples = harness.parse_metrics(text)
        for name in ("process_cpu_seconds_total", "process_resident_memory_bytes",
                     "process_open_fds", "process_max_fds", "process_start_time_seconds"):
            if samples.get(name, 0) <= 0:
                problems.append("%s: %s is %s" % (what, name, samples.get(name)))
        info = 'kdns_build_info{program="%s",%s}' % (what, build)
        if samples.get(info) != 1:
            problems.append("%s: no %s 1" % (what, info))
        if what != "frontend-cache":
            continue
        # The nanny's own process, merged into frontend-cache's families with its label
        # (promtool, above, checks that the merge is valid text).
        for name in ("process_cpu_seconds_total", "process_resident_memory_bytes",
                     "process_open_fds", "process_start_time_seconds"):
            series = '%s{program="nanny"}' % name
            if samples.get(series, 0) <= 0:
                problems.append("frontend-cache: the nanny's %s is %s" % (series,
                                                                        samples.get(series)))
        info = 'kdns_build_info{program="nanny",%s}' % build
        if samples.get(info) != 1:
            problems.append("frontend-cache: no %s 1" % info)
    return problems


def test_client_latency_counts_each_answer_by_source(pod):
    def count(source):
        return harness.metric_sum(pod.nanny.metrics(),
                                  'kdns_frontend_answer_duration_seconds_count{source="%s"}'
                                  % source)
    before = {s: count(s) for s in ("upstream", "cache")}
    name = "kubernetes.default.svc.cluster.local"
    first = harness.dig(pod.nanny.port, name, "A")
    second = harness.dig(pod.nanny.port, name, "A")
    problems = []
    if first.status != "NOERROR" or second.status != "NOERROR":
        problems.append("%s: %s then %s" % (name, first.status, second.status))
    # The sidecar probes through the cache meanwhile: at least ours are counted.
    if count("upstream") < before["upstream"] + 1 and count("cache") < before["cache"] + 2:
        problems.append("answers not counted: upstream %s -> %s, cache %s -> %s" % (
            before["upstream"], count("upstream"), before["cache"], count("cache")))
    if count("cache") < before["cache"] + 1:
        problems.append("the second ask was not counted as a cache answer")
    return problems


def test_make_run_serves_what_the_alerts_use(env):
    if os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("nsenter") is None:
        raise harness.Skip("needs root, unshare and nsenter (a network namespace of its own)")
    for program in ("kubedns", "nanny", "frontend-cache", "sidecar"):
        if not os.access(os.path.join(ROOT, "build", "bin", program), os.X_OK):
            raise harness.Skip("mk/run.sh runs build/bin, which has no " + program)
    log_path = os.path.join(env.workdir, "make-run.log")
    # Fixed ports are fine in a network namespace nothing else uses.
    script = "ip link set lo up && exec " + os.path.join(ROOT, "mk", "run.sh")
    run_sh = harness.Process(["unshare", "--net", "sh", "-c", script], log_path)

    def inside(*argv):
        result = subprocess.run(["nsenter", "--net=/proc/%d/ns/net" % run_sh.pid] + list(argv),
                                capture_output=True, text=True, timeout=30)
        return result.returncode, result.stdout

    try:
        if not harness.wait_until(lambda: not run_sh.alive() or
                                  "The pod is serving" in run_sh.log(), 120):
            return ["mk/run.sh did not start: " + run_sh.log()[-1500:]]
        if not run_sh.alive():
            return ["mk/run.sh exited: " + run_sh.log()[-1500:]]
        texts = {}
        for what, port in (("kubedns", 10055), ("frontend-cache", 10056), ("sidecar", 10054)):
            code, text = inside("curl", "-fsS", "http://127.0.0.1:%d/metrics" % port)
            if code != 0:
                return ["mk/run.sh's %s metrics (port %d) do not answer" % (what, port)]
            texts[what] = text
    finally:
        run_sh.stop()
    problems = []
    everything = family_names(set().union(*(names_in(t) for t in texts.values())))
    used = {(rule["alert"], name) for group, rules in rule_groups().items() for rule in rules
            if group != NODE_LOCAL_GROUP for name in metric_names(rule["expr"])}
    used |= {("panel " + title, name) for title, expr in dashboard_exprs()
             for name in metric_names(expr) if not name.startswith(NODE_LOCAL_PREFIX)}
    for user, name in sorted(used):
        if name not in everything and not name.startswith("kdns_kubedns_api_"):
            problems.append("%s uses %s, which make run's pod does not serve" % (user, name))
    return problems


FILE_TESTS = [test_promtool_checks_the_rules,
              test_promtool_unit_tests_fire_every_alert,
              test_every_alert_waits_and_says_what_to_do,
              test_dashboard_is_shipped_whole,
              test_make_run_serves_what_the_alerts_use]
POD_TESTS = [test_scrapes_pass_promtool_check_metrics,
             test_every_alert_metric_is_served,
             test_every_dashboard_metric_is_served,
             test_process_metrics_and_build_info_on_every_port,
             test_client_latency_counts_each_answer_by_source]


class FileEnv:
    def __init__(self, workdir):
        self.workdir = workdir


def run_phases(env, checks):
    """The rule files' tests, then the metrics of a running pod."""
    checks.run(FILE_TESTS, FileEnv(env["workdir"]))
    pod = Pod(env["workdir"])
    env["owned"].append(pod)
    checks.run(POD_TESTS, pod)


def main():
    return harness.main("kdns-monitoring-", run_phases)


if __name__ == "__main__":
    sys.exit(main())
