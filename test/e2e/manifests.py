"""The manifests in manifests/, rendered and read as the kubelet would, for the manifests
suites (manifests_*_test.py), which check them against the code so they cannot drift.

render() is the one way the suites render a kustomization: by the real kustomize (`kustomize
build`, or `kubectl kustomize`) wherever one is installed, else by kustomize.py, a small
renderer for what manifests/ uses, with a note naming the tool that is missing
(manifests_render_test.py checks that the two agree on every kustomization). Rendered
answers questions about the result (the kube-dns pod, each container's program from
images/Dockerfile, its command line with $(VAR) expanded, its image's ENV). What the programs accept is asked from the built binaries in $KDNS_BIN
(default build/bin), never kept here: check_command() runs a container's command line
through the program's flag-check mode (`--check-flags`: validate, exit); FRONTEND_OPTIONS
asks frontend-cache's --check-flags which dnsmasq options take a value and what a short
option's long name is; flag_defaults() asks a gflags program's defaults
(`--check-flags --helpxml`: gflags prints its flags and exits before the program runs).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import kustomize  # noqa: E402
from kustomize import all_containers, pod_spec, split_image  # noqa: E402

ROOT = harness.ROOT
MANIFESTS = os.environ.get("KDNS_MANIFESTS", os.path.join(ROOT, "manifests"))
DOCKERFILE = os.path.join(ROOT, "images", "Dockerfile")
# The component holding the ConfigMaps operators edit in the cluster (kube-dns,
# kube-dns-autoscaler), which manifests/ itself leaves out.
CONFIGMAPS_COMPONENT = os.path.join(MANIFESTS, "components", "configmaps")
BIN = harness.BIN
NAMESPACE = "kube-system"
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
# What the kubelet adds to every container's environment (enableServiceLinks aside).
KUBELET_ENV = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}

CLUSTER_SCOPED = {"ClusterRole", "ClusterRoleBinding", "Namespace", "PriorityClass",
                  "CustomResourceDefinition", "StorageClass"}

# frontend-cache's dnsmasq-style options are not gflags and its --check-flags prints
# nothing, so the defaults the cross-checks read of them are the code's
# (frontend-cache/options.h); every other program's defaults come from flag_defaults().
FRONTEND_DEFAULTS = {"port": "53", "lameduck": "5s", "prometheus-port": "0"}

# (api group, resource) kubedns may read, and the one it needs only for verified pods.
KUBEDNS_READS = {("", "services"), ("", "endpoints"), ("discovery.k8s.io", "endpointslices")}
KUBEDNS_POD_READ = ("", "pods")

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


def container_env(container, namespace, configmaps=None):
    """The container's environment as the kubelet builds it; configMapKeyRef values are
    read from `configmaps` ({name: data}) when given (the rendered ConfigMaps)."""
    env = {}
    for var in container.get("env", []):
        source = var.get("valueFrom", {})
        if "value" in var:
            env[var["name"]] = expand(str(var["value"]), env)
        elif source.get("fieldRef", {}).get("fieldPath") == "metadata.namespace":
            env[var["name"]] = namespace
        elif "configMapKeyRef" in source and configmaps is not None:
            ref = source["configMapKeyRef"]
            value = configmaps.get(ref["name"], {}).get(ref["key"])
            if value is None and not ref.get("optional"):
                raise AssertionError("container %s: %s reads ConfigMap %s key %s, which the "
                                     "manifests do not define" % (
                                         container["name"], var["name"], ref["name"],
                                         ref["key"]))
            if value is not None:
                env[var["name"]] = value
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
    """frontend-cache's options as it reads them: --name=value, --name value, -p N, -pN
    (a short option by its long name); repeated ones kept. Which options take a value and
    the long name of a short one come from the binary (FRONTEND_OPTIONS)."""
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
            if value is None and FRONTEND_OPTIONS.takes_value("--" + name) and i < len(args):
                value = args[i]
                i += 1
            options.append((name, value))
            continue
        long_name = FRONTEND_OPTIONS.long_name(arg[1]) if (
            len(arg) >= 2 and arg[0] == "-" and arg[1] != "-") else None
        if long_name:
            value = arg[2:]
            if not value and i < len(args):
                value = args[i]
                i += 1
            options.append((long_name, value))
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
    """A rendered kustomization: its kustomization.yaml, its objects, and which renderer
    made them (REAL_KUSTOMIZE or HOMEMADE_KUSTOMIZE)."""

    def __init__(self, kustomization, docs, renderer=None):
        self.kustomization = kustomization
        self.docs = docs
        self.renderer = renderer

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

    def configmaps(self):
        """{name: data} of the ConfigMaps in kube-system."""
        return {d["metadata"]["name"]: d.get("data") or {} for d in self.find("ConfigMap")
                if d["metadata"].get("namespace") == NAMESPACE}

    def argv(self, container):
        """The container's command line as the kubelet runs it, with $(VAR) expanded."""
        env = container_env(container, NAMESPACE, self.configmaps())
        command = container.get("command")
        if command is None:
            command = [self.program_of(container)]
        return [expand(str(a), env) for a in command + container.get("args", [])]

    def containers_running(self, program):
        spec = pod_spec(self.kube_dns())
        return [c for c in spec["containers"] if self.program_of(c) == program]


def write_overlay(directory, components):
    """An operator's overlay in `directory` (outside manifests/: kustomize refuses an
    overlay inside its base): manifests/ plus `components`."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "kustomization.yaml"), "w") as f:
        yaml.safe_dump({"apiVersion": "kustomize.config.k8s.io/v1beta1",
                        "kind": "Kustomization",
                        "resources": [os.path.relpath(MANIFESTS, directory)],
                        "components": [os.path.relpath(c, directory) for c in components]},
                       f)
    return directory


def operator_configmaps(name):
    """The ConfigMaps `name` of the configmaps component (rendered with manifests/)."""
    return [d for d in render(components=[CONFIGMAPS_COMPONENT]).docs
            if d.get("kind") == "ConfigMap" and d["metadata"]["name"] == name]


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


def check_flags(program, args):
    """(exit code, stdout and stderr) of `program --check-flags args...`."""
    result = subprocess.run([binary(program), "--check-flags"] + list(args),
                            capture_output=True, text=True, timeout=30,
                            stdin=subprocess.DEVNULL, env=plain_env())
    return result.returncode, result.stdout + result.stderr


class FrontendOptions:
    """frontend-cache's dnsmasq-style options, asked from the binary's --check-flags: an
    option given without its value fails with "needs a value" exactly when it takes one,
    and a bad value for a short option is reported under the option's long name."""

    def __init__(self):
        self._takes_value = {}
        self._long_names = {}

    def takes_value(self, option):
        """Whether `option` (--name or -x) takes a value."""
        if option not in self._takes_value:
            _, out = check_flags("frontend-cache", [option])
            self._takes_value[option] = (option + " needs a value") in out
        return self._takes_value[option]

    def long_name(self, letter):
        """The long name of the short option -letter that takes a value; -letter itself
        when the binary accepts any value for it (nothing to name it by); None when -letter
        takes no value (a flag, or not frontend-cache's)."""
        if letter not in self._long_names:
            name = None
            if self.takes_value("-" + letter):
                _, out = check_flags("frontend-cache", ["-" + letter, "!"])
                m = re.search(r"frontend-cache: --([a-z0-9-]+)[=:]", out)
                name = m.group(1) if m else "-" + letter
            self._long_names[letter] = name
        return self._long_names[letter]


FRONTEND_OPTIONS = FrontendOptions()
_flag_defaults = {}


def flag_defaults(program):
    """{flag: default} of a gflags program as the binary declares them (underscores in
    names read as dashes, as gflags accepts them); with "meaning" under "help:flag"."""
    if program not in _flag_defaults:
        code, out = check_flags(program, ["--helpxml"])
        xml_text = out[out.index("<?xml"):] if "<?xml" in out else out
        flags = {}
        for flag in xml.etree.ElementTree.fromstring(xml_text).iter("flag"):
            name = flag.findtext("name").replace("_", "-")
            flags[name] = flag.findtext("default")
            flags["help:" + name] = flag.findtext("meaning") or ""
        _flag_defaults[program] = flags
    return _flag_defaults[program]


def kubedns_metrics_port_default():
    """kubedns's metrics port when neither --prometheus-port (nor its old name
    --metrics-port) nor $PROMETHEUS_PORT is given, as its --prometheus-port help says
    ("...else N")."""
    m = re.search(r"else (\d+)", flag_defaults("kubedns")["help:prometheus-port"])
    if not m:
        raise AssertionError("kubedns --prometheus-port help does not name its fallback port")
    return m.group(1)


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


def kubectl_minor():
    """The installed kubectl's minor version (1.N: N), or None when it cannot say."""
    result = subprocess.run(["kubectl", "version", "--client", "-o", "json"],
                            capture_output=True, text=True, timeout=30)
    try:
        return int(re.sub(r"[^0-9].*", "", json.loads(result.stdout)["clientVersion"]["minor"]))
    except (ValueError, KeyError, TypeError):
        return None


REAL_KUSTOMIZE = "kustomize"
HOMEMADE_KUSTOMIZE = "the homemade kustomize (test/e2e/kustomize.py)"


def kustomize_command():
    """(the command line that runs the real kustomize on a directory, None, None), or
    (None, why there is none, whether the install step provides it): `kustomize build`
    or, from 1.21 on, `kubectl kustomize` (older ones embed kustomize v2, which has no
    components; mk/deps.sh installs Debian's kubectl, which may be one)."""
    if shutil.which("kustomize"):
        return ["kustomize", "build"], None, None
    if not shutil.which("kubectl"):
        return None, "neither kustomize nor kubectl is installed", True
    minor = kubectl_minor()
    if minor is not None and minor < 21:
        return None, ("kubectl 1.%d embeds kustomize v2, which has no components: install "
                      "kustomize or a kubectl from 1.21 on" % minor), False
    return ["kubectl", "kustomize"], None, None


def kustomize_build(directory):
    """The documents the real kustomize renders of `directory`; harness.Skip where there is
    none (mk/deps.sh installs kubectl, so under CI=true its absence fails)."""
    command, missing, provided = kustomize_command()
    if command is None:
        raise harness.Skip(missing, provided=provided)
    result = subprocess.run(command + [directory], capture_output=True, text=True,
                            timeout=120)
    if result.returncode != 0:
        raise AssertionError("`%s` failed: %s" % (" ".join(command + [directory]),
                                                   result.stderr.strip()))
    return [d for d in yaml.safe_load_all(result.stdout) if d is not None]


_renderer_said = False


def say_renderer(text):
    """Prints, once per run, which renderer the suite's renderings come from."""
    global _renderer_said
    if not _renderer_said:
        print("    note: rendering with " + text)
        sys.stdout.flush()
        _renderer_said = True


def render(directory=MANIFESTS, components=()):
    """`directory` (manifests/ by default), with `components` listed in an operator's
    overlay of it when given, rendered (a Rendered) by the real kustomize where one is
    installed, else by the homemade one, with why; which one is said once per run. The
    only way the suites render a kustomization."""
    if components:
        workdir = tempfile.mkdtemp(prefix="kdns-overlay-")
        try:
            return render(write_overlay(os.path.join(workdir, "site"), components))
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    with open(os.path.join(directory, "kustomization.yaml")) as f:
        kustomization = yaml.safe_load(f)
    command, missing, _ = kustomize_command()
    if command is not None:
        say_renderer("`%s`" % " ".join(command))
        return Rendered(kustomization, kustomize_build(directory), REAL_KUSTOMIZE)
    say_renderer("%s, a fallback: %s" % (HOMEMADE_KUSTOMIZE, missing))
    return Rendered(kustomization, kustomize.render(directory)[1], HOMEMADE_KUSTOMIZE)


def main(tests):
    """Renders manifests/ and runs the tests on it; the exit code."""
    return harness.main("kdns-manifests-", tests,
                        setup=lambda workdir, owned: render())
