#!/usr/bin/python3
"""The manifests in manifests/ checked against the code, so they cannot drift from it.

The kustomization is rendered (a small renderer for what it uses: resources, images and
JSON 6902 patches; checked against `kubectl kustomize` when kubectl is installed), then:

  - every file parses, is listed in kustomization.yaml, and every object sits in kube-system;
  - each kdns container's command line (the image's ENTRYPOINT from images/Dockerfile, the
    container's command and args, its env applied as the kubelet does, the service account
    files where the container mounts them) is run through the binary's flag-check mode
    (`--check-flags`: validate, exit) from $KDNS_BIN (default build/bin); the nanny's
    arguments after `--` also go through frontend-cache's; and the check modes are shown to
    reject a bad flag, so a pass means something;
  - the containers agree with each other: cluster domain, kubedns's DNS port in the cache's
    --server routes and the sidecar's probes, config mounts, lameduck periods inside the
    grace period;
  - every port a probe, annotation or Service names is declared by the pod;
  - RBAC: kubedns may only list and watch Services, Endpoints, EndpointSlices (and Pods for
    --pod-records=verified); the autoscaler writes only the kube-dns scale;
  - security: non-root, read-only root file system, no privilege escalation, capabilities
    dropped, NET_BIND_SERVICE only where a port below 1024 is bound;
  - the autoscaler's target, ConfigMap and default parameters agree.

A program built without a flag-check mode (`--check-flags` unknown to it) is reported as
SKIP, not as a pass. Closes with `N passed, M failed`.
"""
import copy
import ipaddress
import json
import os
import re
import shutil
import subprocess
import sys
import traceback

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MANIFESTS = os.environ.get("KDNS_MANIFESTS", os.path.join(ROOT, "manifests"))
DOCKERFILE = os.path.join(ROOT, "images", "Dockerfile")
BIN = os.environ.get("KDNS_BIN", os.path.join(ROOT, "build", "bin"))
NAMESPACE = "kube-system"
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
# What the kubelet adds to every container's environment (enableServiceLinks aside).
KUBELET_ENV = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}

CLUSTER_SCOPED = {"ClusterRole", "ClusterRoleBinding", "Namespace", "PriorityClass",
                  "CustomResourceDefinition", "StorageClass"}
WORKLOADS = {"Deployment", "DaemonSet", "StatefulSet"}

# Defaults of the flags the cross-checks read, as the code has them (kubedns/main.cc,
# frontend-cache/options.h, sidecar/main.cc, nanny/main.cc).
KUBEDNS_DEFAULTS = {"domain": "cluster.local.", "dns-port": "10053", "healthz-port": "8081",
                    "lameduck": "0s", "pod-records": "insecure"}
KUBEDNS_METRICS_PORT = "10055"  # when neither --metrics-port nor $PROMETHEUS_PORT
FRONTEND_DEFAULTS = {"port": "53", "lameduck": "5s", "prometheus-port": "0"}
SIDECAR_DEFAULTS = {"prometheus-port": "10054"}
NANNY_DEFAULTS = {"configDir": "/etc/k8s/dns/dnsmasq-nanny", "dnsmasqExec": "frontend-cache",
                  "clusterDomain": "cluster.local", "kubednsServer": "127.0.0.1:10053",
                  "runDir": ""}

# (api group, resource) kubedns may read, and the one it needs only for verified pods.
KUBEDNS_READS = {("", "services"), ("", "endpoints"), ("discovery.k8s.io", "endpointslices")}
KUBEDNS_POD_READ = ("", "pods")

SKIPPED = []


class Skip(Exception):
    pass


# ---------------------------------------------------------------------------------------
# Rendering the kustomization.

def load_docs(path):
    with open(path) as f:
        return [doc for doc in yaml.safe_load_all(f) if doc is not None]


def json_pointer(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise ValueError("bad JSON pointer " + path)
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def apply_json6902(doc, ops):
    """RFC 6902 add, replace and remove: what the kustomization's patches use."""
    for op in ops:
        parts = json_pointer(op["path"])
        parent = doc
        for part in parts[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent[part]
        last = parts[-1]
        if op["op"] in ("add", "replace"):
            value = copy.deepcopy(op["value"])
            if isinstance(parent, list):
                if last == "-":
                    parent.append(value)
                elif op["op"] == "add":
                    parent.insert(int(last), value)
                else:
                    parent[int(last)] = value
            else:
                if op["op"] == "replace" and last not in parent:
                    raise ValueError("replace of a missing path " + op["path"])
                parent[last] = value
        elif op["op"] == "remove":
            del parent[int(last) if isinstance(parent, list) else last]
        else:
            raise ValueError("unsupported patch op " + op["op"])


def target_matches(target, doc):
    meta = doc.get("metadata", {})
    group_version = doc.get("apiVersion", "")
    group, _, version = group_version.rpartition("/")
    checks = {"kind": doc.get("kind"), "name": meta.get("name"),
              "namespace": meta.get("namespace"), "version": version, "group": group}
    for key, want in target.items():
        if key not in checks:
            raise ValueError("unsupported patch target field " + key)
        if checks[key] != want:
            return False
    return True


def split_image(image):
    """registry/name:tag@digest -> (name, tag, digest)."""
    digest = None
    if "@" in image:
        image, digest = image.split("@", 1)
    tag = None
    slash = image.rfind("/")
    colon = image.rfind(":")
    if colon > slash:
        image, tag = image[:colon], image[colon + 1:]
    return image, tag, digest


def pod_spec(doc):
    if doc.get("kind") in WORKLOADS:
        return doc["spec"]["template"]["spec"]
    if doc.get("kind") == "Pod":
        return doc["spec"]
    return None


def all_containers(spec):
    return spec.get("initContainers", []) + spec.get("containers", [])


def render(kustomization_dir):
    with open(os.path.join(kustomization_dir, "kustomization.yaml")) as f:
        kustomization = yaml.safe_load(f)
    supported = {"apiVersion", "kind", "resources", "images", "patches"}
    extra = set(kustomization) - supported
    if extra:
        raise ValueError("kustomization.yaml uses %s, which this test does not render: teach "
                         "render() or drop them" % sorted(extra))
    docs = []
    for resource in kustomization.get("resources", []):
        docs += load_docs(os.path.join(kustomization_dir, resource))
    for patch in kustomization.get("patches", []):
        ops = yaml.safe_load(patch["patch"])
        if not isinstance(ops, list):
            raise ValueError("only JSON 6902 patches (a list of ops) are rendered here")
        hits = [doc for doc in docs if target_matches(patch["target"], doc)]
        if not hits:
            raise ValueError("patch target %s matches nothing" % patch["target"])
        for doc in hits:
            apply_json6902(doc, ops)
    for entry in kustomization.get("images", []):
        for doc in docs:
            spec = pod_spec(doc)
            for container in all_containers(spec) if spec else []:
                name, tag, digest = split_image(container["image"])
                if name != entry["name"]:
                    continue
                name = entry.get("newName", name)
                tag = entry.get("newTag", tag)
                digest = entry.get("digest", digest)
                container["image"] = name + (":" + tag if tag and not digest else "") + \
                    ("@" + digest if digest else "")
    return kustomization, docs


# ---------------------------------------------------------------------------------------
# Reading images/Dockerfile: the ENTRYPOINT of each target.

def dockerfile_stages():
    """images/Dockerfile's stages: name -> {"entrypoint": [...], "env": {...}}, ENV
    inherited from the stage a stage is built FROM (the runtime base sets GLOG_logtostderr,
    which the containers then run with)."""
    stages = {}
    stage = None
    with open(DOCKERFILE) as f:
        for line in f:
            line = line.strip()
            m = re.match(r"FROM\s+(\S+)(?:\s+AS\s+(\S+))?$", line, re.IGNORECASE)
            if m:
                base = stages.get(m.group(1), {"entrypoint": None, "env": {}})
                stage = {"entrypoint": base["entrypoint"], "env": dict(base["env"])}
                if m.group(2):
                    stages[m.group(2)] = stage
                continue
            m = re.match(r"ENTRYPOINT\s+(\[.*\])$", line, re.IGNORECASE)
            if m and stage is not None:
                stage["entrypoint"] = json.loads(m.group(1))
            m = re.match(r"ENV\s+(.*)$", line, re.IGNORECASE)
            if m and stage is not None:
                for key, value in re.findall(r'([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S+)',
                                             m.group(1)):
                    stage["env"][key] = value.strip('"')
    return stages


def dockerfile_entrypoints():
    return {name: stage["entrypoint"] for name, stage in dockerfile_stages().items()
            if stage["entrypoint"]}


# ---------------------------------------------------------------------------------------
# Command lines.

def expand(value, env):
    """The kubelet's $(VAR) expansion: defined variables replaced, $$ is a literal $."""
    out = []
    i = 0
    while i < len(value):
        if value.startswith("$$", i):
            out.append("$")
            i += 2
            continue
        m = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)").match(value, i)
        if m and m.group(1) in env:
            out.append(env[m.group(1)])
            i = m.end()
            continue
        out.append(value[i])
        i += 1
    return "".join(out)


def container_env(container, namespace):
    env = {}
    for var in container.get("env", []):
        if "value" in var:
            env[var["name"]] = expand(str(var["value"]), env)
        elif var.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == \
                "metadata.namespace":
            env[var["name"]] = namespace
        else:
            env[var["name"]] = "placeholder"
    return env


def gflags(args):
    """--name=value and -name=value flags (dashes and underscores alike) up to a "--"."""
    flags = {}
    for arg in args:
        if arg == "--":
            break
        m = re.match(r"^--?([A-Za-z0-9_-]+)(?:=(.*))?$", arg)
        if m:
            flags[m.group(1).replace("_", "-")] = m.group(2) if m.group(2) is not None \
                else "true"
    return flags


def dnsmasq_options(args):
    """frontend-cache's options: --name=value, --name value, -p N, -pN; repeated ones kept."""
    with_value = {"server": "S", "cache-size": "c", "neg-ttl": None, "log-facility": "8",
                  "resolv-file": "r", "dns-forward-max": "0", "listen-address": "a",
                  "port": "p", "threads": None, "max-cache-ttl": None, "min-cache-ttl": None,
                  "stale-max": None, "lameduck": None, "servers-file": None,
                  "prometheus-address": None, "prometheus-port": None,
                  "metrics-textfile": None}
    by_short = {short: name for name, short in with_value.items() if short}
    options = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            break
        m = re.match(r"^--([a-z0-9-]+)(?:=(.*))?$", arg)
        if m:
            name, value = m.group(1), m.group(2)
            if value is None and name in with_value and i < len(args):
                value = args[i]
                i += 1
            options.append((name, value))
            continue
        if len(arg) >= 2 and arg[0] == "-" and arg[1] in by_short:
            value = arg[2:]
            if not value and i < len(args):
                value = args[i]
                i += 1
            options.append((by_short[arg[1]], value))
            continue
        options.append((arg, None))
    return options


def last_option(options, name, default=None):
    values = [value for key, value in options if key == name]
    return values[-1] if values else default


def duration_seconds(text):
    """A Go duration (7s, 500ms, 1m30s) or plain seconds."""
    if re.fullmatch(r"\d+", text):
        return float(text)
    total = 0.0
    units = {"h": 3600, "m": 60, "s": 1, "ms": 0.001, "us": 1e-6, "ns": 1e-9}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|us|ns|h|m|s)", text)
    if not parts or "".join(a + b for a, b in parts) != text:
        raise ValueError("not a duration: " + text)
    for amount, unit in parts:
        total += float(amount) * units[unit]
    return total


def split_nanny_args(args):
    if "--" in args:
        i = args.index("--")
        return args[:i], args[i + 1:]
    return args, []


# ---------------------------------------------------------------------------------------
# The pod and its parts.

class Rendered:
    def __init__(self, kustomization, docs):
        self.kustomization = kustomization
        self.docs = docs

    def find(self, kind, name=None):
        return [d for d in self.docs
                if d.get("kind") == kind and (name is None or d["metadata"]["name"] == name)]

    def one(self, kind, name):
        found = self.find(kind, name)
        if len(found) != 1:
            raise AssertionError("expected one %s %s, found %d" % (kind, name, len(found)))
        return found[0]

    def kube_dns(self):
        return self.one("Deployment", "kube-dns")

    def entrypoints(self):
        return dockerfile_entrypoints()

    def program_of(self, container):
        """The kdns program a container starts (its image's ENTRYPOINT), or None."""
        name, _, _ = split_image(container["image"])
        if "command" in container:
            return os.path.basename(container["command"][0])
        for entry in self.kustomization.get("images", []):
            if name == entry.get("newName", entry["name"]):
                name = entry["name"]
        if not name.startswith("kdns/"):
            return None
        target = name[len("kdns/"):]
        entrypoint = self.entrypoints().get(target)
        if not entrypoint:
            raise AssertionError("image %s: no target %s with an ENTRYPOINT in %s"
                                 % (container["image"], target, DOCKERFILE))
        return os.path.basename(entrypoint[0])

    def image_env(self, container):
        """The ENV of the container's kdns image (empty for other images)."""
        name, _, _ = split_image(container["image"])
        for entry in self.kustomization.get("images", []):
            if name == entry.get("newName", entry["name"]):
                name = entry["name"]
        if not name.startswith("kdns/"):
            return {}
        return dockerfile_stages().get(name[len("kdns/"):], {}).get("env", {})

    def argv(self, container):
        """The container's command line as the kubelet runs it, with $(VAR) expanded."""
        env = container_env(container, NAMESPACE)
        command = container.get("command")
        if command is None:
            command = [self.program_of(container)]
        return [expand(str(a), env) for a in command + container.get("args", [])]

    def containers_running(self, program):
        spec = pod_spec(self.kube_dns())
        return [c for c in spec["containers"] if self.program_of(c) == program]


def declared_ports(spec):
    """(container name, port name, number, protocol) of every declared container port."""
    out = []
    for container in all_containers(spec):
        for port in container.get("ports", []):
            out.append((container["name"], port.get("name"), port["containerPort"],
                        port.get("protocol", "TCP")))
    return out


def probes(container):
    for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = container.get(kind)
        if not probe:
            continue
        for handler in ("httpGet", "tcpSocket", "grpc"):
            if handler in probe:
                yield kind, handler, probe[handler]


def labels_match(selector, labels):
    for key, value in selector.get("matchLabels", {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions", []):
        value = labels.get(expr["key"])
        if expr["operator"] == "In" and value not in expr["values"]:
            return False
        if expr["operator"] == "NotIn" and value in expr["values"]:
            return False
        if expr["operator"] == "Exists" and expr["key"] not in labels:
            return False
        if expr["operator"] == "DoesNotExist" and expr["key"] in labels:
            return False
    return True


# ---------------------------------------------------------------------------------------
# Running a binary's flag-check mode.

def binary(program):
    path = os.path.join(BIN, program)
    if not os.access(path, os.X_OK):
        raise AssertionError("%s not built (KDNS_BIN=%s)" % (path, BIN))
    return path


_check_mode = {}


def plain_env():
    """This process's environment, logging to stderr (glog would write files to /tmp)."""
    env = dict(os.environ)
    env["GLOG_logtostderr"] = "1"
    return env


def has_check_mode(program):
    """Whether the built program knows --check-flags (a gflags 'unknown flag' says no)."""
    if program not in _check_mode:
        result = subprocess.run([binary(program), "--check-flags"], capture_output=True,
                                text=True, timeout=30, stdin=subprocess.DEVNULL,
                                env=plain_env())
        out = result.stdout + result.stderr
        _check_mode[program] = not (result.returncode != 0 and
                                    re.search(r"unknown (command line )?flag", out) and
                                    "check" in out)
    return _check_mode[program]


_unshare_ok = None


def run_with_service_account(argv, env):
    """Runs argv in a private mount namespace where the service account files exist, as the
    kubelet mounts them. None when mount namespaces are not available here."""
    global _unshare_ok
    script = ('set -e; run=$(readlink -f /var/run); mount -t tmpfs kdns-test "$run"; '
              'd=' + SERVICE_ACCOUNT_DIR + '; mkdir -p "$d"; printf token > "$d/token"; '
              'printf ca > "$d/ca.crt"; '
              'printf ' + NAMESPACE + ' > "$d/namespace"; exec "$@"')
    unshare = shutil.which("unshare")
    if unshare is None or _unshare_ok is False:
        return None
    prefix = [unshare, "--mount", "--propagation", "private"]
    if os.geteuid() != 0:
        prefix.append("--map-root-user")
    if _unshare_ok is None:
        probe = subprocess.run(prefix + ["sh", "-c", script, "sh", "true"],
                               capture_output=True, timeout=30)
        _unshare_ok = probe.returncode == 0
        if not _unshare_ok:
            return None
    return subprocess.run(prefix + ["sh", "-c", script, "sh"] + argv, capture_output=True,
                          text=True, timeout=60, env=env, stdin=subprocess.DEVNULL)


def check_command(container, argv, program, image_env=None):
    """Runs `program` (from $KDNS_BIN) on argv[1:] with --check-flags first, in the
    environment the container would have: the image's ENV, the kubelet's, the container's.
    A problem string, or None."""
    env = {"PATH": BIN + ":/usr/local/bin:/usr/bin:/bin", "HOME": "/nonexistent"}
    env.update(image_env or {})
    env.update(KUBELET_ENV)
    env.update(container_env(container, NAMESPACE))
    command = [binary(program), "--check-flags"] + argv[1:]
    mounts_token = any(m.get("mountPath") == SERVICE_ACCOUNT_DIR
                       for m in container.get("volumeMounts", []))
    result = None
    if mounts_token:
        result = run_with_service_account(command, env)
        if result is None:
            # No mount namespace here: name the API server instead of the in-cluster files
            # (every other flag is still checked).
            note = "no mount namespace for the service account files: checked with " \
                   "--kube-master-url instead"
            print("    note: " + note)
            command = command + ["--kube-master-url=https://10.96.0.1:443"]
    if result is None:
        result = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env,
                                stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        return "container %s: `%s` exited %d: %s" % (
            container["name"], " ".join(command[1:]), result.returncode,
            (result.stdout + result.stderr).strip()[-800:])
    return None


# ---------------------------------------------------------------------------------------
# The tests. Each returns a list of problems (empty: passed) or raises Skip.

def test_every_file_is_listed_and_parses(r):
    p = []
    listed = set(r.kustomization.get("resources", []))
    present = {f for f in os.listdir(MANIFESTS)
               if f.endswith((".yaml", ".yml")) and f != "kustomization.yaml"}
    for f in sorted(present - listed):
        p.append("%s is not in kustomization.yaml's resources" % f)
    for f in sorted(listed - present):
        p.append("kustomization.yaml lists %s, which does not exist" % f)
    for f in sorted(present):
        try:
            docs = load_docs(os.path.join(MANIFESTS, f))
        except yaml.YAMLError as e:
            p.append("%s: %s" % (f, e))
            continue
        if not docs:
            p.append("%s holds no object" % f)
    for doc in r.docs:
        what = "%s %s" % (doc.get("kind"), doc.get("metadata", {}).get("name"))
        for key in ("apiVersion", "kind", "metadata"):
            if key not in doc:
                p.append("%s: no %s" % (what, key))
        namespace = doc.get("metadata", {}).get("namespace")
        if doc.get("kind") in CLUSTER_SCOPED:
            if namespace is not None:
                p.append("%s is cluster-scoped but has namespace %s" % (what, namespace))
        elif namespace != NAMESPACE:
            p.append("%s: namespace %r, not %s" % (what, namespace, NAMESPACE))
    names = [(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"])
             for d in r.docs]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        p.append("defined twice: %s %s/%s" % dup)
    return p


def test_kustomize_renders_the_same(r):
    kubectl = shutil.which("kubectl")
    kustomize = shutil.which("kustomize")
    if kustomize:
        command = [kustomize, "build", MANIFESTS]
    elif kubectl:
        command = [kubectl, "kustomize", MANIFESTS]
    else:
        raise Skip("neither kustomize nor kubectl is installed")
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        return ["`%s` failed: %s" % (" ".join(command), result.stderr.strip())]
    theirs = [d for d in yaml.safe_load_all(result.stdout) if d is not None]
    key = lambda d: json.dumps(d, sort_keys=True)  # noqa: E731
    ours = sorted(map(key, r.docs))
    theirs = sorted(map(key, theirs))
    if ours == theirs:
        return []
    only_ours = set(ours) - set(theirs)
    only_theirs = set(theirs) - set(ours)
    return ["kustomize renders differently; only here: %s; only in kustomize's: %s"
            % ([json.loads(x)["metadata"]["name"] for x in only_ours],
               [json.loads(x)["metadata"]["name"] for x in only_theirs])]


def test_images_are_retargetable_and_built_here(r):
    p = []
    names = {entry["name"] for entry in r.kustomization.get("images", [])}
    entrypoints = r.entrypoints()
    version = None
    with open(os.path.join(ROOT, "common", "base", "version.h")) as f:
        m = re.search(r'kVersion\[\] = "([^"]+)"', f.read())
        version = m.group(1) if m else None
    for doc in r.docs:
        spec = pod_spec(doc)
        for container in all_containers(spec) if spec else []:
            name, tag, digest = split_image(container["image"])
            if name not in names:
                p.append("container %s: image %s has no entry in kustomization.yaml's images"
                         % (container["name"], name))
            if not tag and not digest:
                p.append("container %s: image %s has no tag" % (container["name"], name))
            if name.startswith("kdns/"):
                target = name[len("kdns/"):]
                if target not in entrypoints:
                    p.append("container %s: image %s is not a target of images/Dockerfile"
                             % (container["name"], name))
                if version and tag != version:
                    p.append("container %s: image %s:%s, but the code is version %s"
                             % (container["name"], name, tag, version))
    for entry in r.kustomization.get("images", []):
        if not any(split_image(c["image"])[0] == entry.get("newName", entry["name"])
                   for d in r.docs if pod_spec(d) for c in all_containers(pod_spec(d))):
            p.append("kustomization.yaml images: %s is used by no container" % entry["name"])
    return p


def test_command_lines_pass_the_flag_checks(r):
    p = []
    skipped = []
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
                gflags(own[1:]).get("dnsmasqExec", NANNY_DEFAULTS["dnsmasqExec"]))
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
    if skipped:
        SKIPPED.append("flag check of %s: the built binary has no --check-flags mode"
                       % ", ".join(sorted(set(skipped))))
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
        result = subprocess.run([binary(program), "--check-flags"] + argv, capture_output=True,
                                text=True, timeout=30, stdin=subprocess.DEVNULL,
                                env=plain_env())
        if result.returncode == 0:
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
    k = dict(KUBEDNS_DEFAULTS)
    k.update(gflags(r.argv(kubedns)[1:]))
    domain = k["domain"].rstrip(".").lower()
    dns_port = int(k["dns-port"])
    metrics_port = int(k.get("metrics-port", k_env.get("PROMETHEUS_PORT",
                                                       KUBEDNS_METRICS_PORT)))
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
    n = dict(NANNY_DEFAULTS)
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
    s = dict(SIDECAR_DEFAULTS)
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
    # Services: select the kube-dns pods, target declared ports, annotate their own ports.
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
        if annotated and not any(pt["port"] == int(annotated) for pt in service["spec"]["ports"]):
            p.append("Service %s: prometheus.io/port %s is not one of its ports" % (name,
                                                                                     annotated))
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
    configmaps = r.find("ConfigMap", flags.get("configmap"))
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
        if "default-params" in flags and json.loads(flags["default-params"]) != params:
            p.append("--default-params differ from ConfigMap %s" % flags.get("configmap"))
    account = spec.get("serviceAccountName", "default")
    for binding_kind, role_kind, role, rule in rbac_of(r, account, NAMESPACE):
        verbs = set(rule.get("verbs", []))
        resources = set(rule.get("resources", []))
        if "*" in verbs or "*" in resources or "*" in rule.get("apiGroups", []):
            p.append("%s %s uses a wildcard" % (role_kind, role))
        writes = verbs - {"get", "list", "watch"}
        if not writes:
            continue
        if resources == {"deployments/scale"}:
            if role_kind != "Role" or rule.get("resourceNames") != ["kube-dns"]:
                p.append("%s %s: writes to deployments/scale must be a Role limited to "
                         "kube-dns" % (role_kind, role))
        elif resources == {"configmaps"} and writes == {"create"}:
            if role_kind != "Role":
                p.append("%s %s: creating ConfigMaps must stay in %s" % (role_kind, role,
                                                                        NAMESPACE))
        else:
            p.append("%s %s grants %s on %s" % (role_kind, role, sorted(writes),
                                                sorted(resources)))
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
    configmaps = r.find("ConfigMap", "kube-dns")
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


TESTS = [test_every_file_is_listed_and_parses, test_kustomize_renders_the_same,
         test_images_are_retargetable_and_built_here, test_command_lines_pass_the_flag_checks,
         test_flag_check_modes_reject_a_bad_flag, test_containers_agree_with_each_other,
         test_every_named_port_exists, test_kube_dns_service,
         test_kubedns_may_only_list_and_watch, test_autoscaler, test_security_contexts,
         test_pods_are_selected_spread_and_protected, test_kube_dns_configmap]


def main():
    passed = failed = 0
    try:
        rendered = Rendered(*render(MANIFESTS))
    except Exception:
        traceback.print_exc()
        print("FAIL rendering manifests/")
        print("0 passed, 1 failed")
        return 1
    only = os.environ.get("KDNS_ONLY")
    for test in TESTS:
        if only and only not in test.__name__:
            continue
        try:
            problems = test(rendered)
        except Skip as e:
            print("SKIP %s: %s" % (test.__name__, e))
            continue
        except Exception:
            problems = ["raised: " + traceback.format_exc()]
        if problems:
            failed += 1
            print("FAIL %s" % test.__name__)
            for problem in problems:
                print("    " + str(problem).replace("\n", "\n    "))
        else:
            passed += 1
            print("ok   %s" % test.__name__)
        sys.stdout.flush()
    for what in SKIPPED:
        print("SKIP " + what)
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
