#!/usr/bin/python3
"""--metrics-compat=coredns (issue 35): CoreDNS's dashboards and alerts read kdns.

frontend-cache runs with the flag, routing to three fake upstreams: one that answers (and
says NXDOMAIN for nx.test), one that answers SERVFAIL (bad.test), one that never answers
(silent.test). Clients send a known mix of queries; /metrics is scraped before and after.
Then:

  - the coredns_* families agree with our own kdns_* counters (requests, responses by
    rcode, cache hits and misses, per-upstream requests, responses and timeouts);
  - the coredns-mixin's alerts (CoreDNSDown, CoreDNSLatencyHigh, CoreDNSErrorsHigh,
    CoreDNSForwardLatencyHigh, CoreDNSForwardErrorsHigh, CoreDNSForwardHealthcheckFailureCount,
    CoreDNSForwardHealthcheckBrokenCount, as kube-prometheus-stack ships them with
    job="coredns"), and the CoreDNS dashboard's queries, are evaluated by
    `promtool test rules` over the scraped samples, replayed as a steady load (the scraped
    increase once a minute for 20 minutes): the error alerts fire for what failed (the
    SERVFAIL upstream by its `to`, the silent one's health checks), the latency alerts stay
    silent, and the dashboard's request, cache and upstream rates are what was sent;
  - the same rules over the same scrape without the coredns_* families fail, so the check
    can fail (and would, were the names or labels wrong);
  - `promtool check metrics` finds nothing to say of the coredns_* families;
  - kubedns with the flag exports its own coredns_dns_* families, equal to its counters;
  - without the flag neither program exports any coredns_* name.

promtool comes from Debian's prometheus package (make deps). Closes with `N passed, M failed`.
"""
import os
import re
import subprocess
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_upstream as fu  # noqa: E402
import harness  # noqa: E402
import monitoring_test  # noqa: E402
import servers  # noqa: E402

ROOT = harness.ROOT
JOB = "coredns"  # kube-prometheus-stack's jobLabel for its CoreDNS ServiceMonitor
SELECTOR = 'job="%s"' % JOB
MINUTES = 20  # replayed load: one scrape's increase per minute

# The coredns-mixin's alerts (github.com/povilasv/coredns-mixin, alerts/coredns.libsonnet
# and alerts/forward.libsonnet), with kube-prometheus-stack's selector.
MIXIN_ALERTS = """
groups:
  - name: coredns
    rules:
      - alert: CoreDNSDown
        for: 15m
        expr: absent(up{%(s)s} == 1)
      - alert: CoreDNSLatencyHigh
        for: 10m
        expr: histogram_quantile(0.99, sum(rate(coredns_dns_request_duration_seconds_bucket{%(s)s}[5m])) without (instance,pod)) > 4
      - alert: CoreDNSErrorsHigh
        for: 10m
        expr: |
          sum without (pod, instance, server, zone, view, rcode, plugin) (rate(coredns_dns_responses_total{%(s)s,rcode="SERVFAIL"}[5m]))
            /
          sum without (pod, instance, server, zone, view, rcode, plugin) (rate(coredns_dns_responses_total{%(s)s}[5m])) > 0.03
  - name: coredns_forward
    rules:
      - alert: CoreDNSForwardLatencyHigh
        for: 10m
        expr: histogram_quantile(0.99, sum(rate(coredns_forward_request_duration_seconds_bucket{%(s)s}[5m])) without (pod, instance, rcode)) > 4
      - alert: CoreDNSForwardErrorsHigh
        for: 10m
        expr: |
          sum without (pod, instance, rcode) (rate(coredns_forward_responses_total{%(s)s,rcode="SERVFAIL"}[5m]))
            /
          sum without (pod, instance, rcode) (rate(coredns_forward_responses_total{%(s)s}[5m])) > 0.03
      - alert: CoreDNSForwardHealthcheckFailureCount
        for: 10m
        expr: sum without (pod, instance) (rate(coredns_forward_healthcheck_failures_total{%(s)s}[5m])) > 0
      - alert: CoreDNSForwardHealthcheckBrokenCount
        for: 10m
        expr: sum without (pod, instance) (rate(coredns_forward_healthcheck_broken_total{%(s)s}[5m])) > 0
""" % {"s": SELECTOR}

# Queries of CoreDNS's Grafana dashboard (its panels' expressions, $instance left out), as
# recording rules so promtool can compare them: each is checked against what was sent
# (per minute, rounded: promtool compares floats exactly).
DASHBOARD_RULES = """
groups:
  - name: coredns-dashboard
    rules:
      - record: dashboard:requests_per_minute
        expr: round(sum(rate(coredns_dns_requests_total[5m])) * 60)
      - record: dashboard:requests_by_type_per_minute
        expr: round(sum(rate(coredns_dns_requests_total[5m])) by (type) * 60)
      - record: dashboard:responses_by_rcode_per_minute
        expr: round(sum(rate(coredns_dns_responses_total[5m])) by (rcode) * 60)
      - record: dashboard:cache_hits_per_minute
        expr: round(sum(rate(coredns_cache_hits_total[5m])) by (type) * 60)
      - record: dashboard:cache_misses_per_minute
        expr: round(sum(rate(coredns_cache_misses_total[5m])) * 60)
      - record: dashboard:forward_requests_per_minute
        expr: round(sum(rate(coredns_forward_requests_total[5m])) by (to) * 60)
"""

def with_labels(series, extra):
    """`series` with `extra` (a 'k="v",...' string) added to its labels."""
    name, _, labels = series.partition("{")
    labels = labels.rstrip("}")
    return "%s{%s}" % (name, ",".join(x for x in (labels, extra) if x))


def family_sum(scrape, name, **labels):
    """The sum of `name`'s samples whose labels include `labels`."""
    total = 0.0
    for series, value in scrape.items():
        if series.split("{")[0] != name:
            continue
        if all('%s="%s"' % kv in series for kv in labels.items()):
            total += value
    return total


def input_series(before, after, keep=lambda name: True):
    """promtool input series: each sample steady at its scraped increase per minute."""
    out = [{"series": 'up{%s,instance="kdns-0"}' % SELECTOR,
            "values": "1x%d" % MINUTES}]
    for series, value in sorted(after.items()):
        if not keep(series.split("{")[0]):
            continue
        start = before.get(series, 0.0)
        step = value - start
        if step < 0 or not series.split("{")[0].startswith(("coredns_", "kdns_")):
            continue
        out.append({"series": with_labels(series, '%s,instance="kdns-0"' % SELECTOR),
                    "values": "%s+%sx%d" % (repr(start), repr(step), MINUTES)})
    return out


def run_promtool_tests(workdir, name, rule_texts, tests):
    paths = []
    for i, text in enumerate(rule_texts):
        path = os.path.join(workdir, "%s-rules-%d.yaml" % (name, i))
        with open(path, "w") as f:
            f.write(text)
        paths.append(os.path.basename(path))
    test_path = os.path.join(workdir, name + "-tests.yaml")
    with open(test_path, "w") as f:
        yaml.safe_dump({"rule_files": paths, "evaluation_interval": "1m", "tests": tests}, f,
                       sort_keys=False)
    out = subprocess.run([monitoring_test.promtool(), "test", "rules", test_path],
                         capture_output=True, text=True, timeout=120, cwd=workdir)
    return out.returncode, out.stdout + out.stderr


def setup(workdir, owned):
    good = fu.FakeUpstream(answer_ip="192.0.2.10", name="good")
    owned.append(good)
    good.set_zone("nx.test", "nxdomain")
    bad = fu.FakeUpstream(name="bad", default="servfail")
    owned.append(bad)
    silent = fu.FakeUpstream(name="silent", default="silent")
    owned.append(silent)
    fe = servers.FrontendCache(
        workdir, "fe", "--metrics-compat=coredns", "--server=" + good.address,
        "--server=/bad.test/" + bad.address, "--server=/silent.test/" + silent.address)
    owned.append(fe)
    before = fe.metrics()
    sent = {"noerror": 0, "nxdomain": 0, "servfail": 0}
    # 6 names, each asked 25 times: 6 misses, 144 hits; so the one query that waits for the
    # silent upstream's timeout is under 1 % of them, and the p99 latency stays low.
    for i in range(6):
        for _ in range(25):
            harness.dig(fe.port, "host%d.good.test" % i, "A")
            sent["noerror"] += 1
    for i in range(4):
        harness.dig(fe.port, "n%d.nx.test" % i, "AAAA")
        sent["nxdomain"] += 1
    for i in range(10):
        harness.dig(fe.port, "b%d.bad.test" % i, "A")
        sent["servfail"] += 1
    harness.dig(fe.port, "s.silent.test", "A", timeout=10)
    after = fe.metrics()
    return {"fe": fe, "good": good, "bad": bad, "silent": silent, "before": before,
            "after": after, "sent": sent}


def delta(env, name, **labels):
    return family_sum(env["after"], name, **labels) - family_sum(env["before"], name, **labels)


def to_label(fake):
    return "127.0.0.1:%d" % fake.port


def test_coredns_families_agree_with_ours(env):
    p = []

    def same(what, theirs, ours):
        if theirs != ours:
            p.append("%s: coredns_* says %s, ours %s" % (what, theirs, ours))

    same("requests", delta(env, "coredns_dns_requests_total"),
         delta(env, "kdns_frontend_queries_total"))
    for rcode in ("NOERROR", "NXDOMAIN", "SERVFAIL"):
        same("responses " + rcode, delta(env, "coredns_dns_responses_total", rcode=rcode),
             delta(env, "kdns_frontend_queries_total", rcode=rcode))
    same("AAAA requests", delta(env, "coredns_dns_requests_total", type="AAAA"),
         delta(env, "kdns_frontend_queries_total", type="AAAA"))
    same("cache hits", delta(env, "coredns_cache_hits_total"),
         delta(env, "kdns_frontend_cache_hits_total"))
    same("cache misses", delta(env, "coredns_cache_misses_total"),
         delta(env, "kdns_frontend_cache_misses_total"))
    same("request durations", delta(env, "coredns_dns_request_duration_seconds_count"),
         delta(env, "kdns_frontend_answer_duration_seconds_count"))
    for fake in (env["good"], env["bad"], env["silent"]):
        upstream = "127.0.0.1#%d" % fake.port
        same("forward requests to " + fake.label,
             delta(env, "coredns_forward_requests_total", to=to_label(fake)),
             delta(env, "kdns_frontend_upstream_queries_total", upstream=upstream))
        same("healthcheck failures of " + fake.label,
             delta(env, "coredns_forward_healthcheck_failures_total", to=to_label(fake)),
             delta(env, "kdns_frontend_upstream_timeouts_total", upstream=upstream))
    sent = env["sent"]
    if delta(env, "coredns_dns_responses_total", rcode="NXDOMAIN") != sent["nxdomain"]:
        p.append("NXDOMAIN responses: %s, sent %d" % (
            delta(env, "coredns_dns_responses_total", rcode="NXDOMAIN"), sent["nxdomain"]))
    bad_servfail = delta(env, "coredns_forward_responses_total", rcode="SERVFAIL",
                         to=to_label(env["bad"]))
    if bad_servfail < 1:
        p.append("no SERVFAIL response counted from the SERVFAIL upstream")
    if delta(env, "coredns_forward_responses_total", rcode="NOERROR",
             to=to_label(env["good"])) < 6:
        p.append("fewer than 6 NOERROR responses counted from the good upstream")
    if delta(env, "coredns_forward_healthcheck_failures_total", to=to_label(env["silent"])) < 1:
        p.append("the silent upstream's timeout is not a failed health check")
    if family_sum(env["after"], "coredns_panics_total") != 0:
        p.append("coredns_panics_total is not 0")
    return p


def alert_tests(env):
    """promtool test cases: the mixin's alerts at 15m of the replayed load."""
    ours = {"job": JOB}
    broken = delta(env, "coredns_forward_healthcheck_broken_total") > 0
    cases = [
        {"eval_time": "15m", "alertname": "CoreDNSDown", "exp_alerts": []},
        {"eval_time": "15m", "alertname": "CoreDNSLatencyHigh", "exp_alerts": []},
        {"eval_time": "15m", "alertname": "CoreDNSForwardLatencyHigh", "exp_alerts": []},
        # 10 of 165 answers SERVFAIL, and the silent one's: over 3 %.
        {"eval_time": "15m", "alertname": "CoreDNSErrorsHigh",
         "exp_alerts": [{"exp_labels": dict(ours)}]},
        # Only the SERVFAIL upstream: the good one's responses are all NOERROR or NXDOMAIN.
        {"eval_time": "15m", "alertname": "CoreDNSForwardErrorsHigh",
         "exp_alerts": [{"exp_labels": dict(ours, to=to_label(env["bad"]))}]},
        # Only the silent upstream failed its health checks (timed out).
        {"eval_time": "15m", "alertname": "CoreDNSForwardHealthcheckFailureCount",
         "exp_alerts": [{"exp_labels": dict(ours, to=to_label(env["silent"]))}]},
        {"eval_time": "15m", "alertname": "CoreDNSForwardHealthcheckBrokenCount",
         "exp_alerts": [{"exp_labels": dict(ours)}] if broken else []},
        # Before `for` has passed nothing fires.
        {"eval_time": "5m", "alertname": "CoreDNSErrorsHigh", "exp_alerts": []},
    ]
    return cases


def dashboard_samples(env):
    """What the dashboard's queries must show: the scraped increases per minute, from our
    own counters (an independent path)."""
    def per_minute(name, **labels):
        return delta(env, name, **labels)

    out = [{"expr": "dashboard:requests_per_minute",
            "exp_samples": [{"labels": "dashboard:requests_per_minute",
                             "value": per_minute("kdns_frontend_queries_total")}]},
           {"expr": "dashboard:cache_misses_per_minute",
            "exp_samples": [{"labels": "dashboard:cache_misses_per_minute",
                             "value": per_minute("kdns_frontend_cache_misses_total")}]},
           {"expr": "dashboard:cache_hits_per_minute",
            "exp_samples": [{"labels": 'dashboard:cache_hits_per_minute{type="success"}',
                             "value": per_minute("kdns_frontend_cache_hits_total")}]},
           {"expr": 'dashboard:requests_by_type_per_minute{type="AAAA"}',
            "exp_samples": [{"labels": 'dashboard:requests_by_type_per_minute{type="AAAA"}',
                             "value": per_minute("kdns_frontend_queries_total", type="AAAA")}]},
           {"expr": 'dashboard:responses_by_rcode_per_minute{rcode="NXDOMAIN"}',
            "exp_samples": [{"labels": 'dashboard:responses_by_rcode_per_minute{rcode="NXDOMAIN"}',
                             "value": per_minute("kdns_frontend_queries_total",
                                                 rcode="NXDOMAIN")}]}]
    for fake in (env["good"], env["bad"], env["silent"]):
        label = 'dashboard:forward_requests_per_minute{to="%s"}' % to_label(fake)
        out.append({"expr": label, "exp_samples": [{
            "labels": label,
            "value": per_minute("kdns_frontend_upstream_queries_total",
                                upstream="127.0.0.1#%d" % fake.port)}]})
    for case in out:
        case["eval_time"] = "15m"
    return out


def promtool_case(env, keep=lambda name: True):
    return {"interval": "1m",
            "input_series": input_series(env["before"], env["after"], keep),
            "alert_rule_test": alert_tests(env),
            "promql_expr_test": dashboard_samples(env)}


def test_mixin_alerts_and_dashboard_queries_read_kdns(env):
    code, out = run_promtool_tests(env["workdir"], "mixin", [MIXIN_ALERTS, DASHBOARD_RULES],
                                   [promtool_case(env)])
    return [] if code == 0 else ["promtool test rules:\n" + out[-4000:]]


def test_the_check_fails_without_the_coredns_families(env):
    code, out = run_promtool_tests(
        env["workdir"], "control", [MIXIN_ALERTS, DASHBOARD_RULES],
        [promtool_case(env, keep=lambda name: not name.startswith("coredns_"))])
    return ["promtool passes the mixin's cases without any coredns_* series: the check "
            "cannot fail"] if code == 0 else []


def test_coredns_families_pass_promtool_check_metrics(env):
    text = harness.http_get(env["fe"].metrics_port, "/metrics")[2]
    ours = "".join(line + "\n" for line in text.splitlines()
                   if line.startswith(("coredns_", "# HELP coredns_", "# TYPE coredns_")))
    if "coredns_dns_requests_total" not in ours:
        return ["no coredns_dns_requests_total in /metrics"]
    code, out = monitoring_test.run([monitoring_test.promtool(), "check", "metrics"], ours)
    return [] if code == 0 and not out.strip() else ["promtool check metrics: " + out]


def test_kubedns_exports_its_own_coredns_families(env):
    p = []
    objects = os.path.join(ROOT, "kubedns", "demo-cluster.json")
    kubedns = servers.Kubedns(env["workdir"], "kubedns-compat", "--objects-file=" + objects,
                              "--metrics-compat=coredns")
    env["owned"].append(kubedns)
    for name in ("kubernetes.default.svc.cluster.local", "nothere.default.svc.cluster.local"):
        harness.dig(kubedns.port, name, "A")
    scrape = kubedns.metrics()
    server = "dns://:%d" % kubedns.port
    for rcode in ("NOERROR", "NXDOMAIN"):
        theirs = family_sum(scrape, "coredns_dns_responses_total", rcode=rcode, server=server)
        ours = family_sum(scrape, "kdns_kubedns_queries_total", rcode=rcode)
        if theirs != ours or ours < 1:
            p.append("kubedns %s: coredns_dns_responses_total %s, ours %s" % (rcode, theirs,
                                                                             ours))
    if family_sum(scrape, "coredns_dns_request_duration_seconds_count") != \
            family_sum(scrape, "kdns_kubedns_query_duration_seconds_count"):
        p.append("kubedns: coredns_dns_request_duration_seconds_count differs from ours")
    if any(s.startswith("coredns_cache_") for s in scrape):
        p.append("kubedns exports coredns_cache_* but has no cache")
    return p


def test_without_the_flag_no_coredns_name(env):
    p = []
    fe = servers.FrontendCache(env["workdir"], "fe-plain", "--server=" + env["good"].address)
    env["owned"].append(fe)
    harness.dig(fe.port, "plain.good.test", "A")
    objects = os.path.join(ROOT, "kubedns", "demo-cluster.json")
    kubedns = servers.Kubedns(env["workdir"], "kubedns-plain", "--objects-file=" + objects)
    env["owned"].append(kubedns)
    for who, port in (("frontend-cache", fe.metrics_port), ("kubedns", kubedns.metrics_port)):
        text = harness.http_get(port, "/metrics")[2]
        names = sorted(n for n in re.findall(r"^# TYPE (\S+)", text, re.M)
                       if n.startswith("coredns_") or n.endswith("_upstream_replies_total"))
        if names:
            p.append("%s without --metrics-compat exports %s" % (who, names))
    return p


TESTS = [test_coredns_families_agree_with_ours,
         test_mixin_alerts_and_dashboard_queries_read_kdns,
         test_the_check_fails_without_the_coredns_families,
         test_coredns_families_pass_promtool_check_metrics,
         test_kubedns_exports_its_own_coredns_families,
         test_without_the_flag_no_coredns_name]


def main():
    return harness.main("kdns-coredns-metrics-", TESTS, setup=setup,
                        tools=[os.path.join(harness.BIN, "frontend-cache"),
                               os.path.join(harness.BIN, "kubedns")])


if __name__ == "__main__":
    sys.exit(main())
