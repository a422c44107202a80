#!/usr/bin/python3
"""tools/corefile2kdns on the Corefiles the distributions ship (test/fixtures/corefiles/, each
written from its public source, named at its top): kubeadm, kops, kubespray, EKS, GKE (its
kube-dns ConfigMap and its NodeLocal DNSCache Corefile), AKS (coredns with coredns-custom
mounted) and NodeLocal DNSCache, plus one Corefile with every form the parser reads.

Each translation equals its golden (<fixture>.golden; KDNS_UPDATE_GOLDEN=1 rewrites them) and
exits 1 exactly when it names something it could not translate. What it prints is then fed
to kdns: the ConfigMap to the nanny's --check-flags (which validates an existing -configDir
as a ConfigMap update), the arguments to tools/check_flags.py with the binaries of $KDNS_BIN
(kubedns's and frontend-cache's in the kube-dns addon Deployment, the nanny's in a
node-local-dns DaemonSet), so a flag that does not exist, or a value a program refuses,
fails here. A Corefile that says only what kdns can say exits 0; a broken one exits 2.
Closes with `N passed, M failed`.
"""
import json
import os
import subprocess
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

TOOL = os.path.join(harness.ROOT, "tools", "corefile2kdns")
CHECK_FLAGS = os.path.join(harness.ROOT, "tools", "check_flags.py")
FIXTURES = os.path.join(harness.ROOT, "test", "fixtures", "corefiles")
ADDON = os.path.join(harness.ROOT, "test", "fixtures", "kube-dns-addon.yaml")

# (fixture, extra arguments, environment, exit status)
CASES = [
    ("kubeadm.yaml", [], {}, 1),
    ("kops.Corefile", [], {}, 0),
    ("kubespray.Corefile", [], {}, 1),
    ("eks.Corefile", [], {}, 0),
    ("gke-kube-dns.yaml", [], {}, 0),
    ("gke-node-local-dns.Corefile", [], {}, 1),
    ("aks.yaml", ["--mount", "custom=aks-custom.yaml"], {}, 1),
    ("node-local-dns.yaml", [], {}, 1),
    ("features.Corefile", [], {"CORP_DNS": "10.20.0.1"}, 1),
]


def run_tool(args, env=None, stdin=None):
    result = subprocess.run([harness.PYTHON, TOOL] + args, cwd=FIXTURES, input=stdin,
                            capture_output=True, text=True, timeout=60,
                            env=dict(os.environ, **(env or {})))
    return result.returncode, result.stdout, result.stderr


def test_translations_equal_their_goldens(r):
    p = []
    for fixture, args, env, want in CASES:
        code, out, err = run_tool(args + [fixture], env)
        golden = os.path.join(FIXTURES, fixture.rsplit(".", 1)[0] + ".golden")
        if os.environ.get("KDNS_UPDATE_GOLDEN"):
            with open(golden, "w") as f:
                f.write(out)
        with open(golden) as f:
            if f.read() != out:
                p.append("%s: differs from %s:\n%s" % (fixture, golden, out))
        if code != want:
            p.append("%s: exit %d, want %d: %s" % (fixture, code, want, err))
        if (code == 1) != ("# NOT TRANSLATED (" in out):
            p.append("%s: exit %d but the output %s NOT TRANSLATED" % (
                fixture, code, "has no" if code == 1 else "has"))
    return p


def translation(fixture, args, env):
    code, out, err = run_tool(args + ["--json", fixture], env)
    if code not in (0, 1):
        raise AssertionError("%s --json: exit %d: %s" % (fixture, code, err))
    return json.loads(out)


def configmap_accepted(r, name, data):
    """None when the nanny's check accepts `data` as the kube-dns ConfigMap, else why not."""
    config_dir = os.path.join(r["workdir"], name + ".config")
    os.makedirs(config_dir, exist_ok=True)
    for key, value in data.items():
        with open(os.path.join(config_dir, key), "w") as f:
            f.write(value)
    result = subprocess.run([os.path.join(harness.BIN, "nanny"), "--check-flags",
                             "-configDir=" + config_dir], capture_output=True, text=True,
                            timeout=30, stdin=subprocess.DEVNULL)
    return None if result.returncode == 0 else result.stderr.strip()


def deployment_with(args):
    """The documents whose containers carry the translated arguments: the kube-dns addon
    (kubedns; frontend-cache after the nanny's --) or, for node-local ones, a node-cache
    DaemonSet (the nanny's before its --, frontend-cache's after)."""
    if args["nanny"]:
        return [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                 "metadata": {"name": "node-local-dns", "namespace": "kube-system"},
                 "spec": {"template": {"spec": {"containers": [{
                     "name": "node-cache",
                     "image": "registry.k8s.io/dns/k8s-dns-node-cache:1.26.4",
                     "args": args["nanny"] + ["-upstreamsvc", "kube-dns-upstream", "--"] +
                     args["frontend-cache"]}]}}}}]
    with open(ADDON) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    for container in docs[0]["spec"]["template"]["spec"]["containers"]:
        if container["name"] == "kubedns":
            container["args"] += args["kubedns"]
        elif container["name"] == "dnsmasq":
            container["args"] += args["frontend-cache"]
    return docs


def test_translations_are_accepted_by_kdns(r):
    p = []
    for fixture, args, env, _ in CASES:
        if fixture == "gke-kube-dns.yaml":
            with open(os.path.join(FIXTURES, fixture)) as f:
                data = yaml.safe_load(f)["data"]
            why = configmap_accepted(r, fixture, data)
            if why:
                p.append("%s: the nanny refuses it: %s" % (fixture, why))
            continue
        translated = translation(fixture, args, env)
        why = configmap_accepted(r, fixture, translated["configMapData"])
        if why:
            p.append("%s: the nanny refuses the ConfigMap: %s" % (fixture, why))
        text = yaml.safe_dump_all(deployment_with(translated["args"]))
        for check in (["--bin", harness.BIN], []):
            result = subprocess.run([harness.PYTHON, CHECK_FLAGS] + check + ["-"], input=text,
                                    capture_output=True, text=True, timeout=120)
            if result.returncode != 0 or " 0 argument(s) refused" not in result.stdout:
                p.append("%s: check_flags %s refuses the arguments %s: %s" % (
                    fixture, " ".join(check), translated["args"], result.stdout))
    return p


def test_a_corefile_kdns_can_say_exits_0(r):
    corefile = """.:53 {
        errors
        health { lameduck 5s }
        ready
        kubernetes cluster.local in-addr.arpa ip6.arpa {
           pods insecure
           fallthrough in-addr.arpa ip6.arpa
           ttl 30
           zonal
        }
        prometheus :9153
        forward . 8.8.8.8 8.8.4.4
        cache 30
        loop
        reload
    }
    example.org { forward . 10.0.0.53 }
    """
    code, out, err = run_tool(["-"], stdin=corefile)
    p = []
    if code != 0 or "NOT TRANSLATED" in out:
        p.append("exit %d: %s%s" % (code, out, err))
    for want in ('"example.org": [', '["8.8.8.8", "8.8.4.4"]', "#     --ttl=30", "#     --zonal",
                 "#     --dns-loop-detect", "#     --max-cache-ttl=30"):
        if want not in out:
            p.append("not in the translation: %s" % want)
    return p + ([out] if p else [])


def test_tls_forwards_become_tls_upstreams(r):
    """forward . tls://... with tls_servername and tls CA: tls://IP@NAME nameservers the
    nanny accepts, and --tls-ca-file for both programs."""
    corefile = """.:53 {
        forward . tls://1.1.1.1 tls://[2606:4700::1111]:8853 {
            tls_servername cloudflare-dns.com
            tls /etc/kdns-tls/ca.pem
        }
    }
    corp.example { forward . tls://10.0.0.53 }
    """
    code, out, err = run_tool(["--json", "-"], stdin=corefile)
    p = []
    if code != 0:
        p.append("exit %d: %s%s" % (code, out, err))
        return p
    translated = json.loads(out)
    data = translated["configMapData"]
    want = ["tls://1.1.1.1@cloudflare-dns.com", "tls://[2606:4700::1111]:8853@cloudflare-dns.com"]
    if json.loads(data["upstreamNameservers"]) != want:
        p.append("upstreamNameservers %s, want %s" % (data["upstreamNameservers"], want))
    if json.loads(data["stubDomains"]) != {"corp.example": ["tls://10.0.0.53"]}:
        p.append("stubDomains %s, want corp.example over tls://10.0.0.53" % data["stubDomains"])
    for program in ("kubedns", "frontend-cache"):
        if "--tls-ca-file=/etc/kdns-tls/ca.pem" not in translated["args"].get(program, []):
            p.append("%s: no --tls-ca-file in %s" % (program, translated["args"]))
    why = configmap_accepted(r, "tls", data)
    if why:
        p.append("the nanny refuses the ConfigMap: %s" % why)
    code, out, err = run_tool(["-"], stdin=".:53 {\n forward . tls://1.1.1.1 {\n"
                                            "  tls cert.pem key.pem ca.pem\n }\n}\n")
    if code != 1 or "client certificates" not in out:
        p.append("tls CERT KEY CA: exit %d, want 1 and NOT TRANSLATED: %s" % (code, out))
    return p


def test_a_broken_corefile_exits_2(r):
    p = []
    for corefile, want in ((".:53 {\n  forward . 8.8.8.8\n", "{ without its }"),
                           (".:53 {\n}\n}\n", "} without its {"),
                           ('.:53 {\n  hosts {\n    "10.0.0.1 a\n}\n', "unterminated"),
                           ("example.org\n", "without { ... }")):
        code, out, err = run_tool(["-"], stdin=corefile)
        if code != 2 or want not in err:
            p.append("%r: exit %d, %r; want 2 and %r" % (corefile, code, err, want))
    return p


def test_imports_read_files_next_to_the_corefile(r):
    """import GLOB reads the matching files beside the Corefile, in name order; one that
    matches nothing imports nothing and says so."""
    directory = os.path.join(r["workdir"], "coredns")
    os.makedirs(os.path.join(directory, "extra"))
    with open(os.path.join(directory, "extra", "a.server"), "w") as f:
        f.write("a.example { forward . 10.0.0.1 }\n")
    with open(os.path.join(directory, "extra", "b.server"), "w") as f:
        f.write("b.example {\n  forward . 10.0.0.2:5353\n}\n")
    with open(os.path.join(directory, "Corefile"), "w") as f:
        f.write(".:53 {\n  forward . 10.0.0.9\n  import none/*.override\n}\n"
                "import extra/*.server\n")
    code, out, err = run_tool(["--json", os.path.join(directory, "Corefile")])
    p = []
    if code != 0:
        p.append("exit %d: %s%s" % (code, out, err))
        return p
    translated = json.loads(out)
    stubs = json.loads(translated["configMapData"].get("stubDomains", "{}"))
    if stubs != {"a.example": ["10.0.0.1"], "b.example": ["10.0.0.2:5353"]}:
        p.append("stubDomains from the imported files: %s" % stubs)
    if not any("import none/*.override: no file matches" in n
               for n in translated["nothingToWrite"]):
        p.append("the import that matches nothing is not said: %s" % translated)
    return p


TESTS = [test_translations_equal_their_goldens,
         test_translations_are_accepted_by_kdns,
         test_a_corefile_kdns_can_say_exits_0,
         test_tls_forwards_become_tls_upstreams,
         test_a_broken_corefile_exits_2,
         test_imports_read_files_next_to_the_corefile]

if __name__ == "__main__":
    sys.exit(harness.main("kdns-corefile2kdns-", TESTS,
                          tools=[os.path.join(harness.BIN, "nanny")]))
