#!/usr/bin/python3
"""tools/check_flags.py as an operator runs it from the kdns/tools image: alone (no source
tree, no binaries), with the flag table it embeds.

The embedded table equals what the binaries in $KDNS_BIN print with --flag-table (and a
stale copy is caught); the table alone refuses the arguments the binaries' own --check-flags
refuse in a Deployment that mixes good, ignored and refused arguments, but for the values
only a program can judge (a number out of its range); every
Go flag of kube-dns, dnsmasq-nanny and the sidecar (--profiling, --log-flush-frequency,
--log-async, klog's) and dnsmasq's --use-stale-cache pass both, each noted; $(VAR) in args
is expanded from env values, valueFrom ConfigMap keys in the input and the namespace, and a
valueFrom that cannot be known offline is named. Closes with `N passed, M failed`.
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

TOOL = os.path.join(harness.ROOT, "tools", "check_flags.py")
ADDON = os.path.join(harness.ROOT, "test", "fixtures", "kube-dns-addon.yaml")
GO_FLAGS = ["--profiling", "--log-flush-frequency=5s", "--log-async", "--skip_headers",
            "--log_file", "/var/log/x", "--add_dir_header=true", "--one_output"]


def run_tool(r, args, stdin=None, alone=True):
    """(exit status, output) of the tool; `alone`: a copy in an empty directory, run from
    there without $KDNS_BIN, as in the image."""
    path, env = TOOL, dict(os.environ)
    env.pop("KDNS_BIN", None)
    if alone:
        path = os.path.join(r["alone"], "check_flags")
    result = subprocess.run([harness.PYTHON, path] + args, input=stdin, capture_output=True,
                            text=True, timeout=120, env=env, cwd=r["alone"] if alone else None)
    return result.returncode, result.stdout + result.stderr


def addon(extra_args=None, extra_env=None):
    """The upstream addon's documents, with arguments and env appended per container."""
    with open(ADDON) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    for container in docs[0]["spec"]["template"]["spec"]["containers"]:
        container["args"] = container["args"] + (extra_args or {}).get(container["name"], [])
        container["env"] = container.get("env", []) + (extra_env or {}).get(container["name"], [])
    return docs


def refused_lines(out):
    """{(container, argument)} of the refused lines (the reasons' wording differs: the
    binaries prefix theirs with the program's name)."""
    out_set = set()
    for line in out.splitlines():
        if ": refused: " in line:
            where, rest = line.split(": refused: ", 1)
            argument = rest.split(": ", 1)[0] if not rest.startswith("(to ") else \
                rest.split(": ", 2)[0]
            out_set.add((where, argument))
    return out_set


def test_embedded_table_is_the_binaries(r):
    code, out = run_tool(r, ["--verify-table", harness.BIN], alone=False)
    if code != 0:
        return ["the embedded flag table is stale: %s" % out]
    stale = os.path.join(r["workdir"], "stale_check_flags.py")
    with open(TOOL) as f:
        text = f.read()
    with open(stale, "w") as f:  # one flag dropped from the sidecar's table
        f.write(text.replace('"flag\\tprometheus_path\\tstring\\n"\n', "", 1))
    result = subprocess.run([harness.PYTHON, stale, "--verify-table", harness.BIN],
                            capture_output=True, text=True, timeout=120)
    if result.returncode != 1 or "of sidecar differs" not in result.stdout:
        return ["a stale table is not caught: exit %d: %s" % (result.returncode, result.stdout)]
    return []


def test_the_addon_passes_without_binaries(r):
    with open(ADDON) as f:
        code, out = run_tool(r, ["-"], stdin=f.read())
    if code != 0 or "3 container(s) checked, 0 argument(s) refused" not in out:
        return ["the upstream addon, from stdin, alone: exit %d: %s" % (code, out)]
    return []


def test_table_and_binaries_refuse_the_same_arguments(r):
    docs = addon({
        "dnsmasq": ["--cname=a.example.com,b.example.com", "--dhcp-range", "10.0.0.2,10.0.0.9",
                    "-c", "500", "-c", "lots", "--no-such-dnsmasq-option", "--log-queries=extra",
                    "-C", "/etc/dnsmasq.conf", "--no-negcache=1", "--port"],
        "kubedns": ["--federations=myfed=example.com", "--dns-port=53x", "--ttl", "30",
                    "--autopath=maybe", "--noautopath", "stray", "--log-queries=extra"],
        "sidecar": ["--no-such-sidecar-flag=1", "--dnsmasq-port", "-1",
                    "--prometheus-port=ten"],
    })
    path = os.path.join(r["workdir"], "mixed.yaml")
    with open(path, "w") as f:
        yaml.safe_dump_all(docs, f)
    shutil.copy(path, r["alone"])
    code_table, out_table = run_tool(r, ["mixed.yaml"])
    code_bin, out_bin = run_tool(r, ["--bin", harness.BIN, path], alone=False)
    table, binaries = refused_lines(out_table), refused_lines(out_bin)
    # What only the programs know: a value in the wrong range or form for its meaning.
    values_only = {("Deployment/kube-dns container dnsmasq (nanny)", "(to frontend-cache) -c lots"),
                   ("Deployment/kube-dns container sidecar (sidecar)", "--dnsmasq-port -1")}
    p = []
    if code_table != 1 or code_bin != 1:
        p.append("exit %d (table), %d (binaries); want 1" % (code_table, code_bin))
    if table != binaries - values_only or not values_only <= binaries:
        p.append("refused by the table only: %s; by the binaries only: %s"
                 % (sorted(table - binaries), sorted(binaries - table)))
    if len(table) != 12:
        p.append("%d refused by the table, want 12: %s" % (len(table), sorted(table)))
    return p + ([out_table, out_bin] if p else [])


def test_go_flags_and_use_stale_cache_pass_with_a_note(r):
    docs = addon({"kubedns": GO_FLAGS, "sidecar": GO_FLAGS})
    # The nanny's own arguments end at its "--": put the Go flags before it.
    nanny = docs[0]["spec"]["template"]["spec"]["containers"][1]
    own = nanny["args"][:nanny["args"].index("--")]
    child = nanny["args"][nanny["args"].index("--") + 1:]
    nanny["args"] = own + GO_FLAGS + ["--"] + child + ["--use-stale-cache", "--log-async"]
    text = yaml.safe_dump_all(docs)
    p = []
    for args in (["-"], ["--bin", harness.BIN, "-"]):
        code, out = run_tool(r, args, stdin=text, alone=args == ["-"])
        notes = [line for line in out.splitlines() if ": note: " in line and "is ignored" in line]
        if code != 0 or "0 argument(s) refused" not in out:
            p.append("%s: exit %d: %s" % (args, code, out))
        if len(notes) != 3 * 7 + 1:  # 7 Go flags in each of 3 containers, --log-async in the child
            p.append("%s: %d notes, want 22: %s" % (args, len(notes), notes))
    for program in ("kubedns", "sidecar", "nanny", "frontend-cache"):
        argv = [os.path.join(harness.BIN, program), "--check-flags"] + GO_FLAGS
        result = subprocess.run(argv, capture_output=True, text=True, timeout=30,
                                stdin=subprocess.DEVNULL)
        if result.returncode != 0:
            p.append("%s refuses kube-dns's Go flags: %s" % (program, result.stderr))
    return p


def test_env_and_value_from_are_expanded(r):
    docs = addon(
        {"kubedns": ["--healthz-port=$(HEALTH_PORT)", "--dns-bind-address=$(POD_IP)",
                     "--config-map-namespace=$(NS)", "--ttl=$(TTL)",
                     "--prometheus-port=$(FROM_ENV_FROM)", "--domain=$(DOMAIN)"]},
        {"kubedns": [
            {"name": "HEALTH_PORT", "valueFrom": {"configMapKeyRef": {"name": "dns-ports",
                                                                      "key": "health"}}},
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            {"name": "TTL", "valueFrom": {"configMapKeyRef": {"name": "dns-ports",
                                                              "key": "ttl"}}},
            {"name": "BASE", "value": "cluster"},
            {"name": "DOMAIN", "value": "$(BASE).local."}]})
    docs[0]["spec"]["template"]["spec"]["containers"][0]["envFrom"] = [
        {"configMapRef": {"name": "dns-ports"}}]
    docs.append({"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "dns-ports", "namespace": "kube-system"},
                 "data": {"health": "8081", "ttl": "thirty", "FROM_ENV_FROM": "10055"}})
    code, out = run_tool(r, ["-"], stdin=yaml.safe_dump_all(docs))
    p = []
    refused = [line for line in out.splitlines() if ": refused: " in line]
    if code != 1 or len(refused) != 1 or "--ttl=thirty: illegal value 'thirty'" not in out:
        p.append("want only --ttl=thirty (from the ConfigMap) refused: exit %d" % code)
    if "--dns-bind-address=$(POD_IP): $(POD_IP) from valueFrom fieldRef status.podIP" \
            not in out:
        p.append("the pod IP's valueFrom is not named as unknown offline")
    if out.count("not known offline") != 1:
        p.append("want one unknown (POD_IP): the ConfigMap keys, envFrom, the namespace and "
                 "env values are known")
    return p + ([out] if p else [])


def test_a_secret_value_from_is_named(r):
    docs = addon({"sidecar": ["--prometheus-addr=$(ADDR)"]},
                 {"sidecar": [{"name": "ADDR", "valueFrom": {"secretKeyRef": {
                     "name": "dns-secret", "key": "addr"}}}]})
    code, out = run_tool(r, ["-"], stdin=yaml.safe_dump_all(docs))
    if code != 0 or "valueFrom secretKeyRef dns-secret/addr (Secrets are not read)" not in out:
        return ["a Secret's value is not named as unknown offline: exit %d: %s" % (code, out)]
    return []


def test_nanny_check_flags_validates_an_existing_config_dir(r):
    """The nanny's --check-flags reads a -configDir that exists as a ConfigMap update is read
    (what tools/corefile2kdns prints is fed to it); the pod's mount path, absent here,
    is not its business."""
    config_dir = os.path.join(r["workdir"], "kube-dns")
    os.mkdir(config_dir)
    p = []
    for upstreams, want in (('["10.0.0.1", "tcp://10.0.0.2:5353"]', 0), ('["10.0.0.1:0"]', 2)):
        with open(os.path.join(config_dir, "upstreamNameservers"), "w") as f:
            f.write(upstreams)
        result = subprocess.run([os.path.join(harness.BIN, "nanny"), "--check-flags",
                                 "-configDir=" + config_dir], capture_output=True, text=True,
                                timeout=30, stdin=subprocess.DEVNULL)
        if result.returncode != want:
            p.append("upstreamNameservers %s: exit %d, want %d: %s" % (
                upstreams, result.returncode, want, result.stderr))
    if p == [] and "upstreamNameservers: invalid nameserver" not in result.stderr:
        p.append("the refusal does not name the key: %s" % result.stderr)
    return p


def test_the_tools_image_carries_both_tools_without_pyyaml_for_json(r):
    """images/Dockerfile's tools target installs both tools under their names, build.sh
    builds it and puts them in its context, the .dockerignore lets them in; and with JSON
    input they need nothing beyond Python's standard library (python3 -S: no PyYAML)."""
    root = harness.ROOT
    p = []
    with open(os.path.join(root, "images", "Dockerfile")) as f:
        dockerfile = f.read()
    for want in ("FROM runtime AS tools", "COPY tools/check_flags.py /usr/local/bin/check_flags",
                 "COPY tools/corefile2kdns /usr/local/bin/corefile2kdns", "python3-yaml"):
        if want not in dockerfile:
            p.append("images/Dockerfile lacks %r" % want)
    with open(os.path.join(root, "images", "build.sh")) as f:
        build = f.read()
    if "frontend-cache tools}" not in build or "tools/corefile2kdns" not in build:
        p.append("images/build.sh does not build the tools image with both tools")
    with open(os.path.join(root, "images", "Dockerfile.dockerignore")) as f:
        ignore = f.read().split()
    if "!tools/check_flags.py" not in ignore or "!tools/corefile2kdns" not in ignore:
        p.append("images/Dockerfile.dockerignore keeps the tools out")
    with open(ADDON) as f:
        deployment = json.dumps([d for d in yaml.safe_load_all(f) if d][0])
    result = subprocess.run([harness.PYTHON, "-S", os.path.join(r["alone"], "check_flags"), "-"],
                            input=deployment, capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        p.append("check_flags without site-packages: %s" % (result.stdout + result.stderr))
    result = subprocess.run(
        [harness.PYTHON, "-S", os.path.join(root, "tools", "corefile2kdns"), "-"],
        input=".:53 {\n forward . 10.0.0.1\n loop\n}\n", capture_output=True, text=True,
        timeout=60)
    if result.returncode != 0 or '["10.0.0.1"]' not in result.stdout:
        p.append("corefile2kdns without site-packages: %s" % (result.stdout + result.stderr))
    return p


def dnsmasq_options():
    """[(long name, short letter or None, "flag"|"value"|"optional")] of the real dnsmasq's
    --help (Debian's, the one the differential suite runs)."""
    result = subprocess.run(["dnsmasq", "--help"], capture_output=True, text=True, timeout=30)
    out = []
    for line in result.stdout.splitlines():
        m = re.match(r"^(?:-(\S), )?\s*--([A-Za-z0-9-]+)(\S*)", line.strip())
        if m:
            kind = "value" if m.group(3).startswith("=") else \
                "optional" if m.group(3).startswith("[") else "flag"
            out.append((m.group(2), m.group(1), kind))
    return out


def test_every_dnsmasq_option_is_known(r):
    """Each option of dnsmasq's --help is taken by frontend-cache, or refused with what to
    do instead; none is an unknown flag, for the binary or for the embedded table."""
    options = dnsmasq_options()
    p = [] if len(options) > 150 else ["dnsmasq --help lists only %d options" % len(options)]
    words = []
    for name, letter, kind in options:
        if name == "help":  # -w, --help: each program's own help
            continue
        words.append("--%s=1" % name if kind == "value" else "--%s" % name)
        if letter:
            words.append("-" + letter)
    unknown = ("unknown command line flag", "unknown argument")
    for word in words:
        result = subprocess.run([os.path.join(harness.BIN, "frontend-cache"), "--check-flags",
                                 word], capture_output=True, text=True, timeout=30,
                                stdin=subprocess.DEVNULL)
        if any(u in result.stderr for u in unknown):
            p.append("frontend-cache does not know dnsmasq's %s: %s" % (word, result.stderr))
    docs = addon({"dnsmasq": words})
    code, out = run_tool(r, ["-"], stdin=yaml.safe_dump_all(docs))
    for line in out.splitlines():
        if ": refused: " in line and any(u in line for u in unknown):
            p.append("the table does not know: %s" % line)
    return p


# The flags of kube-dns's Go programs, each with a value it takes, from their sources:
# kubernetes/dns cmd/kube-dns/app/options/options.go (kube-dns), cmd/sidecar/main.go,
# cmd/dnsmasq-nanny/main.go, cmd/node-cache/main.go (NodeLocal DNSCache, with CoreDNS's
# -conf, -pidfile, -quiet), klog's flags (k8s.io/klog/v2 InitFlags) and Kubernetes'
# logging and profiling flags (--log-flush-frequency, --profiling, --log-async).
KLOG = ["--add_dir_header", "--alsologtostderr", "--log_backtrace_at=main.go:1",
        "--log_dir=/tmp", "--log_file=/tmp/x.log", "--log_file_max_size=1800",
        "--logtostderr", "--one_output", "--skip_headers", "--skip_log_headers",
        "--stderrthreshold=2", "--v=2", "--vmodule=dns=3", "--log-flush-frequency=5s",
        "--profiling", "--log-async"]
GO_PROGRAM_FLAGS = {
    "kubedns": ["--domain=cluster.local.", "--kubecfg-file=/etc/kubeconfig",
                "--kube-master-url=http://127.0.0.1:8080", "--healthz-port=8081",
                "--dns-bind-address=0.0.0.0", "--dns-port=10053", "--federations=a=b.example",
                "--config-map-namespace=kube-system", "--config-map=kube-dns",
                "--initial-sync-timeout=60s", "--config-dir=/kube-dns-config",
                "--config-period=10s", "--nameservers=8.8.8.8:53"] + KLOG,
    "sidecar": ["--dnsmasq-addr=127.0.0.1", "--dnsmasq-port=53",
                "--dnsmasq-poll-interval-ms=5000",
                "--probe=kubedns,127.0.0.1:10053,kubernetes.default.svc.cluster.local,5,SRV",
                "--prometheus-addr=0.0.0.0", "--prometheus-port=10054",
                "--prometheus-path=/metrics", "--prometheus-namespace=kubedns"] + KLOG,
    "nanny": ["-dnsmasqExec=/usr/sbin/dnsmasq", "-restartDnsmasq=true",
              "-configDir=/etc/k8s/dns/dnsmasq-nanny", "-syncInterval=10s",
              "-kubednsServer=127.0.0.1:10053", "-logInterval=0s"] + KLOG,
    "node-cache": ["-localip=169.254.20.10,10.96.0.10", "-setupinterface=true",
                   "-interfacename=nodelocaldns", "-syncinterval=60s", "-initialdelay=10s",
                   "-metrics-listen-address=0.0.0.0:9253", "-setupiptables=true",
                   "-setupebtables=false", "-basecorefile=/etc/coredns/Corefile.base",
                   "-corefile=/etc/Corefile", "-kubednscm=/etc/kube-dns",
                   "-upstreamsvc=kube-dns-upstream", "-health-port=8080", "-skipteardown",
                   "-conf=/etc/Corefile", "-pidfile=/tmp/node-cache.pid", "-quiet"],
}


def test_every_go_program_flag_is_known(r):
    """Each flag of kube-dns, its sidecar, dnsmasq-nanny and node-cache is taken by the kdns
    program in its place, or refused with a reason (--federations); none is an unknown
    flag, for the binaries or for the embedded table."""
    unknown = ("unknown command line flag", "unknown argument")
    p = []
    for program, flags in GO_PROGRAM_FLAGS.items():
        binary = os.path.join(harness.BIN, "nanny" if program == "node-cache" else program)
        for flag in flags:
            result = subprocess.run([binary, "--check-flags", flag], capture_output=True,
                                    text=True, timeout=30, stdin=subprocess.DEVNULL)
            if any(u in result.stderr for u in unknown):
                p.append("%s does not know %s's %s: %s" % (
                    os.path.basename(binary), program, flag, result.stderr.strip()))
    docs = addon({"kubedns": GO_PROGRAM_FLAGS["kubedns"], "sidecar": GO_PROGRAM_FLAGS["sidecar"]})
    nanny = docs[0]["spec"]["template"]["spec"]["containers"][1]
    nanny["args"] = GO_PROGRAM_FLAGS["nanny"] + nanny["args"]
    docs.append({"kind": "DaemonSet", "metadata": {"name": "node-local-dns"},
                 "spec": {"template": {"spec": {"containers": [{
                     "name": "node-cache", "image": "registry.k8s.io/dns/k8s-dns-node-cache:1.26.4",
                     "args": GO_PROGRAM_FLAGS["node-cache"]}]}}}})
    code, out = run_tool(r, ["-"], stdin=yaml.safe_dump_all(docs))
    for line in out.splitlines():
        if ": refused: " in line and any(u in line for u in unknown):
            p.append("the table does not know: %s" % line)
    if "4 container(s) checked" not in out:
        p.append("want 4 containers checked: %s" % out[-500:])
    return p


def setup(workdir, owned):
    alone = os.path.join(workdir, "alone")
    os.mkdir(alone)
    shutil.copy(TOOL, os.path.join(alone, "check_flags"))
    return {"alone": alone}


TESTS = [test_embedded_table_is_the_binaries,
         test_the_addon_passes_without_binaries,
         test_table_and_binaries_refuse_the_same_arguments,
         test_go_flags_and_use_stale_cache_pass_with_a_note,
         test_env_and_value_from_are_expanded,
         test_a_secret_value_from_is_named,
         test_nanny_check_flags_validates_an_existing_config_dir,
         test_the_tools_image_carries_both_tools_without_pyyaml_for_json,
         test_every_dnsmasq_option_is_known,
         test_every_go_program_flag_is_known]

if __name__ == "__main__":
    sys.exit(harness.main("kdns-check-flags-", TESTS, setup=setup,
                          tools=[os.path.join(harness.BIN, p) for p in
                                 ("kubedns", "nanny", "frontend-cache", "sidecar")]))
