"""What the node-local suites share (node_local_test.py, node_local_lifecycle_test.py): a
"node" network and mount namespace (root; the suites are skipped with the reason otherwise)
and what is on it.

The node: `lo` up, holding 10.0.0.2 and fd00::2, where a stand-in central DNS serves
(kubedns on the demo objects, kubedns/demo-cluster.json); routes to the Service ranges; and
kube-proxy emulated by DNAT rules in nat OUTPUT: the kube-dns ClusterIPs 10.96.0.10:53 and
[fd00:96::10]:53 and the kube-dns-upstream ClusterIP 10.96.0.11:53 go to the central DNS
(with nft in `ip`/`ip6 kube-proxy` tables as kube-proxy's nftables mode writes them, or
with iptables and ip6tables: the two backends below, each with its checks of our rules).

The nanny runs as the node-local-dns DaemonSet runs node-cache: -localip
169.254.20.10,10.96.0.10,fd00::a,fd00:96::10 (the link-local addresses and the ClusterIPs of
transparent mode, IPv4 and IPv6: dual-stack in one process), -interfacename lo (this machine
has no dummy link type), -upstreamsvc kube-dns-upstream with
KUBE_DNS_UPSTREAM_SERVICE_HOST=10.96.0.11.
"""
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import servers  # noqa: E402

INSIDE = "KDNS_NODE_LOCAL_NAMESPACES"
CENTRAL = "10.0.0.2"
CENTRAL_V6 = "fd00::2"
# A client's own address on the node (a pod's, in effect): queries to a local address from
# an unbound socket would take that address as their source, and lose it with it.
CLIENT = "10.244.0.5"
CLUSTER_IP = "10.96.0.10"
CLUSTER_IP_V6 = "fd00:96::10"
UPSTREAM_IP = "10.96.0.11"
LINK_LOCAL = "169.254.20.10"
LINK_LOCAL_V6 = "fd00::a"
LOCAL_IPS = [LINK_LOCAL, CLUSTER_IP, LINK_LOCAL_V6, CLUSTER_IP_V6]
HEALTH_PORT = 8080
METRICS_PORT = 9253  # -metrics-listen-address 127.0.0.1:9253 (a namespace of our own)
NAME = "kubernetes.default.svc.cluster.local"
NAME_IP = "10.96.0.1"  # its ClusterIP in the demo objects
SYNC_INTERVAL_S = 1
NFT_TABLE = "kdns-nodelocal"  # its own table is kdns-nodelocal-<id>, owned by the nanny;
# this one, shared, only with -skipteardown (rules that outlive the nanny) or kernels < 5.12


def our_nft_tables():
    """The node caches' tables (`inet kdns-nodelocal-<id>`, `inet kdns-nodelocal`)."""
    listed = sh("nft", "list", "tables").stdout.split()
    return [name for name in listed if name.startswith(NFT_TABLE)]


def nft_table():
    """["inet", name] of the one node cache's table (a name no table has when there is none)."""
    tables = our_nft_tables()
    return ["inet", tables[0] if tables else NFT_TABLE + "-none"]


def sh(*argv, check=True):
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=30, check=check)


def dig_at(server, name=NAME, *options):
    """What dig sees asking `server`:53 once (`options`: +tcp, ...)."""
    run = subprocess.run(["dig", "@" + server, "-p", "53", name, "A", "+time=3", "+tries=1",
                          "+nocookie", "+nostats"] + list(options),
                         capture_output=True, text=True, timeout=30)
    return harness.Answer(run.stdout, run.returncode)


def answers(server):
    answer = dig_at(server)
    return answer.status == "NOERROR" and NAME_IP in answer.rdatas("A")


def health(address=LINK_LOCAL):
    host = "[%s]" % address if ":" in address else address
    try:
        with urllib.request.urlopen("http://%s:%d/health" % (host, HEALTH_PORT), timeout=2) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, ""
    except OSError:
        return None, ""


def metric(series):
    try:
        return harness.metric_sum(harness.scrape_metrics(METRICS_PORT), series)
    except OSError:
        return None


def lo_addresses():
    return sh("ip", "-o", "addr", "show", "dev", "lo").stdout


def addresses_present():
    text = lo_addresses()
    return [ip for ip in LOCAL_IPS if " %s/" % ip in text]


# -- the firewall backends, and kube-proxy emulated in each --------------------------------

class Nftables:
    name = "nftables"
    flag = "auto"  # kube-proxy's nftables table is there: auto must pick nftables

    @staticmethod
    def emulate_kube_proxy():
        rules = "".join("    ip daddr %s %s dport 53 dnat to %s:53\n" % (ip, proto, CENTRAL)
                        for ip in (CLUSTER_IP, UPSTREAM_IP) for proto in ("udp", "tcp"))
        rules6 = "".join("    ip6 daddr %s %s dport 53 dnat to [%s]:53\n" % (CLUSTER_IP_V6, proto,
                                                                           CENTRAL_V6)
                         for proto in ("udp", "tcp"))
        text = "".join("table %s kube-proxy {\n  chain output {\n"
                       "    type nat hook output priority -100; policy accept;\n%s  }\n}\n" %
                       (family, family_rules)
                       for family, family_rules in (("ip", rules), ("ip6", rules6)))
        subprocess.run(["nft", "-f", "-"], input=text, text=True, check=True, timeout=30)

    @staticmethod
    def remove_kube_proxy():
        sh("nft", "delete", "table", "ip", "kube-proxy", check=False)
        sh("nft", "delete", "table", "ip6", "kube-proxy", check=False)

    @staticmethod
    def listing():
        run = sh("nft", "list", "table", *nft_table(), check=False)
        return run.stdout if run.returncode == 0 else ""

    def rules_present(self):
        text = self.listing()
        prerouting = sh("nft", "list", "chain", *nft_table(), "raw-prerouting",
                        check=False).stdout
        return "ip daddr %s udp dport 53 notrack" % CLUSTER_IP in prerouting and all(
            rule in text for rule in (
            "ip daddr %s udp dport 53 notrack" % LINK_LOCAL,
            "ip daddr %s tcp dport 53 notrack" % CLUSTER_IP,
            "ip saddr %s udp sport 53 notrack" % CLUSTER_IP,
            "ip daddr %s tcp dport %d notrack" % (LINK_LOCAL, HEALTH_PORT),
            "ip daddr %s udp dport 53 accept" % CLUSTER_IP,
            "ip6 daddr %s udp dport 53 notrack" % LINK_LOCAL_V6,
            "ip6 saddr %s tcp sport 53 accept" % LINK_LOCAL_V6))

    @staticmethod
    def rules_gone():
        return not our_nft_tables()

    @staticmethod
    def delete_a_rule():
        """False: the table is owned by the nanny, and the kernel refuses another process's
        change (EPERM), so there is nothing to put back."""
        run = sh("nft", "flush", "chain", *nft_table(), "raw-prerouting", check=False)
        return run.returncode == 0

    @staticmethod
    def clean_up():
        # Owned tables went with their nanny; the shared one of -skipteardown stays.
        sh("nft", "delete", "table", "inet", NFT_TABLE, check=False)


def skip_conntrack(ip, proto, direction="-d", port=53):
    bits = "/128" if ":" in ip else "/32"
    port_flag = "--dport" if direction == "-d" else "--sport"
    return [direction, ip + bits, "-p", proto, "-m", proto, port_flag, str(port), "-m", "comment",
            "--comment", "NodeLocal DNS Cache: skip conntrack", "-j", "NOTRACK"]


class Iptables:
    name = "iptables"
    flag = "iptables"

    @staticmethod
    def emulate_kube_proxy():
        for ip in (CLUSTER_IP, UPSTREAM_IP):
            for proto in ("udp", "tcp"):
                sh("iptables", "-t", "nat", "-A", "OUTPUT", "-d", ip, "-p", proto, "--dport", "53",
                   "-j", "DNAT", "--to-destination", CENTRAL + ":53")
        for proto in ("udp", "tcp"):
            sh("ip6tables", "-t", "nat", "-A", "OUTPUT", "-d", CLUSTER_IP_V6, "-p", proto,
               "--dport", "53", "-j", "DNAT", "--to-destination", "[%s]:53" % CENTRAL_V6)

    @staticmethod
    def remove_kube_proxy():
        sh("iptables", "-t", "nat", "-F", "OUTPUT", check=False)
        sh("ip6tables", "-t", "nat", "-F", "OUTPUT", check=False)

    @staticmethod
    def line(rule, chain="PREROUTING"):
        return "-A %s %s" % (chain, " ".join('"%s"' % a if " " in a else a for a in rule))

    def rules_present(self):
        raw = sh("iptables", "-t", "raw", "-S").stdout
        raw6 = sh("ip6tables", "-t", "raw", "-S").stdout
        filter6 = sh("ip6tables", "-t", "filter", "-S").stdout
        return (self.line(skip_conntrack(LINK_LOCAL, "udp")) in raw and
                self.line(skip_conntrack(CLUSTER_IP, "udp")) in raw and
                self.line(skip_conntrack(CLUSTER_IP, "tcp")) in raw and
                self.line(skip_conntrack(CLUSTER_IP, "udp", "-s"), "OUTPUT") in raw and
                self.line(skip_conntrack(LINK_LOCAL_V6, "udp")) in raw6 and
                "-A INPUT -d %s/128 -p tcp -m tcp --dport 53" % LINK_LOCAL_V6 in filter6)

    @staticmethod
    def rules_gone():
        text = "".join(sh(tool, "-t", table, "-S").stdout for tool in ("iptables", "ip6tables")
                       for table in ("raw", "filter"))
        return "NodeLocal DNS Cache" not in text

    def delete_a_rule(self):
        sh("iptables", "-t", "raw", "-D", "PREROUTING", *skip_conntrack(CLUSTER_IP, "udp"))
        return True

    @staticmethod
    def clean_up():
        for tool in ("iptables", "ip6tables"):
            for table in ("raw", "filter"):
                for line in sh(tool, "-t", table, "-S").stdout.splitlines():
                    if "NodeLocal DNS Cache" in line:
                        sh("sh", "-c", "%s -t %s %s" % (tool, table, line.replace("-A", "-D", 1)),
                           check=False)


# -- the node cache ----------------------------------------------------------------------

def start_nanny(env, backend, *extra, wait=True):
    """A node cache as the DaemonSet runs it, with a run directory of its own (two run at
    once during an update). With `wait`, until it is healthy and its /metrics served."""
    workdir = env["workdir"]
    cm = os.path.join(workdir, "kube-dns-cm")
    os.makedirs(cm, exist_ok=True)
    env["nannies"] = env.get("nannies", 0) + 1
    name = "%d-%s" % (env["nannies"], backend.name)
    argv = [os.path.join(harness.BIN, "nanny"), "-localip", ",".join(LOCAL_IPS),
            "-upstreamsvc", "kube-dns-upstream", "-health-port", str(HEALTH_PORT),
            "-syncinterval", "%ds" % SYNC_INTERVAL_S, "-kubednscm", cm, "-interfacename", "lo",
            "--firewall=" + backend.flag,
            "-metrics-listen-address", "127.0.0.1:%d" % METRICS_PORT,
            "-runDir", os.path.join(workdir, "run-" + name), "-conf", "/etc/Corefile",
            "--logtostderr"] + list(extra) + [
            "--", "--cache-size=1000", "--log-facility=-", "--lameduck=500ms"]
    process_env = dict(os.environ, KUBE_DNS_UPSTREAM_SERVICE_HOST=UPSTREAM_IP)
    nanny = harness.Process(argv, os.path.join(workdir, "nanny-%s.log" % name), env=process_env)
    env["owned"].append(nanny)
    env.setdefault("node_caches", []).append(nanny)
    env["nanny"] = nanny
    # Healthy (the cache answers) and its /metrics served (the listener comes up after DNS).
    if wait and not harness.wait_until(lambda: not nanny.alive() or (
            health()[0] == 200 and metric("kdns_nodelocal_rules_ok") is not None), 20):
        raise RuntimeError("the node cache did not become healthy: " + nanny.log()[-2000:])
    return nanny


def serving(nanny):
    """Whether this node cache's rules are in and its frontend-cache reads the sockets (its
    own log: /health and /metrics may be another node cache's during an update)."""
    log = nanny.log()
    return "node-local rules installed" in log and "serving DNS on %s:53" % LINK_LOCAL in log


def set_up_node(workdir, owned):
    """The node: lo with the central DNS's addresses and a client's, routes to the Service
    ranges, the central DNS (kubedns on the demo objects) on 10.0.0.2:53 and
    [fd00::2]:53."""
    sh("ip", "link", "set", "lo", "up")
    sh("ip", "addr", "add", CENTRAL + "/32", "dev", "lo")
    sh("ip", "-6", "addr", "add", CENTRAL_V6 + "/128", "dev", "lo", "nodad")
    sh("ip", "addr", "add", CLIENT + "/32", "dev", "lo")
    sh("ip", "route", "add", "10.96.0.0/12", "dev", "lo")
    sh("ip", "-6", "route", "add", "fd00:96::/64", "dev", "lo")
    objects = os.path.join(harness.ROOT, "kubedns", "demo-cluster.json")
    for name, address in (("central", CENTRAL), ("central-v6", CENTRAL_V6)):
        owned.append(servers.Kubedns(workdir, name, "--dns-bind-address=" + address,
                                     "--objects-file=" + objects, port=53))
        if not answers(address):
            raise RuntimeError("the central DNS does not answer %s at %s" % (NAME, address))
    return {}


def report(env, failed):
    if not failed:
        return
    for name in sorted(os.listdir(env["workdir"])):
        if name.endswith(".log"):
            with open(os.path.join(env["workdir"], name), errors="replace") as f:
                print("--- %s (tail) ---\n%s" % (name, f.read()[-2500:]))


def run_per_backend(env, checks, tests):
    """`tests` once per backend (nftables through auto, then iptables), each on a node with
    kube-proxy's DNAT in that backend and a node cache started; afterwards every node cache
    still running is stopped and the node cleaned of rules and addresses."""
    for backend in (Nftables(), Iptables()):
        print("-- backend %s (--firewall=%s)" % (backend.name, backend.flag))
        backend.emulate_kube_proxy()
        if not (answers(CLUSTER_IP) and answers(CLUSTER_IP_V6)):
            checks.check("kube-proxy emulation (%s) answers the ClusterIP" % backend.name, False)
            continue
        env["backend"] = backend
        try:
            start_nanny(env, backend)
            checks.run(tests, env)
        finally:
            for nanny in env.get("node_caches", []):
                if nanny.alive():
                    nanny.stop()
            backend.clean_up()
            backend.remove_kube_proxy()
            for ip in LOCAL_IPS:
                sh("ip", "addr", "del", ip + ("/128" if ":" in ip else "/32"), "dev", "lo",
                   check=False)


def main(script, prefix, run_phases):
    """Runs `script` again inside a network and mount namespace of its own (root), where
    harness.main runs `run_phases` on the node set_up_node makes; skipped with the reason
    without root or a tool."""
    if os.environ.get(INSIDE):
        return harness.main(prefix, run_phases, setup=set_up_node,
                            tools=[os.path.join(harness.BIN, "nanny"),
                                   os.path.join(harness.BIN, "frontend-cache"),
                                   os.path.join(harness.BIN, "kubedns")],
                            report=report)
    # Tools mk/deps.sh installs: missing, they fail the suite under CI=true (harness.main).
    tools = [shutil.which(tool) or tool
             for tool in ("unshare", "nft", "iptables", "ip6tables", "ip", "dig")]

    def needs():
        if os.geteuid() != 0:
            return "needs root (network namespaces, addresses and firewall rules)"
        return None

    if needs() or any(not os.access(tool, os.X_OK) for tool in tools):
        return harness.main(prefix, [], tools=tools, needs=needs, skip_unmet=True)
    env = dict(os.environ, **{INSIDE: "1", "KDNS_BIN": os.path.abspath(harness.BIN)})
    return subprocess.run(["unshare", "--net", "--mount", "--propagation", "private", "--",
                           harness.PYTHON, os.path.abspath(script)], env=env).returncode
