#!/usr/bin/python3
"""manifests/monitoring/: the alert rules and the dashboard, checked with Prometheus's own
tool and against a running pod.

- `promtool check rules` on the PrometheusRule's spec, and `promtool test rules` on
  monitoring_rule_cases.yaml: every alert fires on the series that mean trouble, after its
  `for:`, and not on healthy ones (the unit tests cover every alert of the file);
- every alert has `for:`, a severity and summary, description and runbook_url annotations;
  each runbook_url is docs/runbooks.md at the section named after the alert;
  group `kube-dns` uses no kdns_* name, group `kdns` only alerts on kdns_* names;
- the kdns-targets rules select the `job` and `container` labels that the shipped
  PodMonitors (jobLabel: the pods' k8s-app; each port's container) and the guide's scrape
  jobs (promtool-checked) give the targets;
- the dashboard parses, has unique panel ids, and is what the monitoring kustomization
  ships, with the grafana_dashboard label;
- a running pod, started as `make run` starts it but on free loopback ports: kubedns
  following the fake API server (test/fake_apiserver; its first EndpointSlice LIST is
  refused with 403, so kubedns falls back to Endpoints as on a cluster without that RBAC
  rule), the nanny supervising frontend-cache with kube-dns's arguments, the sidecar
  probing both with the probe labels of manifests/deployment.yaml. Its three /metrics
  pass `promtool check metrics` (nothing but kube-dns's legacy names flagged); every
  metric name an alert or a dashboard panel uses is served; the names of group
  `kube-dns` are served by kubedns's and the sidecar's ports alone (what a plain image
  swap keeps); process_* and kdns_build_info are on every port; the client latency
  histogram counts a cache miss as `upstream` and the next ask as `cache`; its kubedns
  series (the EndpointSlice LIST refused before any scrape), held for 30 minutes, fire
  KdnsKubernetesAPIForbidden;
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
RUNBOOKS = os.path.join(ROOT, "docs", "runbooks.md")
GUIDE = os.path.join(ROOT, "docs", "operators.md")
NODE_LOCAL_COMPONENT = os.path.join(manifests.MANIFESTS, "components", "node-local")
RULE_TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                          "monitoring_rule_cases.yaml")
SWAP_GROUP = "kube-dns"  # names kube-dns had, on the ports a plain image swap keeps
KDNS_GROUP = "kdns"
# The node caches' (manifests/components/node-local): served by a node cache, not by the
# pod below; node_local_test.py checks them on one.
NODE_LOCAL_GROUP = "kdns-node-local"
NODE_LOCAL_PREFIX = "kdns_nodelocal_"  # the dashboard's node-cache panels, likewise
# What Prometheus, cAdvisor and kube-state-metrics say of the pods: no pod serves these.
TARGETS_GROUP = "kdns-targets"
TARGETS_NAMES = {"up", "container_memory_working_set_bytes",
                 "kube_pod_container_resource_limits",
                 "kube_daemonset_status_desired_number_scheduled"}
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


def rule_tests_dir(workdir):
    """A directory holding the rules as the unit tests name them (kdns.rules.yaml: the
    PrometheusRule's spec, annotations left out: their templates are `check rules`'s)."""
    tests_dir = os.path.join(workdir, "rule-tests")
    os.makedirs(tests_dir, exist_ok=True)
    spec = load_rules()["spec"]
    for group in spec["groups"]:
        for rule in group["rules"]:
            rule.pop("annotations", None)
    with open(os.path.join(tests_dir, "kdns.rules.yaml"), "w") as f:
        yaml.safe_dump(spec, f)
    return tests_dir


def test_promtool_unit_tests_fire_every_alert(env):
    problems = []
    tests_dir = rule_tests_dir(env.workdir)
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
            for key in ("summary", "description", "runbook_url"):
                if len(annotations.get(key, "")) < 20:
                    problems.append("%s: no %s annotation worth the name" % (name, key))
            uses = metric_names(rule["expr"])
            kdns = {n for n in uses if n.startswith("kdns_")}
            if group == SWAP_GROUP and kdns:
                problems.append("%s (group %s) uses %s, which kube-dns did not have"
                                % (name, group, sorted(kdns)))
            if group in (KDNS_GROUP, NODE_LOCAL_GROUP) and not kdns:
                problems.append("%s (group %s) uses no kdns_* name" % (name, group))
            if group == TARGETS_GROUP and not uses <= TARGETS_NAMES:
                problems.append("%s (group %s) uses %s, not what Prometheus, cAdvisor or "
                                "kube-state-metrics serve" % (name, group,
                                                              sorted(uses - TARGETS_NAMES)))
            if group == NODE_LOCAL_GROUP and not all(
                    n.startswith(("kdns_nodelocal_", "kdns_frontend_")) for n in kdns):
                problems.append("%s (group %s) uses %s, which a node cache does not serve"
                                % (name, group, sorted(kdns)))
    want = {SWAP_GROUP, KDNS_GROUP, NODE_LOCAL_GROUP, TARGETS_GROUP}
    if set(rule_groups()) != want:
        problems.append("groups %s, want %s" % (sorted(rule_groups()), sorted(want)))
    for dup in sorted({n for n in names if names.count(n) > 1}):
        problems.append("alert %s defined twice" % dup)
    return problems


def github_anchor(heading):
    """The anchor GitHub gives a Markdown heading: lower case, punctuation dropped,
    spaces as dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_alert_has_a_runbook(env):
    """Each alert's runbook_url names docs/runbooks.md at the section titled with the
    alert's name, all under one prefix (what an operator mirroring the docs rewrites);
    each section there is an alert's, and the links between sections resolve."""
    problems = []
    with open(RUNBOOKS) as f:
        text = f.read()
    headings = re.findall(r"^## (.+)$", text, re.M)
    anchors = {github_anchor(h): h for h in headings}
    alerts = [rule["alert"] for rules in rule_groups().values() for rule in rules]
    prefixes = set()
    for rules in rule_groups().values():
        for rule in rules:
            name = rule["alert"]
            url = rule.get("annotations", {}).get("runbook_url", "")
            m = re.fullmatch(r"(https://\S+/docs/runbooks\.md)#([\w-]+)", url)
            if not m:
                problems.append("%s: runbook_url %r is not .../docs/runbooks.md#ANCHOR"
                                % (name, url))
                continue
            prefixes.add(m.group(1))
            if anchors.get(m.group(2)) != name:
                problems.append("%s: docs/runbooks.md has no section %r (anchor %s)"
                                % (name, name, m.group(2)))
    if len(prefixes) > 1:
        problems.append("runbook_url prefixes differ: %s" % sorted(prefixes))
    for heading in headings:
        if heading not in alerts:
            problems.append("docs/runbooks.md: section %r is no alert's" % heading)
    for target in re.findall(r"\]\(#([^)]+)\)", text):
        if target not in anchors:
            problems.append("docs/runbooks.md: link to #%s, which is no section" % target)
    return problems


def target_selectors():
    """{(job, container or None)} that the rules' up{...} selectors name."""
    out = set()
    for rule in rule_groups()[TARGETS_GROUP]:
        for matchers in re.findall(r"\bup\{([^}]*)\}", rule["expr"]):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', matchers))
            out.add((labels.get("job"), labels.get("container")))
    return out


def scraped_workloads():
    """{name: (pod template labels, {port name: container name})} of the kube-dns
    Deployment and, from the node-local component, the node-local-dns DaemonSet."""
    rendered = manifests.render(components=[NODE_LOCAL_COMPONENT])
    out = {}
    for kind, name in (("Deployment", "kube-dns"), ("DaemonSet", "node-local-dns")):
        template = rendered.one(kind, name)["spec"]["template"]
        ports = {port: container
                 for container, port, _, _ in manifests.declared_ports(template["spec"])}
        containers = [c["name"] for c in template["spec"]["containers"]]
        out[name] = (template["metadata"]["labels"], ports, containers)
    return out


def test_targets_are_selected_as_scraped(env):
    """The jobs and containers the kdns-targets rules select are what the shipped
    PodMonitors and the guide's scrape jobs give the targets: job from the pods' k8s-app
    label (PodMonitor jobLabel; the guide's job_name), each metrics port's container, and
    namespace, pod and container labels on every target."""
    problems = []
    selected = target_selectors()
    workloads = scraped_workloads()
    produced = set()
    monitors = [d for d in kustomize.load_docs(os.path.join(MONITORING, "podmonitor.yaml"))
                if d["kind"] == "PodMonitor"]
    release = load_rules()["metadata"]["labels"].get("release")
    for monitor in monitors:
        if monitor["metadata"].get("labels", {}).get("release") != release:
            problems.append("PodMonitor %s: label release is not the PrometheusRule's %r "
                            "(one Prometheus selects both)" % (monitor["metadata"]["name"],
                                                              release))
        spec = monitor["spec"]
        matched = [name for name, (labels, _, _) in workloads.items()
                   if manifests.labels_match(spec["selector"], labels)]
        if len(matched) != 1:
            problems.append("PodMonitor %s selects %s, want one workload"
                            % (monitor["metadata"]["name"], matched))
            continue
        labels, ports, containers = workloads[matched[0]]
        job = labels.get(spec.get("jobLabel"))
        for endpoint in spec["podMetricsEndpoints"]:
            if "port" not in endpoint:  # every container: the node cache declares no port
                produced |= {(job, None)} | {(job, c) for c in containers}
            elif endpoint["port"] not in ports:
                problems.append("PodMonitor %s: no container port named %s in %s"
                                % (monitor["metadata"]["name"], endpoint["port"], matched[0]))
            else:
                produced |= {(job, None), (job, ports[endpoint["port"]])}
    for job, container in sorted(selected, key=str):
        if (job, container) not in produced:
            problems.append("the rules select up{job=%r, container=%r}, which no PodMonitor "
                            "target carries" % (job, container))
    problems += guide_scrape_jobs_problems(env, {job for job, _ in selected}, workloads)
    return problems


def guide_scrape_jobs_problems(env, jobs, workloads):
    """docs/operators.md's scrape configuration (section "Scraping"): promtool accepts it,
    it has one job per job the rules select, keeping the pods whose k8s-app is that job,
    and each sets namespace, pod and container."""
    with open(GUIDE) as f:
        guide = f.read()
    section = guide.split("\n### Scraping\n", 1)[1].split("\n### ", 1)[0]
    blocks = [b for b in re.findall(r"```yaml\n(.*?)```", section, re.S)
              if "scrape_configs:" in b]
    if len(blocks) != 1:
        return ["docs/operators.md, Scraping: %d scrape configurations, want 1" % len(blocks)]
    problems = []
    # Debian builds Prometheus without Kubernetes discovery, and its promtool refuses
    # kubernetes_sd_configs: promtool checks the rest (the relabelling) with a static
    # target in its place.
    checked = yaml.safe_load(blocks[0])
    for config in checked["scrape_configs"]:
        config.pop("kubernetes_sd_configs", None)
        config["static_configs"] = [{"targets": ["127.0.0.1:9"]}]
    path = os.path.join(env.workdir, "guide-prometheus.yml")
    with open(path, "w") as f:
        yaml.safe_dump(checked, f)
    code, out = run([promtool(), "check", "config", path])
    if code != 0:
        problems.append("docs/operators.md's scrape configuration: promtool: " + out)
    configs = {c["job_name"]: c for c in yaml.safe_load(blocks[0])["scrape_configs"]}
    for job in sorted(jobs):
        config = configs.get(job)
        if config is None:
            problems.append("docs/operators.md's scrape configuration has no job %s" % job)
            continue
        selectors = [s for sd in config["kubernetes_sd_configs"] for s in sd.get("selectors", [])]
        if [s.get("label") for s in selectors] != ["k8s-app=" + job] or not any(
                labels.get("k8s-app") == job for labels, _, _ in workloads.values()):
            problems.append("scrape job %s does not keep the pods labelled k8s-app=%s" % (job, job))
        targets = {r.get("target_label") for r in config.get("relabel_configs", [])}
        for label in ("namespace", "pod", "container"):
            if label not in targets:
                problems.append("scrape job %s does not set %s" % (job, label))
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
    docs = manifests.render(MONITORING).docs
    kinds = sorted((d["kind"], d["metadata"]["name"]) for d in docs)
    if kinds != [("ConfigMap", "kdns-dashboard"), ("PodMonitor", "kdns"),
                 ("PodMonitor", "kdns-node-local"), ("PrometheusRule", "kdns")]:
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
    rendered = manifests.render()
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
        if group in (NODE_LOCAL_GROUP, TARGETS_GROUP):
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


def test_forbidden_from_the_start_is_seen(pod):
    """The pod's EndpointSlice LIST was refused (403) once, before anything scraped it, and
    kubedns went on with v1 Endpoints: its api series, held as they are for 30 minutes,
    fire KdnsKubernetesAPIForbidden for endpointslices, and KdnsKubednsNotReady stays
    quiet (kubedns is ready). An alert on the 403 counter's increase sees nothing here."""
    samples = harness.parse_metrics(pod.texts()["kubedns"])
    series = []
    for name, value in sorted(samples.items()):
        if not name.startswith(("kdns_kubedns_api_", "kdns_kubedns_ready")):
            continue
        labels = 'namespace="kube-system",pod="live"'
        if "{" in name:
            name = name.replace("{", "{%s," % labels, 1)
        else:
            name = "%s{%s}" % (name, labels)
        series.append({"series": name, "values": "%.6fx30" % value})
    expected = [{"exp_labels": {"severity": "warning", "namespace": "kube-system",
                                "pod": "live", "resource": "endpointslices"}}]
    cases = {"rule_files": ["kdns.rules.yaml"], "evaluation_interval": "1m",
             "tests": [{"interval": "1m", "input_series": series, "alert_rule_test": [
                 {"eval_time": "20m", "alertname": "KdnsKubernetesAPIForbidden",
                  "exp_alerts": expected},
                 {"eval_time": "20m", "alertname": "KdnsKubednsNotReady",
                  "exp_alerts": []}]}]}
    tests_dir = rule_tests_dir(pod.workdir)
    path = os.path.join(tests_dir, "live-forbidden.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(cases, f)
    code, out = run([promtool(), "test", "rules", path])
    return [] if code == 0 else ["the live pod's series: promtool test rules: " + out]


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
            if group not in (NODE_LOCAL_GROUP, TARGETS_GROUP)
            for name in metric_names(rule["expr"])}
    used |= {("panel " + title, name) for title, expr in dashboard_exprs()
             for name in metric_names(expr) if not name.startswith(NODE_LOCAL_PREFIX)}
    for user, name in sorted(used):
        if name not in everything and not name.startswith("kdns_kubedns_api_"):
            problems.append("%s uses %s, which make run's pod does not serve" % (user, name))
    return problems


FILE_TESTS = [test_promtool_checks_the_rules,
              test_promtool_unit_tests_fire_every_alert,
              test_every_alert_waits_and_says_what_to_do,
              test_every_alert_has_a_runbook,
              test_targets_are_selected_as_scraped,
              test_dashboard_is_shipped_whole,
              test_make_run_serves_what_the_alerts_use]
POD_TESTS = [test_scrapes_pass_promtool_check_metrics,
             test_every_alert_metric_is_served,
             test_every_dashboard_metric_is_served,
             test_process_metrics_and_build_info_on_every_port,
             test_client_latency_counts_each_answer_by_source,
             test_forbidden_from_the_start_is_seen]


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
