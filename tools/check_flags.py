#!/usr/bin/python3
"""Pre-flight for an image swap: which arguments of a live kube-dns Deployment would the
kdns images refuse?

    kubectl -n kube-system get deployment kube-dns -o yaml > kube-dns.yaml
    tools/check_flags.py kube-dns.yaml                  # or - for stdin; JSON works too
    docker run --rm -i kdns/tools:VERSION check_flags - < kube-dns.yaml

Each container is matched to the program the kdns images run in its place, by its image
(registry.k8s.io/dns/k8s-dns-kube-dns -> kubedns, k8s-dns-dnsmasq-nanny -> nanny, whose
arguments after `--` go to frontend-cache, k8s-dns-sidecar -> sidecar, k8s-dns-dnsmasq ->
frontend-cache, k8s-dns-node-cache -> nanny (node-local mode); kdns/kubedns, kdns/cache and
kdns/sidecar likewise) or its command.

Its command line is first expanded as the kubelet does: $(VAR) from the container's `env`
(`value`, a `valueFrom` ConfigMap key when that ConfigMap is in the same input, the pod's
namespace) and `envFrom` ConfigMaps in the input. A variable that cannot be known offline
(a Secret, the pod's IP or name, a ConfigMap not in the input) is named in a note, and the
argument that uses it is checked by its flag's name only.

Then each argument is checked against the programs' flag table, embedded below (names,
forms, types; dnsmasq's options and the ones frontend-cache refuses; kube-dns's Go flags
that are accepted and ignored). The table is what the binaries print with --flag-table;
`--write-table DIR` regenerates it from DIR's binaries and the test suite checks that it
equals theirs, so no source tree or binary is needed here. With --bin DIR (or $KDNS_BIN)
the binaries' own `--check-flags` judges instead (the values too: a bad --server, a bad
--probe): first the whole command line, then, when it fails, one argument at a time.

Prints one line per refused argument, a note per ignored flag and unknown variable, and a
summary; exit status 0 when nothing is refused, 1 when something is, 2 on a bad input file.
"""
import argparse
import json
import os
import re
import subprocess
import sys

PROGRAMS = ("kubedns", "nanny", "frontend-cache", "sidecar")

# Image name (the part after the last "/", without the tag) -> program.
IMAGE_PROGRAMS = {
    "k8s-dns-kube-dns": "kubedns", "k8s-dns-kube-dns-amd64": "kubedns", "kubedns": "kubedns",
    "k8s-dns-dnsmasq-nanny": "nanny", "k8s-dns-dnsmasq-nanny-amd64": "nanny", "cache": "nanny",
    "k8s-dns-sidecar": "sidecar", "k8s-dns-sidecar-amd64": "sidecar", "sidecar": "sidecar",
    "k8s-dns-dnsmasq": "frontend-cache", "k8s-dns-dnsmasq-amd64": "frontend-cache",
    "k8s-dns-node-cache": "nanny",  # NodeLocal DNSCache: the nanny in node-local mode
}
# A container's command (basename of its first word) -> program.
COMMAND_PROGRAMS = {
    "kube-dns": "kubedns", "kubedns": "kubedns", "dnsmasq-nanny": "nanny", "nanny": "nanny",
    "sidecar": "sidecar", "dnsmasq": "frontend-cache", "frontend-cache": "frontend-cache",
    "node-cache": "nanny",
}
# gflags' spellings of a bool value.
BOOL_WORDS = {"true", "t", "yes", "y", "1", "false", "f", "no", "n", "0"}


# ---------------------------------------------------------------------------------------
# Reading the input.

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
    if doc.get("kind") == "CronJob":
        spec = spec.get("jobTemplate", {}).get("spec", {})
    return spec.get("template", {}).get("spec", {})


def program_of(container):
    if container.get("command"):
        return COMMAND_PROGRAMS.get(os.path.basename(container["command"][0]))
    image = container.get("image", "")
    name = image.rsplit("/", 1)[-1].split("@")[0].split(":")[0]
    return IMAGE_PROGRAMS.get(name)


# ---------------------------------------------------------------------------------------
# The container's environment and the kubelet's $(VAR) expansion.

class Unknown:
    """A variable whose value cannot be known offline, and why."""

    def __init__(self, why):
        self.why = why


def config_maps(docs):
    """{(namespace, name): data} of the ConfigMaps in the input."""
    return {(d.get("metadata", {}).get("namespace", ""), d.get("metadata", {}).get("name")):
            d.get("data") or {} for d in docs if d.get("kind") == "ConfigMap"}


def environment(container, namespace, maps):
    """{name: value or Unknown} as the kubelet builds it: envFrom first, then env in order,
    each env value expanded with the variables before it."""
    env = {}
    for source in container.get("envFrom", []):
        ref = source.get("configMapRef")
        if ref and (namespace, ref.get("name")) in maps:
            for key, value in maps[(namespace, ref["name"])].items():
                env[source.get("prefix", "") + key] = value
        elif ref:
            why = "envFrom ConfigMap %s (not in the input)" % ref.get("name")
            env.setdefault("*", Unknown(why))
        else:
            env.setdefault("*", Unknown("envFrom Secret %s" % (source.get("secretRef") or {})
                                        .get("name")))
    for entry in container.get("env", []):
        name = entry.get("name")
        if "value" in entry:
            value, unknown = expand(str(entry["value"]), env)
            env[name] = Unknown("env %s uses %s" % (name, unknown.why)) if unknown else value
        elif "valueFrom" in entry:
            env[name] = value_from(name, entry["valueFrom"], namespace, maps)
        else:
            env[name] = ""
    return env


def value_from(name, source, namespace, maps):
    """The value of env `name` given by `valueFrom`, or Unknown saying why not."""
    if "configMapKeyRef" in source:
        ref = source["configMapKeyRef"]
        data = maps.get((namespace, ref.get("name")))
        if data is not None and ref.get("key") in data:
            return data[ref["key"]]
        return Unknown("valueFrom configMapKeyRef %s/%s (%s)" % (
            ref.get("name"), ref.get("key"),
            "ConfigMap not in the input" if data is None else "no such key"))
    if "fieldRef" in source:
        path = source["fieldRef"].get("fieldPath", "")
        if path == "metadata.namespace" and namespace:
            return namespace
        return Unknown("valueFrom fieldRef %s (the pod's, known only when it runs)" % path)
    if "secretKeyRef" in source:
        ref = source["secretKeyRef"]
        return Unknown("valueFrom secretKeyRef %s/%s (Secrets are not read)" % (
            ref.get("name"), ref.get("key")))
    if "resourceFieldRef" in source:
        return Unknown("valueFrom resourceFieldRef %s (the node's, known only when it runs)"
                       % source["resourceFieldRef"].get("resource"))
    return Unknown("valueFrom %s" % ", ".join(sorted(source)))


def expand(arg, env):
    """(arg with $(VAR) expanded as the kubelet does, $$ escapes it, an undefined VAR stays
    as written; the first Unknown met, or None)."""
    unknowns = []

    def one(m):
        if m.group(0) == "$$":
            return "$"
        value = env.get(m.group(1))
        if value is None and "*" in env:  # maybe from an envFrom we cannot read
            value = Unknown("$(%s): %s" % (m.group(1), env["*"].why))
        if isinstance(value, Unknown):
            unknowns.append(value if value.why.startswith("$(") else
                            Unknown("$(%s) from %s" % (m.group(1), value.why)))
            return m.group(0)
        return m.group(0) if value is None else value

    out = re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)", one, arg)
    return out, (unknowns[0] if unknowns else None)


def command_line(container, namespace, maps):
    """[(argument, Unknown or None)] after the program name."""
    env = environment(container, namespace, maps)
    argv = list(container.get("command", [])[1:]) + list(container.get("args", []))
    return [expand(str(a), env) for a in argv]


# ---------------------------------------------------------------------------------------
# The flag table and the offline check.

class Unit:
    """One option as the program reads it (the option and its separate value, if any)."""

    def __init__(self, words, unknown):
        self.words = words
        self.unknown = unknown  # an Unknown in one of the words, or None
        self.problem = None     # why the program refuses it
        self.note = None        # accepted, but worth saying (an ignored flag)

    def text(self):
        return " ".join(self.words)


class FlagTable:
    """One program's --flag-table (common/app/flag_table.h)."""

    def __init__(self, lines):
        self.flags, self.ignored, self.options, self.letters, self.refused = {}, {}, {}, {}, {}
        self.refused_letters = {}
        for line in lines:
            kind, name, *rest = line.split("\t")
            if kind == "flag":
                self.flags[name.replace("_", "-")] = rest[0]
            elif kind == "ignored":
                self.ignored[name] = (rest[0] == "value", rest[1])
            elif kind == "option":
                self.options[name] = rest[1]
                if rest[0] != "-":
                    self.letters[rest[0]] = name
            elif kind == "refused":
                self.refused[name] = rest[1]
                if rest[0] != "-":
                    self.refused_letters[rest[0]] = name

    def units(self, args):
        """[Unit] of `args` [(word, Unknown or None)], each with its problem, as the
        program's parsers would read them: its own options first, then the Go flags it
        ignores, then gflags."""
        out, i = [], 0
        while i < len(args):
            word, unknown = args[i]
            if word == "--":
                for rest_word, rest_unknown in args[i:]:
                    unit = Unit([rest_word], rest_unknown)
                    unit.problem = "unknown argument: %s" % rest_word
                    out.append(unit)
                break
            unit, i = self.own_option(args, i)
            if unit is None:
                unit, i = self.go_flag(args, i)
            out.append(unit)
        return out

    def take(self, args, i, unit):
        """Appends args[i + 1] to `unit` (a separate value); the next index."""
        if i + 1 >= len(args):
            return i + 1
        word, unknown = args[i + 1]
        unit.words.append(word)
        unit.unknown = unit.unknown or unknown
        return i + 2

    def own_option(self, args, i):
        """(Unit, next index) for an option of the program's own parser; (None, i) when
        args[i] is not one (frontend-cache's options.cc ParseOptions)."""
        word, unknown = args[i]
        value, name, display = None, None, word
        if word.startswith("--"):
            name, _, value = word[2:].partition("=")
            value = value if "=" in word else None
            display = "--" + name
        elif len(word) >= 2 and word[0] == "-":
            name = self.letters.get(word[1])
            display = word[:2]
            if name and len(word) > 2:
                if self.options[name] == "value":
                    value = word[2:]
                else:
                    name = None  # "-kubecfg": a gflags flag, not -k
        kind = self.options.get(name)
        unit = Unit([word], unknown)
        if kind is None:
            refused = self.refused_reason(word, name)
            if refused is None:
                return None, i
            unit.problem = refused
            # Its separate value, if any, belongs to it (--dhcp-range 10.0.0.2,10.0.0.9).
            if "=" not in word and i + 1 < len(args) and not args[i + 1][0].startswith("-"):
                return unit, self.take(args, i, unit)
            return unit, i + 1
        if kind == "flag" and value is not None:
            unit.problem = "%s takes no value" % display
        elif kind == "value" and value is None:
            if i + 1 == len(args):
                unit.problem = "%s needs a value" % display
            return unit, self.take(args, i, unit)
        return unit, i + 1

    def refused_reason(self, word, name):
        """The program's line for a refused option, or None when `word` is not one."""
        if word.startswith("--"):
            why = self.refused.get(name)
        elif len(word) == 2:
            name = self.refused_letters.get(word[1])
            why = self.refused.get(name)
        else:
            return None
        if why is None:
            return None
        if self.letters:  # frontend-cache's refused dnsmasq options (options.cc)
            return "--%s (dnsmasq) is not supported by frontend-cache: %s" % (name, why)
        return why  # kubedns's: the flag is its own (--federations)

    def go_flag(self, args, i):
        """(Unit, next index) for a gflags flag, an ignored Go flag, or a stray word."""
        word, unknown = args[i]
        unit = Unit([word], unknown)
        if len(word) < 2 or word[0] != "-":
            unit.problem = "unknown argument: %s" % word
            return unit, i + 1
        bare = word[2:] if word.startswith("--") else word[1:]
        name, has_value, value = bare.partition("=")
        ignored = self.ignored.get(name.replace("_", "-"))
        if ignored:
            takes_value, why = ignored
            nxt = self.take(args, i, unit) if takes_value and not has_value else i + 1
            unit.note = "%s is ignored: %s" % (unit.text(), why)
            return unit, nxt
        kind = self.flags.get(name.replace("_", "-"))
        if kind is None and name.startswith("no") and not has_value and \
                self.flags.get(name[2:].replace("_", "-")) == "bool":
            return unit, i + 1
        if kind is None:
            unit.problem = "unknown command line flag '%s'" % name
            return unit, i + 1
        if kind == "bool":
            if has_value and value.lower() not in BOOL_WORDS and not unknown:
                unit.problem = "illegal value '%s' specified for bool flag '%s'" % (value, name)
            return unit, i + 1
        nxt = i + 1
        if not has_value:
            if i + 1 == len(args):
                unit.problem = "flag '%s' is missing its argument" % name
                return unit, nxt
            nxt = self.take(args, i, unit)
            value = unit.words[-1]
        if not unit.unknown and not value_fits(kind, value):
            unit.problem = "illegal value '%s' specified for %s flag '%s'" % (value, kind, name)
        return unit, nxt


def value_fits(kind, value):
    try:
        if kind in ("int32", "int64", "uint64", "uint32"):
            number = int(value, 0)
            return number >= 0 or not kind.startswith("uint")
        if kind == "double":
            float(value)
    except ValueError:
        return False
    return True


def table_lines(program):
    return [line for line in FLAG_TABLES[program].splitlines() if line]


def read_binary_table(bin_dir, program):
    result = subprocess.run([os.path.join(bin_dir, program), "--flag-table"],
                            capture_output=True, text=True, timeout=30,
                            stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        sys.exit("check_flags: %s --flag-table: exit %d: %s" % (
            program, result.returncode, result.stderr.strip()))
    return result.stdout


# ---------------------------------------------------------------------------------------
# The binaries' own check (--bin).

class BinaryCheck:
    def __init__(self, bin_dir):
        self.bin_dir = bin_dir

    def check(self, program, words):
        """(ok, the program's message)."""
        env = dict(os.environ, GLOG_logtostderr="1")
        path = os.path.join(self.bin_dir, program)
        try:
            result = subprocess.run([path, "--check-flags"] + list(words),
                                    capture_output=True, text=True, timeout=30,
                                    stdin=subprocess.DEVNULL, env=env)
        except OSError as e:
            sys.exit("check_flags: cannot run %s: %s" % (path, e))
        lines = [line for line in (result.stdout + result.stderr).splitlines()
                 if line.strip() and "is ignored: " not in line]
        return result.returncode == 0, (lines[-1] if lines else "exit %d" % result.returncode)

    def judge(self, program, units, context=()):
        """Sets each unit's problem from the program's --check-flags: the whole line first,
        then, when it fails, each unit alone. Units with an unknown value keep the table's
        verdict (their name)."""
        known = [u for u in units if not u.unknown]
        words = [w for u in known for w in u.words]
        ok, message = self.check(program, list(context) + words)
        if ok:
            for unit in known:
                unit.problem = None
            return
        found = False
        for unit in known:
            unit_ok, unit_message = self.check(program, list(context) + unit.words)
            unit.problem = None if unit_ok else unit_message
            found = found or not unit_ok
        if not found and known:  # only the combination fails (--min-cache-ttl > --max-cache-ttl)
            combined = Unit(words, None)
            combined.problem = message
            units.append(combined)


# ---------------------------------------------------------------------------------------

def check_container(container, namespace, maps, binaries):
    """(program, [Unit]) or (None, None) when no kdns program replaces the container. Units
    of the nanny's child are prefixed "(to frontend-cache)"."""
    program = program_of(container)
    if program is None:
        return None, None
    args = command_line(container, namespace, maps)
    own, child = args, []
    if program == "nanny":
        words = [w for w, _ in args]
        if "--" in words:
            own, child = args[:words.index("--")], args[words.index("--") + 1:]
    units = FlagTable(table_lines(program)).units(own)
    child_units = FlagTable(table_lines("frontend-cache")).units(child)
    if binaries:
        binaries.judge(program, units)
        binaries.judge("frontend-cache", child_units)
    for unit in child_units:
        unit.words[0] = "(to frontend-cache) " + unit.words[0]
    return program, units + child_units


def write_table(bin_dir):
    """Rewrites this file's FLAG_TABLES from the binaries in bin_dir."""
    path = os.path.abspath(__file__)
    text = open(path).read()
    begin = text.index("\n" + TABLE_BEGIN + "\n") + len(TABLE_BEGIN) + 1
    end = text.index("\n" + TABLE_END + "\n") + 1
    body = "\nFLAG_TABLES = {\n"
    for program in PROGRAMS:
        body += "    %r: (\n" % program
        for line in read_binary_table(bin_dir, program).splitlines():
            body += "        %s\n" % json.dumps(line + "\n")
        body += "    ),\n"
    body += "}\n"
    with open(path, "w") as f:
        f.write(text[:begin] + body + text[end:])


def stale_programs(bin_dir):
    """The programs whose embedded table differs from what the binary prints."""
    return [p for p in PROGRAMS if FLAG_TABLES[p] != read_binary_table(bin_dir, p)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", nargs="?",
                        help="the Deployment (kubectl get -o yaml or json); - for stdin")
    parser.add_argument("--bin", default=os.environ.get("KDNS_BIN"),
                        help="check with the binaries in this directory (default: $KDNS_BIN; "
                             "without either, the embedded flag table)")
    parser.add_argument("--write-table", metavar="DIR",
                        help="regenerate the embedded flag table from DIR's binaries")
    parser.add_argument("--verify-table", metavar="DIR",
                        help="exit 1 when the embedded table differs from DIR's binaries'")
    options = parser.parse_args()
    if options.write_table:
        write_table(options.write_table)
        return 0
    if options.verify_table:
        stale = stale_programs(options.verify_table)
        for program in stale:
            print("check_flags: the embedded flag table of %s differs from %s --flag-table: "
                  "run tools/check_flags.py --write-table %s"
                  % (program, os.path.join(options.verify_table, program), options.verify_table))
        return 1 if stale else 0
    if not options.file:
        parser.error("the Deployment file is needed (- for stdin)")
    try:
        docs = load_documents(options.file)
    except Exception as e:  # noqa: BLE001 - any unreadable input is one line
        print("check_flags: %s: %s" % (options.file, e), file=sys.stderr)
        return 2
    binaries = BinaryCheck(options.bin) if options.bin else None
    maps = config_maps(docs)
    refused = checked = 0
    for doc in docs:
        if not isinstance(doc, dict):
            continue
        metadata = doc.get("metadata", {})
        name = "%s/%s" % (doc.get("kind", "?"), metadata.get("name", "?"))
        for container in pod_spec(doc).get("containers", []):
            program, units = check_container(container, metadata.get("namespace", ""), maps,
                                             binaries)
            if program is None:
                if doc.get("kind") != "ConfigMap":
                    print("%s container %s: image %s is not replaced by a kdns image; "
                          "not checked" % (name, container.get("name"), container.get("image")))
                continue
            checked += 1
            where = "%s container %s (%s)" % (name, container.get("name"), program)
            for unit in units:
                if unit.unknown:
                    print("%s: note: %s: %s is not known offline: only the flag's name is "
                          "checked" % (where, unit.text(), unit.unknown.why))
                if unit.note:
                    print("%s: note: %s" % (where, unit.note))
                if unit.problem:
                    refused += 1
                    print("%s: refused: %s: %s" % (where, unit.text(), unit.problem))
    print("%d container(s) checked, %d argument(s) refused (%s)" % (
        checked, refused, "by the binaries in " + options.bin if options.bin
        else "names, forms and types, by the embedded flag table; --bin DIR checks values too"))
    if checked == 0:
        print("check_flags: no kube-dns container found in %s" % options.file, file=sys.stderr)
        return 2
    return 1 if refused else 0


# What each program's --flag-table prints (common/app/flag_table.h); written by
# --write-table, checked against the binaries by test/e2e/check_flags_test.py.
TABLE_BEGIN, TABLE_END = "# BEGIN FLAG TABLES", "# END FLAG TABLES"
# BEGIN FLAG TABLES
FLAG_TABLES = {
    'kubedns': (
        "flag\talsologtoemail\tstring\n"
        "flag\talsologtostderr\tbool\n"
        "flag\tcolorlogtostderr\tbool\n"
        "flag\tcolorlogtostdout\tbool\n"
        "flag\tdrop_log_memory\tbool\n"
        "flag\tlog_backtrace_at\tstring\n"
        "flag\tlog_dir\tstring\n"
        "flag\tlog_link\tstring\n"
        "flag\tlog_prefix\tbool\n"
        "flag\tlog_utc_time\tbool\n"
        "flag\tlog_year_in_prefix\tbool\n"
        "flag\tlogbuflevel\tint32\n"
        "flag\tlogbufsecs\tint32\n"
        "flag\tlogcleansecs\tint32\n"
        "flag\tlogemaillevel\tint32\n"
        "flag\tlogfile_mode\tint32\n"
        "flag\tlogmailer\tstring\n"
        "flag\tlogtostderr\tbool\n"
        "flag\tlogtostdout\tbool\n"
        "flag\tmax_log_size\tuint32\n"
        "flag\tminloglevel\tint32\n"
        "flag\tstderrthreshold\tint32\n"
        "flag\tstop_logging_if_full_disk\tbool\n"
        "flag\ttimestamp_in_logfile_name\tbool\n"
        "flag\tsymbolize_stacktrace\tbool\n"
        "flag\tv\tint32\n"
        "flag\tvmodule\tstring\n"
        "flag\tflagfile\tstring\n"
        "flag\tfromenv\tstring\n"
        "flag\ttryfromenv\tstring\n"
        "flag\tundefok\tstring\n"
        "flag\ttab_completion_columns\tint32\n"
        "flag\ttab_completion_word\tstring\n"
        "flag\thelp\tbool\n"
        "flag\thelpfull\tbool\n"
        "flag\thelpmatch\tstring\n"
        "flag\thelpon\tstring\n"
        "flag\thelppackage\tbool\n"
        "flag\thelpshort\tbool\n"
        "flag\thelpxml\tbool\n"
        "flag\tversion\tbool\n"
        "flag\tapi_backoff_max\tstring\n"
        "flag\tapi_burst\tint64\n"
        "flag\tapi_qps\tdouble\n"
        "flag\tapi_relist_jitter\tstring\n"
        "flag\tapi_stall_timeout\tstring\n"
        "flag\tapi_watch_list\tbool\n"
        "flag\tautopath\tbool\n"
        "flag\tautopath_search\tstring\n"
        "flag\tcache_dump_address\tstring\n"
        "flag\tcheck_flags\tbool\n"
        "flag\tclient_address_from\tstring\n"
        "flag\tclient_address_option\tint32\n"
        "flag\tclient_rate_burst\tint64\n"
        "flag\tclient_rate_exempt\tstring\n"
        "flag\tclient_rate_limit\tint64\n"
        "flag\tclient_rate_prefix_v4\tint64\n"
        "flag\tclient_rate_prefix_v6\tint64\n"
        "flag\tclient_rate_slip\tint64\n"
        "flag\tconfig_dir\tstring\n"
        "flag\tconfig_map\tstring\n"
        "flag\tconfig_map_namespace\tstring\n"
        "flag\tconfig_period\tstring\n"
        "flag\tdebug_address\tstring\n"
        "flag\tdns_bind_address\tstring\n"
        "flag\tdns_port\tint32\n"
        "flag\tdns_threads\tint32\n"
        "flag\tdomain\tstring\n"
        "flag\tendpoint_pod_names\tbool\n"
        "flag\tendpoints_source\tstring\n"
        "flag\texternal_ns_service\tstring\n"
        "flag\texternal_ttl\tint64\n"
        "flag\texternal_zone\tstring\n"
        "flag\tfederations\tstring\n"
        "flag\tforward_client_reserve\tint32\n"
        "flag\tforward_max\tint32\n"
        "flag\tforward_max_per_route\tint32\n"
        "flag\tforward_max_per_upstream\tint32\n"
        "flag\thealthz_port\tint32\n"
        "flag\thttp_bind_address\tstring\n"
        "flag\timport_max_aliases\tint64\n"
        "flag\timport_max_bytes\tint64\n"
        "flag\timport_max_endpoints\tint64\n"
        "flag\tinitial_sync_timeout\tstring\n"
        "flag\tkube_master_url\tstring\n"
        "flag\tkubecfg_file\tstring\n"
        "flag\tkubeslice_zone\tstring\n"
        "flag\tlabels\tstring\n"
        "flag\tlameduck\tstring\n"
        "flag\tloadbalance\tstring\n"
        "flag\tlog_queries\tbool\n"
        "flag\tlog_queries_extra\tbool\n"
        "flag\tlog_queries_rate\tint32\n"
        "flag\tlog_queries_sample\tint32\n"
        "flag\tmax_waiting_queries\tint64\n"
        "flag\tmetrics_compat\tstring\n"
        "flag\tmetrics_port\tint32\n"
        "flag\tmulticluster_zone\tstring\n"
        "flag\tnameservers\tstring\n"
        "flag\tnamespaces\tstring\n"
        "flag\tnotify\tstring\n"
        "flag\tobjects_file\tstring\n"
        "flag\tpod_records\tstring\n"
        "flag\tprometheus_port\tint32\n"
        "flag\treceiver_threads\tstring\n"
        "flag\tresolv_conf\tstring\n"
        "flag\troute_options\tstring\n"
        "flag\trrl_responses_per_second\tint64\n"
        "flag\ttcp_frame_timeout\tstring\n"
        "flag\ttcp_idle_timeout\tstring\n"
        "flag\ttcp_max_connections\tint64\n"
        "flag\ttcp_max_connections_per_source\tint64\n"
        "flag\ttcp_max_output_bytes_per_connection\tint64\n"
        "flag\ttcp_max_output_bytes_total\tint64\n"
        "flag\ttcp_query_timeout\tstring\n"
        "flag\ttls_ca_file\tstring\n"
        "flag\tttl\tint32\n"
        "flag\tupstream_0x20\tstring\n"
        "flag\tzonal\tbool\n"
        "ignored\tprofiling\tbool\tGo's pprof handlers do not exist here\n"
        "ignored\tlog-flush-frequency\tvalue\tglog writes every line to stderr at once\n"
        "ignored\tlog-async\tbool\tglog writes every line to stderr at once\n"
        "ignored\tadd-dir-header\tbool\tklog's and Kubernetes' logging flags have no meaning here: glog logs to stderr (--v, --vmodule, --logtostderr keep theirs)\n"
        "ignored\tlog-file\tvalue\tklog's and Kubernetes' logging flags have no meaning here: glog logs to stderr (--v, --vmodule, --logtostderr keep theirs)\n"
        "ignored\tlog-file-max-size\tvalue\tklog's and Kubernetes' logging flags have no meaning here: glog logs to stderr (--v, --vmodule, --logtostderr keep theirs)\n"
        "ignored\tlog-backtrace-at\tvalue\tklog's and Kubernetes' logging flags have no meaning here: glog logs to stderr (--v, --vmodule, --logtostderr keep theirs)\n"
        "ignored\tone-output\tbool\tklog's and Kubernetes' logging flags have no meaning here: glog logs to stderr (--v, --vmodule, --logtostderr keep theirs)\n"
        "ignored\tskip-headers\tbool\tklog's and Kubernetes' logging flags have no meaning here: glog logs to stderr (--v, --vmodule, --logtostderr keep theirs)\n"
        "ignored\tskip-log-headers\tbool\tklog's and Kubernetes' logging flags have no meaning here: glog logs to stderr (--v, --vmodule, --logtostderr keep theirs)\n"
        "ignored\tlogging-format\tvalue\tklog's and Kubernetes' logging flags have no meaning here: glog logs to stderr (--v, --vmodule, --logtostderr keep theirs)\n"
        "ignored\tpidfile\tvalue\tno PID file is written\n"
        "ignored\tquiet\tbool\tCoreDNS's start-up banner does not exist here\n"
        "ignored\tcorefile\tvalue\tthe kube-dns ConfigMap (-kubednscm) and the flags replace node-cache's Corefile\n"
        "ignored\tinitialdelay\tvalue\tthe node cache sets up its addresses and rules at start\n"
        "ignored\tsetupebtables\tbool\tthe node cache needs no ebtables rules (its NOTRACK rules are iptables or nftables)\n"
        "option\tlog-queries\t-\toptional\n"
        "refused\tfederations\t-\tKubernetes federation v1 is retired and kubedns does not answer its <service>.<namespace>.<federation>.svc names; remove the flag (and the ConfigMap's federations key); for other clusters' names use stubDomains or multicluster Services (clusterset.local)\n"
    ),
    'nanny': (
        "flag\talsologtoemail\tstring\n"
        "flag\talsologtostderr\tbool\n"
        "flag\tcolorlogtostderr\tbool\n"
        "flag\tcolorlogtostdout\tbool\n"
        "flag\tdrop_log_memory\tbool\n"
        "flag\tlog_backtrace_at\tstring\n"
        "flag\tlog_dir\tstring\n"
        "flag\tlog_link\tstring\n"
        "flag\tlog_prefix\tbool\n"
        "flag\tlog_utc_time\tbool\n"
        "flag\tlog_year_in_prefix\tbool\n"
        "flag\tlogbuflevel\tint32\n"
        "flag\tlogbufsecs\tint32\n"
        "flag\tlogcleansecs\tint32\n"
        "flag\tlogemaillevel\tint32\n"
        "flag\tlogfile_mode\tint32\n"
        "flag\tlogmailer\tstring\n"
        "flag\tlogtostderr\tbool\n"
        "flag\tlogtostdout\tbool\n"
        "flag\tmax_log_size\tuint32\n"
        "flag\tminloglevel\tint32\n"
        "flag\tstderrthreshold\tint32\n"
        "flag\tstop_logging_if_full_disk\tbool\n"
        "flag\ttimestamp_in_logfile_name\tbool\n"
        "flag\tsymbolize_stacktrace\tbool\n"
        "flag\tv\tint32\n"
        "flag\tvmodule\tstring\n"
        "flag\tflagfile\tstring\n"
        "flag\tfromenv\tstring\n"
        "flag\ttryfromenv\tstring\n"
        "flag\tundefok\tstring\n"
        "flag\ttab_completion_columns\tint32\n"
        "flag\ttab_completion_word\tstring\n"
        "flag\thelp\tbool\n"
        "flag\thelpfull\tbool\n"
        "flag\thelpmatch\tstring\n"
        "flag\thelpon\tstring\n"
        "flag\thelppackage\tbool\n"
        "flag\thelpshort\tbool\n"
        "flag\thelpxml\tbool\n"
        "flag\tversion\tbool\n"
        "flag\tbasecorefile\tstring\n"
        "flag\tcheck_flags\tbool\n"
        "flag\tchildMode\tstring\n"
        "flag\tchildStopTimeout\tstring\n"
        "flag\tclusterDomain\tstring\n"
        "flag\tconf\tstring\n"
        "flag\tconfigDir\tstring\n"
        "flag\tcrashLoopRestarts\tint32\n"
        "flag\tcrashLoopRuntime\tstring\n"
        "flag\tdnsmasqExec\tstring\n"
        "flag\tfirewall\tstring\n"
        "flag\thealth_port\tint32\n"
        "flag\tinterfacename\tstring\n"
        "flag\tkubednsServer\tstring\n"
        "flag\tkubednsZones\tstring\n"
        "flag\tkubednscm\tstring\n"
        "flag\tlocalip\tstring\n"
        "flag\tlogInterval\tstring\n"
        "flag\tmetrics_listen_address\tstring\n"
        "flag\trestartDnsmasq\tbool\n"
        "flag\trunDir\tstring\n"
        "flag\tsetupinterface\tbool\n"
        "flag\tsetupiptables\tbool\n"
        "flag\tskipteardown\tbool\n"
        "flag\tstubResolveInterval\tstring\n"
        "flag\tsyncInterval\tstring\n"
        "flag\tsyncinterval\tstring\n"
        "flag\tupstreamsvc\tstring\n"
        "ignored\tprofiling\tbool\tGo's pprof handlers do not exist here\n"
        "ignored\tlog-flush-frequency\tvalue\tglog writes every line to stderr at once\n"
        "ignored\tlog-async\tbool\tglog writes every line to stderr at once\n"
        "ignored\tadd-dir-header\tbool\tklog's and Kubernetes' logging flags have no meaning here: glog logs to stderr (--v, --vmodule, --logtostderr keep theirs)\n"
        "ignored\tlog-file\tvalue\tklog's and Kubernetes' logging flags have no meaning here: glog logs to stderr (--v, --vmodule, --logtostderr keep theirs)\n"
        "ignored\tlog-file-max-size\tvalue\tklog's and Kubernetes' logging flags have no meaning here: glog logs to stderr (--v, --vmodule, --logtostderr keep theirs)\n"
        "ignored\tlog-backtrace-at\tvalue\tklog's and Kubernetes' logging flags have no meaning here: glog logs to stderr (--v, --vmodule, --logtostderr keep theirs)\n"
        "ignored\tone-output\tbool\tklog's and Kubernetes' logging flags have no meaning here: glog logs to stderr (--v, --vmodule, --logtostderr keep theirs)\n"
        "ignored\tskip-headers\tbool\tklog's and Kubernetes' logging flags have no meaning here: glog logs to stderr (--v, --vmodule, --logtostderr keep theirs)\n"
        "ignored\tskip-log-headers\tbool\tklog's and Kubernetes' logging flags have no meaning here: glog logs to stderr (--v, --vmodule, --logtostderr keep theirs)\n"
        "ignored\tlogging-format\tvalue\tklog's and Kubernetes' logging flags have no meaning here: glog logs to stderr (--v, --vmodule, --logtostderr keep theirs)\n"
        "ignored\tpidfile\tvalue\tno PID file is written\n"
        "ignored\tquiet\tbool\tCoreDNS's start-up banner does not exist here\n"
        "ignored\tcorefile\tvalue\tthe kube-dns ConfigMap (-kubednscm) and the flags replace node-cache's Corefile\n"
        "ignored\tinitialdelay\tvalue\tthe node cache sets up its addresses and rules at start\n"
        "ignored\tsetupebtables\tbool\tthe node cache needs no ebtables rules (its NOTRACK rules are iptables or nftables)\n"
    ),
    'frontend-cache': (
        "flag\talsologtoemail\tstring\n"
        "flag\talsologtostderr\tbool\n"
        "flag\tcolorlogtostderr\tbool\n"
        "flag\tcolorlogtostdout\tbool\n"
        "flag\tdrop_log_memory\tbool\n"
        "flag\tlog_backtrace_at\tstring\n"
        "flag\tlog_dir\tstring\n"
        "flag\tlog_link\tstring\n"
        "flag\tlog_prefix\tbool\n"
        "flag\tlog_utc_time\tbool\n"
        "flag\tlog_year_in_prefix\tbool\n"
        "flag\tlogbuflevel\tint32\n"
        "flag\tlogbufsecs\tint32\n"
        "flag\tlogcleansecs\tint32\n"
        "flag\tlogemaillevel\tint32\n"
        "flag\tlogfile_mode\tint32\n"
        "flag\tlogmailer\tstring\n"
        "flag\tlogtostderr\tbool\n"
        "flag\tlogtostdout\tbool\n"
        "flag\tmax_log_size\tuint32\n"
        "flag\tminloglevel\tint32\n"
        "flag\tstderrthreshold\tint32\n"
        "flag\tstop_logging_if_full_disk\tbool\n"
        "flag\ttimestamp_in_logfile_name\tbool\n"
        "flag\tsymbolize_stacktrace\tbool\n"
        "flag\tv\tint32\n"
        "flag\tvmodule\tstring\n"
        "flag\tflagfile\tstring\n"
        "flag\tfromenv\tstring\n"
        "flag\ttryfromenv\tstring\n"
        "flag\tundefok\tstring\n"
        "flag\ttab_completion_columns\tint32\n"
        "flag\ttab_completion_word\tstring\n"
        "flag\thelp\tbool\n"
        "flag\thelpfull\tbool\n"
        "flag\thelpmatch\tstring\n"
        "flag\thelpon\tstring\n"
        "flag\thelppackage\tbool\n"
        "flag\thelpshort\tbool\n"
        "flag\thelpxml\tbool\n"
        "flag\tversion\tbool\n"
        "flag\tcheck_flags\tbool\n"
        "ignored\tprofiling\tbool\tGo's pprof handlers do not exist here\n"
        "ignored\tlog-flush-frequency\tvalue\tglog writes every line to stderr at once\n"
        "ignored\tlog-async\tbool\tglog writes every line to stderr at once\n"
        "ignored\tadd-dir-header\tbool\tklog's and Kubernetes' logging flags have no meaning here: glog logs to stderr (--v, --vmodule, --logtostderr keep theirs)\n"
        "ignored\tlog-file\tvalue\tklog's and Kubernetes' logging flags have no meaning here: glog logs to stderr (--v, --vmodule, --logtostderr keep theirs)\n"
        "ignored\tlog-file-max-size\tvalue\tklog's and Kubernetes' logging flags have no meaning here: glog logs to stderr (--v, --vmodule, --logtostderr keep theirs)\n"
        "ignored\tlog-backtrace-at\tvalue\tklog's and Kubernetes' logging flags have no meaning here: glog logs to stderr (--v, --vmodule, --logtostderr keep theirs)\n"
        "ignored\tone-output\tbool\tklog's and Kubernetes' logging flags have no meaning here: glog logs to stderr (--v, --vmodule, --logtostderr keep theirs)\n"
        "ignored\tskip-headers\tbool\tklog's and Kubernetes' logging flags have no meaning here: glog logs to stderr (--v, --vmodule, --logtostderr keep theirs)\n"
        "ignored\tskip-log-headers\tbool\tklog's and Kubernetes' logging flags have no meaning here: glog logs to stderr (--v, --vmodule, --logtostderr keep theirs)\n"
        "ignored\tlogging-format\tvalue\tklog's and Kubernetes' logging flags have no meaning here: glog logs to stderr (--v, --vmodule, --logtostderr keep theirs)\n"
        "ignored\tpidfile\tvalue\tno PID file is written\n"
        "ignored\tquiet\tbool\tCoreDNS's start-up banner does not exist here\n"
        "ignored\tcorefile\tvalue\tthe kube-dns ConfigMap (-kubednscm) and the flags replace node-cache's Corefile\n"
        "ignored\tinitialdelay\tvalue\tthe node cache sets up its addresses and rules at start\n"
        "ignored\tsetupebtables\tbool\tthe node cache needs no ebtables rules (its NOTRACK rules are iptables or nftables)\n"
        "option\tserver\tS\tvalue\n"
        "option\tcache-size\tc\tvalue\n"
        "option\tno-negcache\tN\tflag\n"
        "option\tneg-ttl\t-\tvalue\n"
        "option\tdns-loop-detect\t-\tflag\n"
        "option\tlog-facility\t8\tvalue\n"
        "option\tno-resolv\tR\tflag\n"
        "option\tresolv-file\tr\tvalue\n"
        "option\tdns-forward-max\t0\tvalue\n"
        "option\tlisten-address\ta\tvalue\n"
        "option\tport\tp\tvalue\n"
        "option\tkeep-in-foreground\tk\tflag\n"
        "option\tthreads\t-\tvalue\n"
        "option\treceiver-threads\t-\tvalue\n"
        "option\tmax-cache-ttl\t-\tvalue\n"
        "option\tmin-cache-ttl\t-\tvalue\n"
        "option\tcache-bytes\t-\tvalue\n"
        "option\tcache-entry-max-bytes\t-\tvalue\n"
        "option\tstale-max\t-\tvalue\n"
        "option\tuse-stale-cache\t-\toptional\n"
        "option\tlameduck\t-\tvalue\n"
        "option\troute-options\t-\tvalue\n"
        "option\tservers-file\t-\tvalue\n"
        "option\ttls-ca-file\t-\tvalue\n"
        "option\tprometheus-addr\t-\tvalue\n"
        "option\tprometheus-address\t-\tvalue\n"
        "option\tdebug-address\t-\tvalue\n"
        "option\tmetrics-textfile\t-\tvalue\n"
        "option\tmetrics-compat\t-\tvalue\n"
        "option\tprometheus-port\t-\tvalue\n"
        "option\tprometheus-reuseport\t-\tflag\n"
        "option\tforward-max-per-route\t-\tvalue\n"
        "option\tforward-max-per-upstream\t-\tvalue\n"
        "option\tupstream-0x20\t-\tvalue\n"
        "option\tloadbalance\t-\tvalue\n"
        "option\tforward-client-reserve\t-\tvalue\n"
        "option\ttcp-idle-timeout\t-\tvalue\n"
        "option\ttcp-frame-timeout\t-\tvalue\n"
        "option\ttcp-query-timeout\t-\tvalue\n"
        "option\ttcp-max-connections\t-\tvalue\n"
        "option\ttcp-max-connections-per-source\t-\tvalue\n"
        "option\ttcp-max-output-bytes-per-connection\t-\tvalue\n"
        "option\ttcp-max-output-bytes-total\t-\tvalue\n"
        "option\tmax-waiting-queries\t-\tvalue\n"
        "option\tclient-rate-limit\t-\tvalue\n"
        "option\tclient-rate-burst\t-\tvalue\n"
        "option\tclient-rate-prefix-v4\t-\tvalue\n"
        "option\tclient-rate-prefix-v6\t-\tvalue\n"
        "option\tclient-rate-slip\t-\tvalue\n"
        "option\tclient-rate-exempt\t-\tvalue\n"
        "option\trrl-responses-per-second\t-\tvalue\n"
        "option\tclient-address-to\t-\tvalue\n"
        "option\tnotify-from\t-\tvalue\n"
        "option\tserial-zones\t-\tvalue\n"
        "option\tserial-poll\t-\tvalue\n"
        "option\tclient-address-option\t-\tvalue\n"
        "option\tno-daemon\td\tflag\n"
        "option\tlocal\t-\tvalue\n"
        "option\taddress\tA\tvalue\n"
        "option\tno-hosts\th\tflag\n"
        "option\taddn-hosts\tH\tvalue\n"
        "option\thosts-reload\t-\tvalue\n"
        "option\tlocal-ttl\tT\tvalue\n"
        "option\tdomain-needed\tD\tflag\n"
        "option\tbogus-priv\tb\tflag\n"
        "option\tno-round-robin\t-\tflag\n"
        "option\tfilter-AAAA\t-\tflag\n"
        "option\tstrict-order\to\tflag\n"
        "option\tall-servers\t-\tflag\n"
        "option\tuser\tu\tvalue\n"
        "option\tinterface\ti\tvalue\n"
        "option\tbind-interfaces\tz\tflag\n"
        "option\tno-poll\tn\tflag\n"
        "option\tlog-queries\tq\toptional\n"
        "option\tlog-queries-rate\t-\tvalue\n"
        "option\tlog-queries-sample\t-\tvalue\n"
        "refused\tconf-file\tC\tconfiguration files are not read: give each option on the command line (the nanny adds the ConfigMap's stubDomains and upstreamNameservers as --server)\n"
        "refused\tconf-dir\t7\tconfiguration files are not read: give each option on the command line (the nanny adds the ConfigMap's stubDomains and upstreamNameservers as --server)\n"
        "refused\tconf-script\t-\tconfiguration files are not read: give each option on the command line (the nanny adds the ConfigMap's stubDomains and upstreamNameservers as --server)\n"
        "refused\tdhcp-range\tF\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-host\tG\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-option\tO\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-authoritative\tK\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-leasefile\tl\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tcname\t-\trecords other than A, AAAA and PTR are not served here: put addresses in an --addn-hosts file, or serve the record from kubedns (a Service) or the upstream zone\n"
        "refused\thost-record\t-\trecords other than A, AAAA and PTR are not served here: put addresses in an --addn-hosts file, or serve the record from kubedns (a Service) or the upstream zone\n"
        "refused\tptr-record\t-\trecords other than A, AAAA and PTR are not served here: put addresses in an --addn-hosts file, or serve the record from kubedns (a Service) or the upstream zone\n"
        "refused\ttxt-record\tY\trecords other than A, AAAA and PTR are not served here: put addresses in an --addn-hosts file, or serve the record from kubedns (a Service) or the upstream zone\n"
        "refused\tsrv-host\tW\trecords other than A, AAAA and PTR are not served here: put addresses in an --addn-hosts file, or serve the record from kubedns (a Service) or the upstream zone\n"
        "refused\tmx-host\tm\trecords other than A, AAAA and PTR are not served here: put addresses in an --addn-hosts file, or serve the record from kubedns (a Service) or the upstream zone\n"
        "refused\tnaptr-record\t-\trecords other than A, AAAA and PTR are not served here: put addresses in an --addn-hosts file, or serve the record from kubedns (a Service) or the upstream zone\n"
        "refused\tcaa-record\t-\trecords other than A, AAAA and PTR are not served here: put addresses in an --addn-hosts file, or serve the record from kubedns (a Service) or the upstream zone\n"
        "refused\tdns-rr\t-\trecords other than A, AAAA and PTR are not served here: put addresses in an --addn-hosts file, or serve the record from kubedns (a Service) or the upstream zone\n"
        "refused\tsynth-domain\t-\trecords other than A, AAAA and PTR are not served here: put addresses in an --addn-hosts file, or serve the record from kubedns (a Service) or the upstream zone\n"
        "refused\tinterface-name\t-\trecords other than A, AAAA and PTR are not served here: put addresses in an --addn-hosts file, or serve the record from kubedns (a Service) or the upstream zone\n"
        "refused\texpand-hosts\tE\thosts-file names are served as written: write the full names in the --addn-hosts file\n"
        "refused\tdomain\ts\thosts-file names are served as written: write the full names in the --addn-hosts file\n"
        "refused\tdnssec\t-\tDNSSEC is validated by the upstream resolver: frontend-cache passes the DO and CD bits through\n"
        "refused\ttrust-anchor\t-\tDNSSEC is validated by the upstream resolver: frontend-cache passes the DO and CD bits through\n"
        "refused\tdnssec-check-unsigned\t-\tDNSSEC is validated by the upstream resolver: frontend-cache passes the DO and CD bits through\n"
        "refused\tstop-dns-rebind\t-\tDNS rebinding protection is not implemented: drop the option\n"
        "refused\trebind-domain-ok\t-\tDNS rebinding protection is not implemented: drop the option\n"
        "refused\texcept-interface\tI\tname the addresses to serve with --listen-address or --interface instead\n"
        "refused\tquery-port\tQ\tevery upstream query comes from a fresh random port: drop the option\n"
        "refused\tedns-packet-max\tP\tthe EDNS payload advertised is 1232 bytes (DNS flag day 2020): drop the option\n"
        "refused\tmax-ttl\t-\tuse --max-cache-ttl (how long an answer is cached)\n"
        "refused\tfilter-A\t-\tonly --filter-AAAA is implemented\n"
        "refused\tfilter-rr\t-\tonly --filter-AAAA is implemented\n"
        "refused\tbogus-nxdomain\tB\tnot implemented: drop the option\n"
        "refused\tclear-on-reload\t-\tSIGHUP keeps only the cache entries whose route did not change: drop the option\n"
        "refused\trev-server\t-\tuse --server=/<reverse zone>/<ip> instead\n"
        "refused\tgroup\tg\tset runAsGroup in the container's securityContext instead\n"
        "refused\tdhcp-hostsfile\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-optsfile\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-hostsdir\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-optsdir\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\ttag-if\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-userclass\tj\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-circuitid\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-remoteid\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-subscrid\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-pxe-vendor\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-ignore\tJ\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-broadcast\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-boot\tM\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-option-force\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-vendorclass\tU\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-lease-max\tX\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tread-ethers\tZ\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tno-dhcp-interface\t2\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tno-dhcpv6-interface\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tno-dhcpv4-interface\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tbootp-dynamic\t3\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-mac\t4\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tbridge-interface\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tshared-network\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tno-ping\t5\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-script\t6\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-luascript\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-scriptuser\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tscript-arp\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tleasefile-ro\t9\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-ignore-names\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-no-override\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tenable-tftp\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\ttftp-root\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\ttftp-unique-root\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\ttftp-secure\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\ttftp-no-fail\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\ttftp-max\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\ttftp-mtu\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\ttftp-no-blocksize\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\ttftp-lowercase\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\ttftp-port-range\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\ttftp-single-port\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tlog-dhcp\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-match\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-name-match\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-alternate-port\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-fqdn\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-generate-names\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-proxy\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-relay\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tpxe-prompt\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tpxe-service\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-sequential-ip\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-ignore-clid\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-client-update\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tenable-ra\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-duid\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tra-param\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tquiet-dhcp\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tquiet-dhcp6\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tquiet-ra\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-ttl\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-reply-delay\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tdhcp-rapid-commit\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tscript-on-renewal\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tquiet-tftp\t-\tDHCP, BOOTP, TFTP and router advertisements are not served\n"
        "refused\tselfmx\te\trecords other than A, AAAA and PTR are not served here: put addresses in an --addn-hosts file, or serve the record from kubedns (a Service) or the upstream zone\n"
        "refused\tlocalmx\tL\trecords other than A, AAAA and PTR are not served here: put addresses in an --addn-hosts file, or serve the record from kubedns (a Service) or the upstream zone\n"
        "refused\tmx-target\tt\trecords other than A, AAAA and PTR are not served here: put addresses in an --addn-hosts file, or serve the record from kubedns (a Service) or the upstream zone\n"
        "refused\talias\tV\trecords other than A, AAAA and PTR are not served here: put addresses in an --addn-hosts file, or serve the record from kubedns (a Service) or the upstream zone\n"
        "refused\tproxy-dnssec\t-\tDNSSEC is validated by the upstream resolver: frontend-cache passes the DO and CD bits through\n"
        "refused\tdnssec-debug\t-\tDNSSEC is validated by the upstream resolver: frontend-cache passes the DO and CD bits through\n"
        "refused\tdnssec-no-timecheck\t-\tDNSSEC is validated by the upstream resolver: frontend-cache passes the DO and CD bits through\n"
        "refused\tdnssec-timestamp\t-\tDNSSEC is validated by the upstream resolver: frontend-cache passes the DO and CD bits through\n"
        "refused\tdnssec-limits\t-\tDNSSEC is validated by the upstream resolver: frontend-cache passes the DO and CD bits through\n"
        "refused\tauth-server\t-\tauthoritative zones are not served here (kubedns serves the cluster's): serve the zone from an authoritative server and name it in stubDomains\n"
        "refused\tauth-zone\t-\tauthoritative zones are not served here (kubedns serves the cluster's): serve the zone from an authoritative server and name it in stubDomains\n"
        "refused\tauth-ttl\t-\tauthoritative zones are not served here (kubedns serves the cluster's): serve the zone from an authoritative server and name it in stubDomains\n"
        "refused\tauth-soa\t-\tauthoritative zones are not served here (kubedns serves the cluster's): serve the zone from an authoritative server and name it in stubDomains\n"
        "refused\tauth-sec-servers\t-\tauthoritative zones are not served here (kubedns serves the cluster's): serve the zone from an authoritative server and name it in stubDomains\n"
        "refused\tauth-peer\t-\tauthoritative zones are not served here (kubedns serves the cluster's): serve the zone from an authoritative server and name it in stubDomains\n"
        "refused\tfilterwin2k\tf\tnot implemented by frontend-cache: drop the option\n"
        "refused\thostsdir\t-\tnot implemented by frontend-cache: drop the option\n"
        "refused\tport-limit\t-\tevery upstream query comes from a random port of a pool: drop the option\n"
        "refused\tfast-dns-retry\t-\tretries and failover follow frontend-cache's own timers (docs/operators.md, \"Forwarding\"): drop the option\n"
        "refused\tpid-file\tx\tno PID file is written: drop the option\n"
        "refused\tlocalise-queries\ty\tnot implemented by frontend-cache: drop the option\n"
        "refused\tenable-dbus\t1\tnot implemented by frontend-cache: drop the option\n"
        "refused\tenable-ubus\t-\tnot implemented by frontend-cache: drop the option\n"
        "refused\trebind-localhost-ok\t-\tnot implemented by frontend-cache: drop the option\n"
        "refused\tmin-port\t-\tevery upstream query comes from a random port of a pool: drop the option\n"
        "refused\tmax-port\t-\tevery upstream query comes from a random port of a pool: drop the option\n"
        "refused\ttest\t-\tnot implemented by frontend-cache: drop the option\n"
        "refused\tadd-mac\t-\tthe client's address goes only to the upstreams trusted with it, in kdns's own option (--client-address-to): drop the option\n"
        "refused\tstrip-mac\t-\tthe client's address goes only to the upstreams trusted with it, in kdns's own option (--client-address-to): drop the option\n"
        "refused\tadd-subnet\t-\tthe client's address goes only to the upstreams trusted with it, in kdns's own option (--client-address-to): drop the option\n"
        "refused\tstrip-subnet\t-\tthe client's address goes only to the upstreams trusted with it, in kdns's own option (--client-address-to): drop the option\n"
        "refused\tadd-cpe-id\t-\tthe client's address goes only to the upstreams trusted with it, in kdns's own option (--client-address-to): drop the option\n"
        "refused\tconntrack\t-\tnot implemented by frontend-cache: drop the option\n"
        "refused\tdynamic-host\t-\tnot implemented by frontend-cache: drop the option\n"
        "refused\tbind-dynamic\t-\tnot implemented by frontend-cache: drop the option\n"
        "refused\tipset\t-\tnot implemented by frontend-cache: drop the option\n"
        "refused\tnftset\t-\tnot implemented by frontend-cache: drop the option\n"
        "refused\tconnmark-allowlist-enable\t-\tnot implemented by frontend-cache: drop the option\n"
        "refused\tconnmark-allowlist\t-\tnot implemented by frontend-cache: drop the option\n"
        "refused\tlog-debug\t-\tuse --v=1 (glog's verbose logging)\n"
        "refused\tlocal-service\t-\trestrict who reaches the pod with a NetworkPolicy (manifests/components) instead\n"
        "refused\tignore-address\t-\tnot implemented by frontend-cache: drop the option\n"
        "refused\tdumpfile\t-\tnot implemented by frontend-cache: drop the option\n"
        "refused\tdumpmask\t-\tnot implemented by frontend-cache: drop the option\n"
        "refused\tumbrella\t-\tnot implemented by frontend-cache: drop the option\n"
        "refused\tno-ident\t-\tnot implemented by frontend-cache: drop the option\n"
        "refused\tcache-rr\t-\tnot implemented by frontend-cache: drop the option\n"
        "refused\tmax-tcp-connections\t-\tuse --tcp-max-connections (and --tcp-max-connections-per-source)\n"
    ),
    'sidecar': (
        "flag\talsologtoemail\tstring\n"
        "flag\talsologtostderr\tbool\n"
        "flag\tcolorlogtostderr\tbool\n"
        "flag\tcolorlogtostdout\tbool\n"
        "flag\tdrop_log_memory\tbool\n"
        "flag\tlog_backtrace_at\tstring\n"
        "flag\tlog_dir\tstring\n"
        "flag\tlog_link\tstring\n"
        "flag\tlog_prefix\tbool\n"
        "flag\tlog_utc_time\tbool\n"
        "flag\tlog_year_in_prefix\tbool\n"
        "flag\tlogbuflevel\tint32\n"
        "flag\tlogbufsecs\tint32\n"
        "flag\tlogcleansecs\tint32\n"
        "flag\tlogemaillevel\tint32\n"
        "flag\tlogfile_mode\tint32\n"
        "flag\tlogmailer\tstring\n"
        "flag\tlogtostderr\tbool\n"
        "flag\tlogtostdout\tbool\n"
        "flag\tmax_log_size\tuint32\n"
        "flag\tminloglevel\tint32\n"
        "flag\tstderrthreshold\tint32\n"
        "flag\tstop_logging_if_full_disk\tbool\n"
        "flag\ttimestamp_in_logfile_name\tbool\n"
        "flag\tsymbolize_stacktrace\tbool\n"
        "flag\tv\tint32\n"
        "flag\tvmodule\tstring\n"
        "flag\tflagfile\tstring\n"
        "flag\tfromenv\tstring\n"
        "flag\ttryfromenv\tstring\n"
        "flag\tundefok\tstring\n"
        "flag\ttab_completion_columns\tint32\n"
        "flag\ttab_completion_word\tstring\n"
        "flag\thelp\tbool\n"
        "flag\thelpfull\tbool\n"
        "flag\thelpmatch\tstring\n"
        "flag\thelpon\tstring\n"
        "flag\thelppackage\tbool\n"
        "flag\thelpshort\tbool\n"
        "flag\thelpxml\tbool\n"
        "flag\tversion\tbool\n"
        "flag\tcheck_flags\tbool\n"
        "flag\tdnsmasq_addr\tstring\n"
        "flag\tdnsmasq_poll_interval_ms\tint32\n"
        "flag\tdnsmasq_port\tint32\n"
        "flag\tprobe\tstring\n"
        "flag\tprometheus_addr\tstring\n"
        "flag\tprometheus_namespace\tstring\n"
        "flag\tprometheus_path\tstring\n"
        "flag\tprometheus_port\tint32\n"
        "ignored\tprofiling\tbool\tGo's pprof handlers do not exist here\n"
        "ignored\tlog-flush-frequency\tvalue\tglog writes every line to stderr at once\n"
        "ignored\tlog-async\tbool\tglog writes every line to stderr at once\n"
        "ignored\tadd-dir-header\tbool\tklog's and Kubernetes' logging flags have no meaning here: glog logs to stderr (--v, --vmodule, --logtostderr keep theirs)\n"
        "ignored\tlog-file\tvalue\tklog's and Kubernetes' logging flags have no meaning here: glog logs to stderr (--v, --vmodule, --logtostderr keep theirs)\n"
        "ignored\tlog-file-max-size\tvalue\tklog's and Kubernetes' logging flags have no meaning here: glog logs to stderr (--v, --vmodule, --logtostderr keep theirs)\n"
        "ignored\tlog-backtrace-at\tvalue\tklog's and Kubernetes' logging flags have no meaning here: glog logs to stderr (--v, --vmodule, --logtostderr keep theirs)\n"
        "ignored\tone-output\tbool\tklog's and Kubernetes' logging flags have no meaning here: glog logs to stderr (--v, --vmodule, --logtostderr keep theirs)\n"
        "ignored\tskip-headers\tbool\tklog's and Kubernetes' logging flags have no meaning here: glog logs to stderr (--v, --vmodule, --logtostderr keep theirs)\n"
        "ignored\tskip-log-headers\tbool\tklog's and Kubernetes' logging flags have no meaning here: glog logs to stderr (--v, --vmodule, --logtostderr keep theirs)\n"
        "ignored\tlogging-format\tvalue\tklog's and Kubernetes' logging flags have no meaning here: glog logs to stderr (--v, --vmodule, --logtostderr keep theirs)\n"
        "ignored\tpidfile\tvalue\tno PID file is written\n"
        "ignored\tquiet\tbool\tCoreDNS's start-up banner does not exist here\n"
        "ignored\tcorefile\tvalue\tthe kube-dns ConfigMap (-kubednscm) and the flags replace node-cache's Corefile\n"
        "ignored\tinitialdelay\tvalue\tthe node cache sets up its addresses and rules at start\n"
        "ignored\tsetupebtables\tbool\tthe node cache needs no ebtables rules (its NOTRACK rules are iptables or nftables)\n"
    ),
}
# END FLAG TABLES

if __name__ == "__main__":
    sys.exit(main())
