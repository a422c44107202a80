#!/usr/bin/python3
"""Port 53 without root, as the manifests ask for it, checked against the kernel.

The dnsmasq container's nanny (the cache image's entrypoint) binds the pod's DNS port and
hands the sockets to frontend-cache. Each case runs the real nanny with the rendered
manifest's own dnsmasq arguments, in a network namespace of its own, started the way a
container runtime starts a container process: the pod's sysctls written in the new
namespace, the bounding set cut to capabilities.add, uid/gid from runAsUser/runAsGroup,
no_new_privs for allowPrivilegeEscalation: false, then exec (capsh does each step). A
runtime either hands a non-root process the added capabilities in its permitted set
before the exec (runc as containerd and CRI-O drive it) or empties that set (Docker
Engine's non-root containers, moby/moby#45491); both are run. Cases:

- the base manifest (sysctl net.ipv4.ip_unprivileged_port_start=53, every capability
  dropped but NET_BIND_SERVICE, uid 1001, no_new_privs), with no file capability on the
  binary and whichever runtime: the nanny binds 53 and frontend-cache answers on it;
- the base manifest without the sysctl, the nanny carrying the image's file capability
  (setcap cap_net_bind_service=+ep): under no_new_privs it binds 53 only where the runtime
  already put the capability in the permitted set (a file capability cannot add one); with
  that set emptied the bind fails, and succeeds with privilege escalation allowed (so the
  file capability itself works, and no_new_privs is what stops it);
- uid 0 with only NET_BIND_SERVICE, no sysctl (the guide's alternative under the
  baseline Pod Security Standard): binds 53;
- the high-port component (manifests/components/high-port): no sysctl, no capability, the
  nanny binds 5353 and answers, and the pod's Service, probes and NOTIFY follow the port.

Needs root (network namespaces, changing uid), capsh and setcap; SKIP otherwise (a
missing tool fails under CI=true: mk/deps.sh installs it). Closes with `N passed, M
failed, K skipped`.
"""
import os
import re
import shutil
import subprocess
import sys


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import kustomize  # noqa: E402
import manifests  # noqa: E402

HIGH_PORT = os.path.join(manifests.MANIFESTS, "components", "high-port")
CONFIG_MOUNT = "/etc/k8s/dns/dnsmasq-nanny"
SYSCTL = "net.ipv4.ip_unprivileged_port_start"
# What a runtime hands the process before exec: the added capabilities in its permitted and
# effective sets (runc under containerd or CRI-O), or none (Docker Engine, non-root).
KEEPS_ADDED, EMPTIES = "keeps", "empties"
RUNTIME = {KEEPS_ADDED: "a runtime keeping capabilities.add in the permitted set",
           EMPTIES: "a runtime emptying the permitted set"}


def needs():
    if os.geteuid() != 0:
        return "needs root: a network namespace of its own and a change of uid"
    return None


# What mk/deps.sh installs: missing, it fails the suite under CI=true (harness.main).
TOOLS = [shutil.which(tool) or tool for tool in ("unshare", "capsh", "setcap", "dig", "ip")]


def render(components=()):
    """manifests/ rendered (a manifests.Rendered) with `components`, as an operator's
    overlay outside manifests/ would list them."""
    return manifests.render(components=components)


def container(rendered, name):
    for c in kustomize.pod_spec(rendered.kube_dns())["containers"]:
        if c["name"] == name:
            return c
    raise AssertionError("no container %s" % name)


class CacheContainer:
    """The dnsmasq container of `rendered`: what the runtime applies, and its arguments."""

    def __init__(self, rendered):
        pod = kustomize.pod_spec(rendered.kube_dns())
        c = container(rendered, "dnsmasq")
        pod_sc, sc = pod.get("securityContext", {}), c.get("securityContext", {})
        self.uid = sc.get("runAsUser", pod_sc.get("runAsUser", 0))
        self.gid = sc.get("runAsGroup", pod_sc.get("runAsGroup", 0))
        self.no_new_privs = sc.get("allowPrivilegeEscalation") is False
        caps = sc.get("capabilities", {})
        if caps.get("drop") != ["ALL"]:
            raise AssertionError("dnsmasq drops %s, not ALL: emulate that" % caps.get("drop"))
        self.added = ["cap_" + cap.lower() for cap in caps.get("add", [])]
        self.sysctls = {s["name"]: s["value"] for s in pod_sc.get("sysctls", [])}
        self.port = next(p["containerPort"] for p in c["ports"] if p["name"] == "dns")
        self.args = rendered.argv(c)[1:]  # after the entrypoint (the nanny)


def all_capabilities():
    last = int(open("/proc/sys/kernel/cap_last_cap").read())
    decoded = subprocess.run(["capsh", "--decode=%#x" % ((1 << (last + 1)) - 1)],
                             capture_output=True, text=True, check=True).stdout
    return decoded.strip().split("=", 1)[1].split(",")


def start_as_container(workdir, cache, runtime, nanny, sysctls=None, no_new_privs=None):
    """Runs `nanny` with the container's arguments in a new network namespace, started as
    the runtime would (see the module's doc), then asks frontend-cache version.bind on the
    container's DNS port from inside the namespace; returns (answered, output)."""
    sysctls = cache.sysctls if sysctls is None else sysctls
    no_new_privs = cache.no_new_privs if no_new_privs is None else no_new_privs
    config = os.path.join(workdir, "kube-dns-config")  # the ConfigMap volume, empty
    tmp = os.path.join(workdir, "tmp")  # the emptyDir at /tmp
    for d in (config, tmp):
        os.makedirs(d, exist_ok=True)
    os.chown(tmp, cache.uid, cache.gid)
    args = [a.replace(CONFIG_MOUNT, config) for a in cache.args]
    drop = [c for c in all_capabilities() if c not in cache.added]
    held = ",".join(cache.added) + "+ep" if runtime == KEEPS_ADDED and cache.added else "="
    capsh = (["capsh", "--drop=" + ",".join(drop), "--keep=1", "--gid=%d" % cache.gid,
              "--groups=%d" % cache.gid, "--uid=%d" % cache.uid, "--caps=" + held] +
             (["--no-new-privs"] if no_new_privs else []) + ["--shell=" + nanny, "--"] + args)
    write_sysctls = "".join("echo %s > /proc/sys/%s\n" % (v, n.replace(".", "/"))
                            for n, v in sysctls.items())
    # Wait for the answer (or the nanny's exit), never a fixed time: at most 300 tries.
    script = ("set -u\nip link set lo up\n" + write_sysctls +
              'TMPDIR=%s "$@" > %s/nanny.log 2>&1 &\npid=$!\n' % (tmp, workdir) +
              "for i in $(seq 300); do\n"
              "  out=$(dig +short +tries=1 +time=1 @127.0.0.1 -p %d version.bind CH TXT"
              " | grep '^\"kdns-')\n"
              '  if [ -n "$out" ]; then echo "answer: $out"; break; fi\n'
              '  kill -0 $pid 2>/dev/null || { echo "nanny exited"; break; }\n'
              "  sleep 0.1\n"
              "done\n"
              "kill $pid 2>/dev/null; wait $pid\n" % cache.port)
    r = subprocess.run(["unshare", "--net", "sh", "-c", script, "sh"] + capsh,
                       capture_output=True, text=True, timeout=120)
    with open(os.path.join(workdir, "nanny.log"), errors="replace") as f:
        log = f.read()
    return "answer: " in r.stdout, r.stdout + r.stderr + log[-1500:]


def binaries(workdir, file_capability):
    """The nanny and frontend-cache copied where uid 1001 may run them; the nanny with the
    cache image's file capability when `file_capability`."""
    bin_dir = os.path.join(workdir, "bin-fcap" if file_capability else "bin")
    os.makedirs(bin_dir)
    for program in ("nanny", "frontend-cache"):
        shutil.copy(os.path.join(harness.BIN, program), bin_dir)
    nanny = os.path.join(bin_dir, "nanny")
    if file_capability:
        r = subprocess.run(["setcap", "cap_net_bind_service=+ep", nanny], capture_output=True,
                           text=True)
        if r.returncode != 0:
            raise harness.Skip("setcap failed here (no xattrs?): %s" % r.stderr.strip())
    return nanny


def case(env, name):
    os.chmod(env["workdir"], 0o755)  # uid 1001 runs the binaries under it
    workdir = os.path.join(env["workdir"], name)
    os.makedirs(workdir)
    return workdir


def test_the_base_binds_53_through_the_sysctl_alone(env):
    cache = CacheContainer(render())
    p = []
    if cache.sysctls.get(SYSCTL) != "53" or cache.port != 53:
        p.append("the base asks for %s=%s on port %s: update this test with it"
                 % (SYSCTL, cache.sysctls.get(SYSCTL), cache.port))
    if (cache.uid, cache.no_new_privs) != (1001, True):
        p.append("the base runs dnsmasq as uid %s, no_new_privs %s" % (cache.uid,
                                                                      cache.no_new_privs))
    nanny = binaries(case(env, "base"), file_capability=False)
    for runtime in (EMPTIES, KEEPS_ADDED):
        ok, out = start_as_container(case(env, "base-" + runtime), cache, runtime, nanny)
        if not ok:
            p.append("base manifest, %s, no file capability: no answer on 53:\n%s"
                     % (RUNTIME[runtime], out))
    return p


def test_a_file_capability_cannot_add_under_no_new_privs(env):
    cache = CacheContainer(render())
    nanny = binaries(case(env, "fcap"), file_capability=True)
    # runtime, no_new_privs, whether 53 is bound (without the sysctl).
    expected = [(EMPTIES, True, False), (EMPTIES, False, True), (KEEPS_ADDED, True, True)]
    p = []
    for runtime, nnp, binds in expected:
        ok, out = start_as_container(case(env, "fcap-%s-%s" % (runtime, nnp)), cache, runtime,
                                     nanny, sysctls={}, no_new_privs=nnp)
        if ok != binds:
            p.append("file capability, no sysctl, %s, no_new_privs %s: %s on 53, "
                     "expected %s:\n%s"
                     % (RUNTIME[runtime], nnp, "answered" if ok else "no answer",
                        "an answer" if binds else "none", out))
        elif not ok and "Permission denied" not in out:
            p.append("no answer, but not for the permission: %s" % out)
    return p


def test_root_with_the_capability_binds_53_without_the_sysctl(env):
    """The alternative the guide names for a baseline namespace: uid 0, no sysctl, every
    capability dropped but NET_BIND_SERVICE, no_new_privs. A runtime hands root the added
    capabilities (no runtime empties them for uid 0) and an exec keeps them."""
    cache = CacheContainer(render())
    cache.uid = cache.gid = 0
    nanny = binaries(case(env, "root-bin"), file_capability=False)
    ok, out = start_as_container(case(env, "root"), cache, KEEPS_ADDED, nanny, sysctls={})
    return [] if ok else ["root with NET_BIND_SERVICE, no sysctl: no answer on 53:\n" + out]


def test_the_high_port_component_needs_nothing(env):
    cache = CacheContainer(render([HIGH_PORT]))
    p = []
    if cache.sysctls or cache.added or cache.port != 5353:
        p.append("high-port: sysctls %s, capabilities %s, port %s; want none, none, 5353"
                 % (cache.sysctls, cache.added, cache.port))
    nanny = binaries(case(env, "high-port-bin"), file_capability=False)
    ok, out = start_as_container(case(env, "high-port"), cache, EMPTIES, nanny)
    if not ok:
        p.append("high-port: no answer on %d:\n%s" % (cache.port, out))
    return p


def test_the_high_port_component_moves_every_use_of_the_port(env):
    base, high = render(), render([HIGH_PORT])
    p = []
    service = high.one("Service", "kube-dns")
    for port in service["spec"]["ports"]:
        if port["port"] == 53 and port.get("targetPort") != 5353:
            p.append("Service port %s targets %s, not 5353" % (port["name"],
                                                              port.get("targetPort")))
    pod_ports = {p_["name"]: p_["containerPort"] for p_ in container(high, "dnsmasq")["ports"]}
    if (pod_ports.get("dns"), pod_ports.get("dns-tcp")) != (5353, 5353):
        p.append("dnsmasq's ports: %s" % pod_ports)
    # Every argument that names the cache's port 53 in the base names 5353 in the variant,
    # and frontend-cache is told to listen there.
    for name in ("kubedns", "dnsmasq", "sidecar"):
        before = container(base, name).get("args", [])
        after = container(high, name).get("args", [])
        for arg in after:
            if re.search(r"127\.0\.0\.1[:#]53\b", arg):
                p.append("%s still names port 53: %s" % (name, arg))
        for arg in before:
            if re.search(r"127\.0\.0\.1[:#]53\b", arg):
                moved = re.sub(r"(127\.0\.0\.1[:#])53\b", r"\g<1>5353", arg)
                if moved not in after:
                    p.append("%s: %s did not become %s" % (name, arg, moved))
    if "--port=5353" not in container(high, "dnsmasq")["args"]:
        p.append("frontend-cache is not given --port=5353")
    if "--dnsmasq-port=5353" not in container(high, "sidecar")["args"]:
        p.append("the sidecar does not poll the cache's statistics on 5353")
    # Every changed command line still passes its program's flag check.
    for name in ("kubedns", "dnsmasq", "sidecar"):
        c = container(high, name)
        problem = manifests.check_command(c, high.argv(c), high.program_of(c),
                                          high.image_env(c))
        if problem:
            p.append(problem)
    return p


TESTS = [test_the_base_binds_53_through_the_sysctl_alone,
         test_a_file_capability_cannot_add_under_no_new_privs,
         test_root_with_the_capability_binds_53_without_the_sysctl,
         test_the_high_port_component_needs_nothing,
         test_the_high_port_component_moves_every_use_of_the_port]


if __name__ == "__main__":
    sys.exit(harness.main("kdns-port53-", TESTS, tools=TOOLS, needs=needs, skip_unmet=True))
