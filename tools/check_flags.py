#!/usr/bin/python3
"""Pre-flight for an image swap: which arguments of a live kube-dns Deployment would the
kdns images refuse?

    kubectl -n kube-system get deployment kube-dns -o yaml > kube-dns.yaml
    tools/check_flags.py [--bin DIR] kube-dns.yaml     # or - for stdin; JSON works too

Each container is matched to the program the kdns images run in its place, by its image
(registry.k8s.io/dns/k8s-dns-kube-dns -> kubedns, k8s-dns-dnsmasq-nanny -> nanny, whose
arguments after `--` go to frontend-cache, k8s-dns-sidecar -> sidecar, k8s-dns-dnsmasq ->
frontend-cache; kdns/kubedns, kdns/cache and kdns/sidecar likewise) or its command. Its
command line ($(VAR) expanded from the container's env values) goes through the program's
own check (`--check-flags`: validate, exit, bind nothing), first whole, then, when that
fails, one argument at a time, so that every refused argument is listed, each with the
program's one-line reason. The binaries come from --bin, else $KDNS_BIN, else $PATH.

Prints one line per refused argument and a summary; exit status 0 when nothing is refused,
1 when something is, 2 on a bad input file.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

# Image name (the part after the last "/", without the tag) -> program.
IMAGE_PROGRAMS = {
    "k8s-dns-kube-dns": "kubedns", "k8s-dns-kube-dns-amd64": "kubedns", "kubedns": "kubedns",
    "k8s-dns-dnsmasq-nanny": "nanny", "k8s-dns-dnsmasq-nanny-amd64": "nanny", "cache": "nanny",
    "k8s-dns-sidecar": "sidecar", "k8s-dns-sidecar-amd64": "sidecar", "sidecar": "sidecar",
    "k8s-dns-dnsmasq": "frontend-cache", "k8s-dns-dnsmasq-amd64": "frontend-cache",
}
# A container's command (basename of its first word) -> program.
COMMAND_PROGRAMS = {
    "kube-dns": "kubedns", "kubedns": "kubedns", "dnsmasq-nanny": "nanny", "nanny": "nanny",
    "sidecar": "sidecar", "dnsmasq": "frontend-cache", "frontend-cache": "frontend-cache",
}


def load_documents(path):
    text = sys.stdin.read() if path == "-" else open(path).read()
    try:
        docs = [json.loads(text)]
    except ValueError:
        import yaml  # PyYAML (Debian: python3-yaml); only needed for YAML input
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    out = []
    for doc in docs:
        if isinstance(doc, dict) and doc.get("kind", "").endswith("List"):
            out.extend(doc.get("items", []))
        else:
            out.append(doc)
    return out


def pod_spec(doc):
    spec = doc.get("spec", {})
    if doc.get("kind") == "Pod":
        return spec
    return spec.get("template", {}).get("spec", {})


def program_of(container):
    if container.get("command"):
        return COMMAND_PROGRAMS.get(os.path.basename(container["command"][0]))
    image = container.get("image", "")
    name = image.rsplit("/", 1)[-1].split("@")[0].split(":")[0]
    return IMAGE_PROGRAMS.get(name)


def expand(arg, env):
    """The kubelet's $(VAR) expansion ($$ escapes); unknown variables stay as written."""
    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
                  lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)), arg)


def arguments(container):
    env = {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}
    argv = list(container.get("command", [])[1:]) + list(container.get("args", []))
    return [expand(a, env) for a in argv]


class Checker:
    def __init__(self, bin_dir):
        self.bin_dir = bin_dir
        self.takes_value = {}

    def binary(self, program):
        if self.bin_dir:
            return os.path.join(self.bin_dir, program)
        return shutil.which(program) or program

    def check(self, program, args):
        """(ok, the program's message)."""
        env = dict(os.environ, GLOG_logtostderr="1")
        try:
            result = subprocess.run([self.binary(program), "--check-flags"] + list(args),
                                    capture_output=True, text=True, timeout=30,
                                    stdin=subprocess.DEVNULL, env=env)
        except OSError as e:
            sys.exit("check_flags: cannot run %s: %s" % (self.binary(program), e))
        lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
        return result.returncode == 0, (lines[-1] if lines else "exit %d" % result.returncode)

    def frontend_takes_value(self, option):
        # frontend-cache says "<option> needs a value" exactly for an option that takes one.
        if option not in self.takes_value:
            _, message = self.check("frontend-cache", [option])
            self.takes_value[option] = message.endswith(option + " needs a value")
        return self.takes_value[option]

    def split(self, program, args):
        """The arguments as units to check alone: an option and its separate value."""
        units, i = [], 0
        while i < len(args):
            arg = args[i]
            unit = [arg]
            if arg.startswith("-") and "=" not in arg and i + 1 < len(args) and \
                    not args[i + 1].startswith("-"):
                if program == "frontend-cache":
                    # An option it takes a value for, or one it refuses (the value then
                    # belongs to the refused option, not listed on its own).
                    takes = (len(arg) == 2 or arg.startswith("--")) and (
                        self.frontend_takes_value(arg) or not self.check(program, [arg])[0])
                else:
                    takes = True  # gflags: "--flag value"
                if takes:
                    unit.append(args[i + 1])
                    i += 1
            units.append(unit)
            i += 1
        return units

    def refused(self, program, args, context=()):
        """[(argument, reason)] for every argument `program` refuses; `context` is passed
        along with each one (the nanny's "--" before its child's arguments)."""
        ok, message = self.check(program, list(context) + list(args))
        if ok:
            return []
        out = []
        for unit in self.split(program, args):
            unit_ok, unit_message = self.check(program, list(context) + unit)
            if not unit_ok:
                out.append((" ".join(unit), unit_message))
        if not out:  # only the combination fails (e.g. --min-cache-ttl above --max-cache-ttl)
            out.append((" ".join(args), message))
        return out


def check_container(checker, container):
    """[(argument, reason)], or None when no kdns program replaces the container."""
    program = program_of(container)
    if program is None:
        return None, None
    args = arguments(container)
    if program != "nanny":
        return program, checker.refused(program, args)
    own, child = (args[:args.index("--")], args[args.index("--") + 1:]) if "--" in args \
        else (args, [])
    return program, checker.refused("nanny", own) + [
        ("(to frontend-cache) " + a, r) for a, r in checker.refused("frontend-cache", child)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", help="the Deployment (kubectl get -o yaml or json); - for stdin")
    parser.add_argument("--bin", default=os.environ.get("KDNS_BIN"),
                        help="directory of the kdns binaries (default: $KDNS_BIN, else $PATH)")
    options = parser.parse_args()
    try:
        docs = load_documents(options.file)
    except Exception as e:  # noqa: BLE001 - any unreadable input is one line
        print("check_flags: %s: %s" % (options.file, e), file=sys.stderr)
        return 2
    checker = Checker(options.bin)
    refused = checked = 0
    for doc in docs:
        name = "%s/%s" % (doc.get("kind", "?"), doc.get("metadata", {}).get("name", "?"))
        for container in pod_spec(doc).get("containers", []):
            program, problems = check_container(checker, container)
            if program is None:
                print("%s container %s: image %s is not replaced by a kdns image; not checked"
                      % (name, container.get("name"), container.get("image")))
                continue
            checked += 1
            for argument, reason in problems:
                refused += 1
                print("%s container %s (%s): refused: %s: %s"
                      % (name, container.get("name"), program, argument, reason))
    print("%d container(s) checked, %d argument(s) refused" % (checked, refused))
    if checked == 0:
        print("check_flags: no kube-dns container found in %s" % options.file, file=sys.stderr)
        return 2
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
