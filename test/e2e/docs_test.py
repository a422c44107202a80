#!/usr/bin/python3
"""The docs are true (issue 35, item 8): every flag and metric name that README.md, docs/,
the programs' READMEs and CHANGELOG.md mention exists.

- Flags: every `--name` (in code spans and blocks also node-cache's or the nanny's
  `-name`, three letters or more) is a flag, an option or a refused option of one of the
  programs, as their `--flag-table` prints it (a `--name-` ending in a dash: a prefix of
  one; a `-suffix` right after `--a-b-c`: `--a-b-suffix`, as in "`--client-rate-limit`,
  `-burst`"), or one of OUTSIDE_GFLAGS, read before gflags (checked in its source file).
  Not ours: a code span or code-block line (with its continuation lines) that starts with
  another program's command (EXTERNAL_COMMANDS: `kubectl apply --server-side`), and
  EXTERNAL_FLAGS, each with the program it belongs to (none of them may be ours).
  One-letter options (dnsmasq's short forms, kubectl's `-n`) are not checked.
- Metrics: every kdns_*, coredns_*, skydns_*, kubedns_* and process_* name is a family that
  the programs serve, all running here in the modes that show the most families (kubedns
  following the fake API server, whose first EndpointSlice LIST is refused and whose watches
  end after a second, with --metrics-compat=coredns, both multicluster zones, autopath,
  NOTIFY and fake_upstream's answer, SERVFAIL and silence to forward to; a kubedns on an
  objects file; the nanny with frontend-cache; a frontend-cache with
  --metrics-compat=coredns; the sidecar, and one whose probe that upstream never answers),
  each asked a few questions first; histogram samples (_bucket, _sum, _count) name their
  family. A name ending in `*` or `_`, or followed by "prefix" (the `skydns_skydns` prefix)
  or `<` (`kubedns_probe_<label>`), is the start of served names. `{a,b}` inside a name is
  two names; at the end it is label names or two names (one reading must hold); `{k="v"}` is
  a series' labels. Families the programs cannot show here are in NOT_SERVED_HERE with the
  mode that serves them (or why never), each a string literal (or two joined) in the
  programs' sources and not served here, so the list cannot go stale. Old names in
  CHANGELOG.md (what a rename replaced) are in RENAMED, allowed there only. Names outside
  these namespaces are other exporters' (cAdvisor's container_*, kube-state-metrics' kube_*,
  Prometheus's up) and not checked; CoreDNS's names are ours under --metrics-compat=coredns,
  so the docs may name only those kdns exports.
- `limit` labels: every `limit="x"` and every value in a table column headed `limit` is
  one of common/limits/limits.cc's names (kdns_limit_hits_total's labels).
- Numbers: the Default column of every flag table (the guide's "Flags", "Limits", the
  READMEs') is what the program declares (gflags' --helpxml), for each flag whose default
  is a plain value (frontend-cache's dnsmasq options have none there); the ports the
  programs tables of docs/operators.md and docs/design.md give each container are the
  ones it declares in manifests/.

Each failure names the doc, its line and the name. Closes with `N passed, M failed`.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import kustomize  # noqa: E402
import manifests  # noqa: E402
import pod  # noqa: E402
import servers  # noqa: E402

sys.path.insert(0, os.path.join(harness.ROOT, "tools"))
import check_flags  # noqa: E402
from fake_upstream import FakeUpstream  # noqa: E402

ROOT = harness.ROOT
PROGRAMS = ("kubedns", "frontend-cache", "nanny", "sidecar")
DOCS = ["README.md", "CHANGELOG.md", "docs/operators.md", "docs/design.md",
        "docs/runbooks.md", "docs/releasing.md", "frontend-cache/README.md",
        "kubedns/README.md", "nanny/README.md", "sidecar/README.md", "manifests/README.md",
        "tools/README.md"]
SOURCE_DIRS = ("common", "kubedns", "frontend-cache", "nanny", "sidecar")

# A code span or code-block line that starts with one of these is another program's command
# line: its flags are that program's.
EXTERNAL_COMMANDS = {
    "kubectl", "docker", "git", "make", "dig", "kdig", "curl", "promtool", "kubeadm", "helm",
    "capsh", "setcap", "nft", "iptables", "ip6tables", "ip", "sysctl", "dnsperf", "kustomize",
    "python3", "tools/check_flags.py", "check_flags", "tools/corefile2kdns", "corefile2kdns",
    "dnsmasq", "getent", "ss", "perf", "valgrind", "clang-format", "clang-tidy", "apt-get",
}
# Flags named alone in the docs that belong to another program.
EXTERNAL_FLAGS = {
    # kubectl
    "--force-conflicts": "kubectl apply", "--prune": "kubectl apply",
    "--target": "kubectl debug",
    # kubeadm and the kubelet
    "--skip-phases": "kubeadm upgrade apply", "--allowed-unsafe-sysctls": "kubelet",
    "--cluster-dns": "kubelet",
    # docker
    "--rm": "docker run",
    # the cluster-proportional-autoscaler of the kube-dns addon
    "--default-params": "cluster-proportional-autoscaler",
    # tools/check_flags.py's and tools/corefile2kdns's own (argparse)
    "--bin": "tools/check_flags.py", "--write-table": "tools/check_flags.py",
    "--verify-table": "tools/check_flags.py", "--json": "tools/corefile2kdns",
    # node-cache's (NodeLocal DNSCache) flags the nanny does not take, named as such
    "-dns.port": "node-cache",
    # the compiler's, in the Makefile
    "-include": "g++/clang++ (Makefile)",
    # not flags: version suffixes (git describe's for uncommitted changes, a release
    # candidate's)
    "-dirty": "git describe's version suffix", "-rc.N": "docs/releasing.md's version suffix",
}
# The docs' words for "any flag" and "any option".
WORDS_FOR_FLAGS = {"--flag", "-flag", "--opt"}
# What the programs read from their command line before gflags (so no --flag-table line):
# name -> where; each checked to be in that source file.
OUTSIDE_GFLAGS = {
    "--flag-table": "common/app/program.cc",
    "--kdns-exec-child": "nanny/exec_trampoline.h",
}

# Families a running program serves only in a mode this suite does not start, or never.
NOT_SERVED_HERE = {
    "skydns_skydns_dns_cachemiss_count_total":
        "never: kube-dns's labelled family, registered, but kubedns has no such cache",
    "kdns_nodelocal_firewall_info": "the nanny in node-local mode (root, a node's netns)",
    "kdns_nodelocal_interface_ok": "the nanny in node-local mode",
    "kdns_nodelocal_repairs_total": "the nanny in node-local mode",
    "kdns_nodelocal_rules_ok": "the nanny in node-local mode",
    "kdns_nodelocal_sync_errors_total": "the nanny in node-local mode",
    "kdns_nodelocal_tcp_migrate_req": "the nanny in node-local mode",
}
# Old names a rename replaced: allowed in CHANGELOG.md only (new name, where).
RENAMED = {
    "kdns_kubedns_kubekubeslice_service_imports": "kdns_kubedns_kubeslice_service_imports",
}


# ---------------------------------------------------------------------------------------
# What the docs mention.

def expand_braces(text):
    """`a_{b,c}_d` -> [a_b_d, a_c_d] (the first group; recursively the rest)."""
    m = re.search(r"\{([^{}]*,[^{}]*)\}", text)
    if not m:
        return [text]
    out = []
    for choice in m.group(1).split(","):
        out += expand_braces(text[:m.start()] + choice.strip() + text[m.end():])
    return out


def code_pieces(path, prose_too=False):
    """(line number, text) of each code span (which may wrap) and code-block line (joined
    with the lines it continues onto with a trailing backslash) of a markdown file; with
    `prose_too`, also each line's text outside them, as (-line number, text)."""
    with open(os.path.join(ROOT, path)) as f:
        lines = f.read().split("\n")
    in_block, prose, joined = False, [], None
    for number, line in enumerate(lines, 1):
        if line.lstrip().startswith("```"):
            in_block = not in_block
            continue
        if not in_block:
            prose.append((number, line))
            continue
        joined = (joined[0], joined[1] + " " + line.strip()) if joined else (number, line.strip())
        if not line.rstrip().endswith("\\"):
            yield joined
            joined = None
    # Code spans, which may wrap over lines of one paragraph.
    text = "\n".join(line for _, line in prose)
    starts = [0]
    for _, line in prose:
        starts.append(starts[-1] + len(line) + 1)
    for m in re.finditer(r"`([^`]+)`", text):
        if "\n\n" not in m.group(1):
            index = next(i for i in range(len(prose)) if starts[i + 1] > m.start())
            yield prose[index][0], m.group(1).replace("\n", " ")
    if prose_too:
        blanked = re.sub(r"`[^`]+`", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
        for (number, _), line in zip(prose, blanked.split("\n")):
            yield -number, line


def command_of(piece):
    """The first word of a code piece, past a prompt, `sudo` and env assignments."""
    words = [w for w in re.split(r"\s+", piece.strip().lstrip("$# ")) if w]
    while words and (words[0] in ("sudo", "env", "-") or re.match(r"^\w+=", words[0])):
        words.pop(0)
    return words[0] if words else ""


FLAG = re.compile(r"(?<![\w/.$:<>-])(--?[A-Za-z][\w.-]*\w-?)")


def flag_mentions():
    """(doc, line number, flag, the double-dash flag named before it in that doc) of every
    flag the docs mention."""
    for doc in DOCS:
        previous = None
        pieces = sorted(code_pieces(doc, prose_too=True), key=lambda p: abs(p[0]))
        for number, piece in pieces:
            in_prose, number = number < 0, abs(number)
            if not in_prose and command_of(piece) in EXTERNAL_COMMANDS:
                continue
            for expanded in expand_braces(piece):
                for flag in FLAG.findall(expanded):
                    # In prose only `--name`: a single dash there is mostly a hyphen.
                    if flag.startswith("--") or (len(flag) > 3 and not in_prose):
                        yield doc, number, flag, previous
                    if flag.startswith("--"):
                        previous = flag


METRIC = re.compile(r"(?<![\w/.-])((?:kdns|coredns|skydns|kubedns|process)_[a-z0-9_*]*"
                    r"(?:\{[^}\s]*\}[a-z0-9_*]*)*)")


def metric_mentions():
    """(doc, line number, mention) of every metric name the docs mention (a file name such
    as kubedns_server.cc is not one)."""
    for doc in DOCS:
        with open(os.path.join(ROOT, doc)) as f:
            for number, line in enumerate(f, 1):
                for m in METRIC.finditer(line):
                    if re.match(r"[\w.]*\.(cc|h|py|md|yaml|sh|json)\b", line[m.end():]):
                        continue
                    if re.match(r"[\w.]*\.(cc|h|py|md|yaml|sh|json)\b", line[m.start():]):
                        continue
                    # "the `skydns_skydns` prefix", `kubedns_probe_<label>_*`: a prefix.
                    prefix = re.match(r"`?\s*prefix|<", line[m.end():])
                    yield doc, number, m.group(1) + ("*" if prefix else "")


def readings(mention):
    """The lists of names a mention may mean: braces as alternatives, and a trailing `{...}`
    as label names. A `{...}` with `=` or a quote in it is a series' labels."""
    mention = re.sub(r"\{[^}]*[=\"][^}]*\}", "", mention)
    out = [expand_braces(mention)]
    trailing = re.match(r"^(.*?)(\{[^}]*\})+$", mention)
    if trailing:
        out.append(expand_braces(trailing.group(1)))
    return out


# ---------------------------------------------------------------------------------------
# What the programs have.

def flag_tables():
    """{program: {every name its --flag-table has: flags, ignored Go flags, dnsmasq options
    taken or refused}}, read by tools/check_flags.py's own reader."""
    tables = {}
    for program in PROGRAMS:
        table = check_flags.FlagTable(
            check_flags.read_binary_table(harness.BIN, program).splitlines())
        tables[program] = (set(table.flags) | {n.replace("_", "-") for n in table.ignored} |
                           set(table.options) | set(table.refused))
    return tables


def default_cell(cell):
    """The value a flag table's Default cell gives: `X`, `X` (note), X (note), X; note, and
    (none...) for an empty one; None for a sentence (not checked)."""
    if re.match(r"(\(none|empty \(none\)|none;)", cell):
        return ""
    m = re.match(r"`([^`$]*)`(\s*\(.*\))?$", cell) or re.match(r"([\w./:]+)(\s*[(;].*)?$", cell)
    return m.group(1) if m else None


# Where a doc's flag table is about one program: the guide's sections by their heading, the
# programs' READMEs.
SECTION_PROGRAMS = {"### kubedns": "kubedns", "### frontend-cache": "frontend-cache",
                    "### nanny": "nanny", "### sidecar": "sidecar", "## Node-local mode": "nanny",
                    "## ": None, "### ": None}
README_PROGRAMS = {"%s/README.md" % p: p for p in PROGRAMS}


def row_defaults(flag_cell, default_cell_text):
    """[(flag name, default)] of a table row: one flag and its value, or several flags
    (`--a`, `--b`) with one value for all or one each (`1`, `2`)."""
    if not re.fullmatch(r"`--?[\w-]+`(, `--?[\w-]+`)*", flag_cell):
        return []
    names = re.findall(r"`--?([\w-]+)`", flag_cell)
    pieces = default_cell_text.split(", ")
    if len(names) > 1 and len(pieces) == len(names):
        values = [default_cell(piece) for piece in pieces]
    else:
        values = [default_cell(default_cell_text)] * len(names)
    return [(name, value) for name, value in zip(names, values) if value is not None]


def documented_defaults():
    """(doc, line number, program or None, flag name, default) of every table row naming
    flags in its first cell and plain values under a `Default` header."""
    for doc in DOCS:
        program, column = README_PROGRAMS.get(doc), None
        with open(os.path.join(ROOT, doc)) as f:
            for number, line in enumerate(f, 1):
                if doc not in README_PROGRAMS and line.startswith("#"):
                    program = next((p for h, p in SECTION_PROGRAMS.items()
                                    if line.startswith(h)), program)
                if not line.startswith("|"):
                    column = None
                    continue
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                if column is None:
                    column = next((i for i, c in enumerate(cells) if c == "Default"), -1)
                    continue
                if 0 <= column < len(cells):
                    for name, value in row_defaults(cells[0], cells[column]):
                        yield doc, number, program, name, value


def has_flag(names, flag, previous=None):
    """Whether `flag` is in `names`; a `-suffix` after `--a-b-c` may stand for `--a-b-suffix`
    or `--a-suffix` (`--client-rate-limit`, `-burst`)."""
    if previous and not flag.startswith("--"):
        stem = previous.lstrip("-").split("=")[0].split("-")
        if any(has_flag(names, "--" + "-".join(stem[:cut]) + flag)
               for cut in range(1, len(stem))):
            return True
    name = flag.lstrip("-").replace("_", "-")
    if name.endswith("-"):
        return any(n.startswith(name) for n in names)
    return name in names


def in_sources(name, literals):
    """Whether a string literal of the sources is `name`, or one is its start and another
    (`_...`) its end (`prefix + "_dns_cachemiss_count_total"`)."""
    return name in literals or any(
        name[:cut] in literals and name[cut:] in literals
        for cut in range(1, len(name)) if name[cut] == "_")


def source_literals():
    """Every string literal that looks like a metric name in the programs' non-test sources."""
    found = set()
    for top in SOURCE_DIRS:
        for base, _, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if name.endswith((".cc", ".h")) and not name.endswith("_test.cc"):
                    with open(os.path.join(base, name)) as f:
                        found |= set(re.findall(r'"([a-z_][a-z0-9_]*)"', f.read()))
    return found


# kubedns with every family it can show on its own: the API source (the kdns_kubedns_api_*
# families), CoreDNS's names, both multicluster zones, autopath and NOTIFY; its upstream
# (--nameservers) is added.
KUBEDNS_FLAGS = ["--metrics-compat=coredns", "--multicluster-zone=clusterset.local.",
                 "--kubeslice-zone=slice.local.", "--pod-records=verified", "--autopath",
                 "--notify=127.0.0.1:9"]
# Names outside the cluster, asked of kubedns: answered, SERVFAIL, never answered
# (fake_upstream's kinds by first label); the last is also what the failing probe asks.
OUTSIDE_NAMES = ["x.example", "servfail-1.example", "silent-1.example"]


class Programs:
    """The four programs running on free loopback ports, in the modes that show the most
    families: the pod (kubedns with CoreDNS's names and both multicluster zones, the nanny
    with frontend-cache, the sidecar) and a frontend-cache with CoreDNS's names."""

    def __init__(self, workdir):
        objects = os.path.join(ROOT, "test", "conformance", "objects.json")
        # Watches end after a second (kdns_kubedns_api_watch_restarts_total).
        self.fake = servers.FakeApiserver(os.path.join(workdir, "fake"), "--objects", objects,
                                          "--max-watch-timeout", "1")
        self.pod = self.cache = self.objects_kubedns = self.failing_sidecar = None
        self.upstream = None
        try:
            self.upstream = FakeUpstream()
            # The first EndpointSlice LIST refused (kdns_kubedns_api_errors_total).
            self.fake.control("/control/fault/http", {
                "status": 403, "count": 1, "verb": "list",
                "path_prefix": "/apis/discovery.k8s.io/v1/endpointslices"})
            self.pod = pod.Pod(workdir, ["--kubecfg-file=" + self.fake.info["kubeconfig"]],
                               kubedns_flags=KUBEDNS_FLAGS + [
                                   "--nameservers=127.0.0.1:%d" % self.upstream.port])
            self.cache = servers.FrontendCache(
                workdir, "compat-cache", "--metrics-compat=coredns",
                "--server=127.0.0.1#%d" % self.pod.kubedns.port)
            # A sidecar whose probe the upstream never answers
            # (kdns_sidecar_probe_failures_total).
            self.failing_sidecar_port = harness.free_port()
            self.failing_sidecar = harness.Process(
                [os.path.join(harness.BIN, "sidecar"), "--logtostderr",
                 "--dnsmasq-addr=127.0.0.1", "--dnsmasq-port=%d" % self.pod.nanny.port,
                 "--prometheus-addr=127.0.0.1",
                 "--prometheus-port=%d" % self.failing_sidecar_port,
                 "--probe=nothing,127.0.0.1:%d,%s,1,A" % (self.upstream.port,
                                                          OUTSIDE_NAMES[-1])],
                os.path.join(workdir, "failing-sidecar.log"))
            # The objects-file source (kdns_objects_file_*).
            self.objects_kubedns = servers.Kubedns(workdir, "objects-kubedns",
                                                   "--objects-file=" + objects)
        except Exception:
            self.stop()
            raise
        self.ask()

    def ask(self):
        """A few questions through each server, so that labelled families have series; the
        names outside the cluster not through the pod's cache, whose default upstream is
        this machine's resolv.conf."""
        cluster = [(pod.CLUSTER_NAME, "A"), (pod.CLUSTER_NAME, "A"),
                   ("nothing.default.svc.cluster.local", "A"), (pod.CLUSTER_NAME, "SRV")]
        outside = [(name, "A") for name in OUTSIDE_NAMES]
        for port, names in ((self.pod.kubedns.port, cluster + outside),
                            (self.pod.nanny.port, cluster), (self.cache.port, cluster + outside)):
            for name, qtype in names:
                harness.dig(port, name, qtype, timeout=2)

    def wait_for_failures(self):
        """Until a watch has ended and been restarted, and the failing probe failed."""
        for port, series, process in (
                (self.pod.kubedns.metrics_port, "kdns_kubedns_api_watch_restarts_total{",
                 self.pod.kubedns.process),
                (self.failing_sidecar_port, "kdns_sidecar_probe_failures_total{",
                 self.failing_sidecar)):
            if not harness.wait_until(lambda: series in harness.http_get(port, "/metrics")[2],
                                      20, ignore=(OSError,)):
                raise RuntimeError("no %s: %s" % (series, process.log()[-1500:]))

    def families(self):
        """{family name} of every /metrics, from `# TYPE` lines and samples."""
        names = set()
        for port in (self.pod.kubedns.metrics_port, self.pod.nanny.metrics_port,
                     self.pod.sidecar_port, self.cache.metrics_port,
                     self.objects_kubedns.metrics_port, self.failing_sidecar_port):
            status, _, body = harness.http_get(port, "/metrics")
            if status != 200:
                raise RuntimeError("/metrics on %d: %s" % (port, status))
            for line in body.splitlines():
                m = re.match(r"# TYPE (\S+)", line) or re.match(r"([a-zA-Z_:][\w:]*)", line)
                if m:
                    names.add(m.group(1))
        return names | {re.sub(r"_(bucket|sum|count)$", "", n) for n in names}

    def stop(self):
        harness.stop_all([p for p in (self.fake, self.upstream, self.pod, self.cache,
                                      self.objects_kubedns, self.failing_sidecar)
                          if p is not None])


# ---------------------------------------------------------------------------------------
# The checks.

def test_every_flag_the_docs_name_exists(env):
    names = set().union(*env["tables"].values())
    problems = []
    for doc, number, flag, previous in flag_mentions():
        if flag in EXTERNAL_FLAGS or flag in WORDS_FOR_FLAGS or flag in OUTSIDE_GFLAGS:
            continue
        if has_flag(names, flag, previous):
            continue
        problems.append("%s:%d names %s, which no program's --flag-table has" %
                        (doc, number, flag))
    return problems


def test_external_flags_are_not_ours(env):
    """EXTERNAL_FLAGS stays true: none is a program's, each tool's is the tool's, and each is
    named in a doc."""
    names = set().union(*env["tables"].values())
    problems = ["EXTERNAL_FLAGS lists %s, which %s has" % (flag, ", ".join(
        p for p, t in env["tables"].items() if has_flag(t, flag)))
        for flag in EXTERNAL_FLAGS if has_flag(names, flag)]
    for flag, owner in EXTERNAL_FLAGS.items():
        if owner.startswith("tools/"):  # ours too: the tool must take it
            with open(os.path.join(ROOT, owner)) as f:
                if '"%s"' % flag not in f.read():
                    problems.append("EXTERNAL_FLAGS: %s does not take %s" % (owner, flag))
    named = {flag for _, _, flag, _ in flag_mentions()}
    problems += ["EXTERNAL_FLAGS lists %s, which no doc names: take it out" % flag
                 for flag in EXTERNAL_FLAGS if flag not in named]
    return problems


def known_metric(name, served):
    """A family; a name ending in `*` or `_`, the start of families' names."""
    if not name.endswith(("*", "_")):
        return name in served
    prefix = name.rstrip("*").rstrip("_") + "_"
    return any(s.startswith(prefix) for s in served)


def test_every_metric_the_docs_name_exists(env):
    served = env["served"] | set(NOT_SERVED_HERE)
    problems = []
    for doc, number, mention in metric_mentions():
        def holds(names):
            return all(known_metric(n, served) or (doc == "CHANGELOG.md" and n in RENAMED)
                       for n in names)
        if not any(holds(names) for names in readings(mention)):
            missing = [n for n in readings(mention)[-1] if not known_metric(n, served)]
            problems.append("%s:%d names %s, which no program serves" %
                            (doc, number, ", ".join(missing) or mention))
    return problems


def test_mode_only_families_are_in_the_sources(env):
    """NOT_SERVED_HERE stays true: each name is in the sources and not served here."""
    literals = source_literals()
    problems = []
    for name, mode in NOT_SERVED_HERE.items():
        if not in_sources(name, literals):
            problems.append("NOT_SERVED_HERE lists %s (%s), which no source file names" %
                            (name, mode))
        if name in env["served"]:
            problems.append("NOT_SERVED_HERE lists %s, which is served here: take it out" %
                            name)
    for name, new in RENAMED.items():
        if name in env["served"] or new not in env["served"]:
            problems.append("RENAMED: %s -> %s, but the old name is served or the new one "
                            "is not" % (name, new))
    return problems


def test_flags_outside_gflags_are_in_the_sources(env):
    problems = []
    for flag, path in OUTSIDE_GFLAGS.items():
        with open(os.path.join(ROOT, path)) as f:
            if '"%s"' % flag not in f.read():
                problems.append("OUTSIDE_GFLAGS: %s does not read %s" % (path, flag))
    return problems


def test_flag_tables_give_the_defaults(env):
    """A documented default is what the program declares (gflags' --helpxml): the section's
    program, or any program that has the flag elsewhere. frontend-cache's dnsmasq options
    (parsed by frontend-cache itself, not gflags) declare no default and are not checked."""
    problems = []
    for doc, number, program, name, value in documented_defaults():
        programs = [program] if program else PROGRAMS
        have = {p: env["defaults"][p][name] for p in programs if name in env["defaults"][p]}
        # -1 is an int flag's "not given" (kubedns's --metrics-port, --prometheus-port).
        if value == "" and "-1" in have.values():
            continue
        if have and value not in have.values():
            problems.append("%s:%d gives --%s's default as %r; the program's: %s" % (
                doc, number, name, value,
                ", ".join("%s %r" % item for item in sorted(have.items()))))
    return problems


def limit_names():
    """The `limit` label's values: common/limits/limits.cc's kNames, in Limit's order."""
    with open(os.path.join(ROOT, "common", "limits", "limits.cc")) as f:
        text = f.read()
    block = re.search(r"kNames = \{(.*?)\};", text, re.S)
    if not block:
        raise AssertionError("common/limits/limits.cc has no kNames = {...};")
    return set(re.findall(r'"([a-z0-9_]+)"', block.group(1)))


def limit_mentions():
    """(doc, line number, value) of every `limit` label value the docs give: limit="x", and
    each code span in a table column headed `limit`."""
    for doc in DOCS:
        column = None
        with open(os.path.join(ROOT, doc)) as f:
            for number, line in enumerate(f, 1):
                for value in re.findall(r'\blimit="([^"]*)"', line):
                    yield doc, number, value
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                if not line.startswith("|"):
                    column = None
                elif column is None:
                    column = next((i for i, c in enumerate(cells) if c.startswith("`limit`")),
                                  -1)
                elif 0 <= column < len(cells) and not set(line.strip()) <= set("|- :"):
                    for value in re.findall(r"`([a-z0-9_]+)`", cells[column]):
                        if not METRIC.fullmatch(value):  # a metric the row points at
                            yield doc, number, value


def test_every_limit_label_the_docs_name_exists(env):
    names = limit_names()
    return ["%s:%d names limit=\"%s\", which common/limits/limits.cc does not have" %
            (doc, number, value) for doc, number, value in limit_mentions()
            if value not in names]


# The container of the kube-dns pod that runs each program (frontend-cache: the nanny's
# child), for the tables that list ports by program.
PROGRAM_CONTAINERS = {"kubedns": "kubedns", "frontend-cache": "dnsmasq", "nanny": "dnsmasq",
                      "sidecar": "sidecar"}


def test_ports_tables_are_the_manifests(env):
    """Each port a `Ports` column gives a container (docs/operators.md) or a program
    (docs/design.md, by folder) is a port that container declares in manifests/."""
    rendered = manifests.Rendered(*kustomize.render(manifests.MANIFESTS))
    declared = {}
    for container, _, number, _ in manifests.declared_ports(
            rendered.kube_dns()["spec"]["template"]["spec"]):
        declared.setdefault(container, set()).add(number)
    problems, checked = [], 0
    for doc in ("docs/operators.md", "docs/design.md"):
        column = None
        with open(os.path.join(ROOT, doc)) as f:
            for number, line in enumerate(f, 1):
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                if not line.startswith("|"):
                    column = None
                elif column is None:
                    column = cells.index("Ports") if "Ports" in cells else -1
                elif column >= 0 and not set(line.strip()) <= set("|- :"):
                    name = cells[0].strip("`/")
                    container = name if name in declared else PROGRAM_CONTAINERS.get(name)
                    if container is None:
                        continue
                    for port in re.findall(r"(?<![\w.])(\d{2,5})(?![\w.])", cells[column]):
                        checked += 1
                        if int(port) not in declared[container]:
                            problems.append("%s:%d gives %s port %s; manifests/ declares %s" % (
                                doc, number, name, port, sorted(declared[container])))
    if not checked:
        problems.append("no Ports table found in docs/operators.md or docs/design.md")
    return problems


TESTS = [test_every_flag_the_docs_name_exists,
         test_ports_tables_are_the_manifests,
         test_flag_tables_give_the_defaults,
         test_flags_outside_gflags_are_in_the_sources,
         test_external_flags_are_not_ours,
         test_every_metric_the_docs_name_exists,
         test_every_limit_label_the_docs_name_exists,
         test_mode_only_families_are_in_the_sources]


def setup(workdir, owned):
    programs = Programs(workdir)
    owned.append(programs)
    programs.wait_for_failures()
    return {"tables": flag_tables(), "defaults": {p: manifests.flag_defaults(p) for p in PROGRAMS},
            "served": programs.families()}


def main():
    return harness.main("kdns-docs-", TESTS, setup=setup)


if __name__ == "__main__":
    sys.exit(main())
