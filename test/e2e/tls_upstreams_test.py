#!/usr/bin/python3
"""DNS over TLS upstreams (tls://ADDRESS[:PORT][@NAME]), end to end, against Debian's
unbound serving DoT on loopback with a certificate from a test CA made here by the openssl
command line.

frontend-cache (--server, and the nanny's upstreamNameservers and stubDomains) and kubedns
(--nameservers) get
answers over tls://, with and without a server name, on one reused connection (counted with
ss); a wrong name, a certificate from a CA not trusted (--tls-ca-file) and a port that does
not speak TLS all fail closed: SERVFAIL, the handshake failure counted in
kdns_*_upstream_tls_handshake_failures_total, and never an answer in the clear.

Closes with `N passed, M failed`. KDNS_KEEP_TMP=1 keeps the temporary directory.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import nanny_env  # noqa: E402
import servers  # noqa: E402

OPENSSL = "/usr/bin/openssl"
WWW = "198.51.100.7"  # www.other.test at unbound (servers.OTHER_TEST)


def openssl(*args, cwd):
    subprocess.run([OPENSSL] + list(args), cwd=cwd, check=True, capture_output=True)


def make_ca(directory, name):
    """A self-signed CA: name.key and name.pem."""
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", name + ".key", "-out", name + ".pem", "-days", "2",
            "-subj", "/CN=kdns test " + name,
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=directory)
    return os.path.join(directory, name + ".pem")


def make_pki(workdir):
    """The test CA, unbound's key and certificate (dns.test and 127.0.0.1) signed by it,
    and a second CA that signed nothing here."""
    directory = os.path.join(workdir, "pki")
    os.makedirs(directory)
    ca = make_ca(directory, "ca")
    other_ca = make_ca(directory, "other-ca")
    with open(os.path.join(directory, "san.ext"), "w") as f:
        f.write("subjectAltName=DNS:dns.test,IP:127.0.0.1\n")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=dns.test",
            cwd=directory)
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "san.ext",
            cwd=directory)
    return {"ca": ca, "other_ca": other_ca, "key": os.path.join(directory, "server.key"),
            "pem": os.path.join(directory, "server.pem")}


def connections(pid, port):
    """Established TCP connections of process `pid` to 127.0.0.1:`port`."""
    ss = subprocess.run(["ss", "-Htnp", "state", "established", "dport", "=", ":%d" % port],
                        capture_output=True, text=True)
    return [line for line in ss.stdout.splitlines() if "pid=%d," % pid in line]


def answers(got):
    return got.rdatas("A")


def check_reused(server, dig, port, p, what):
    """www.other.test and five names unbound does not have answered, over one TLS
    connection of `server` to `port`."""
    got = dig("www.other.test")
    if got.status != "NOERROR" or answers(got) != [WWW]:
        p.append("%s: www.other.test: %s, want NOERROR %s" % (what, got, WWW))
    for i in range(5):
        got = dig("n%d.other.test" % i)
        if got.status != "NXDOMAIN":
            p.append("%s: n%d.other.test: %s, want NXDOMAIN from unbound" % (what, i, got))
    mine = connections(server.process.pid, port)
    if len(mine) != 1:
        p.append("%s: six queries over %d TLS connections, want 1: %s" % (
            what, len(mine), mine))


def test_frontend_cache_asks_over_tls_with_a_server_name(env):
    unbound, pki = env["unbound"], env["pki"]
    upstream = "tls://127.0.0.1#%d@dns.test" % unbound.tls_port
    fe = servers.FrontendCache(env["workdir"], "fe-named", "--tls-ca-file=" + pki["ca"],
                               "--server=" + upstream, threads=1)
    env["owned"].append(fe)
    p = []
    check_reused(fe, fe.dig, unbound.tls_port, p, "frontend-cache")
    series = 'kdns_frontend_upstream_queries_total{upstream="%s"}' % upstream
    if fe.metric(series) < 6:
        p.append("%s is %s, want >= 6" % (series, fe.metric(series)))
    if fe.metric("kdns_frontend_upstream_tls_handshake_failures_total") != 0:
        p.append("a handshake failure was counted")
    return p


def test_frontend_cache_resumes_tls_sessions(env):
    """An unbound that closes idle connections after 200 ms: each query after the first
    opens a new connection, which resumes the TLS session the first one made (as CoreDNS's
    forward does), counted in kdns_frontend_upstream_tls_resumed_total."""
    pki = env["pki"]
    unbound = servers.Unbound(env["workdir"], "unbound-idle", tls=(pki["key"], pki["pem"]),
                              extra="  tcp-idle-timeout: 200\n")
    env["owned"].append(unbound)
    upstream = "tls://127.0.0.1#%d@dns.test" % unbound.tls_port
    fe = servers.FrontendCache(env["workdir"], "fe-resume", "--tls-ca-file=" + pki["ca"],
                               "--server=" + upstream, threads=1)
    env["owned"].append(fe)
    p = []
    for i in range(3):
        got = fe.dig("resume%d.other.test" % i)  # a new name each time: a miss
        if got.status != "NXDOMAIN":
            p.append("resume%d.other.test: %s, want NXDOMAIN from unbound" % (i, got))
        if not harness.wait_until(lambda: not connections(fe.process.pid, unbound.tls_port),
                                  10):
            p.append("unbound kept the connection open past its tcp-idle-timeout")
    series = 'kdns_frontend_upstream_tls_resumed_total{upstream="%s"}' % upstream
    if fe.metric(series) != 2:
        p.append("%s is %s, want 2 (three connections, the first a full handshake)"
                 % (series, fe.metric(series)))
    if fe.metric("kdns_frontend_upstream_tls_handshake_failures_total") != 0:
        p.append("a handshake failure was counted")
    return p


def test_frontend_cache_checks_the_ip_without_a_name(env):
    unbound, pki = env["unbound"], env["pki"]
    fe = servers.FrontendCache(env["workdir"], "fe-ip", "--tls-ca-file=" + pki["ca"],
                               "--server=tls://127.0.0.1#%d" % unbound.tls_port, threads=1)
    env["owned"].append(fe)
    got = fe.dig("www.other.test")
    if got.status != "NOERROR" or answers(got) != [WWW]:
        return ["tls://127.0.0.1 (the certificate's IP address): %s" % got]
    return []


def fails_closed(fe, upstream, p, what, counted=True):
    got = fe.dig("www.other.test", timeout=12)
    if got.status != "SERVFAIL":
        p.append("%s: %s, want SERVFAIL" % (what, got))
    if not counted:
        return
    series = ('kdns_frontend_upstream_tls_handshake_failures_total{upstream="%s"}'
              % upstream)
    if not harness.wait_until(lambda: fe.metric(series) >= 1, 5):
        p.append("%s: %s is %s, want >= 1" % (what, series, fe.metric(series)))


def test_frontend_cache_fails_closed(env):
    unbound, pki, workdir = env["unbound"], env["pki"], env["workdir"]
    p = []
    cases = [
        ("the wrong name", pki["ca"], "tls://127.0.0.1#%d@wrong.test" % unbound.tls_port, True),
        ("an untrusted CA", pki["other_ca"], "tls://127.0.0.1#%d@dns.test" % unbound.tls_port,
         True),
        # unbound's plain port answers DNS over TCP: any fallback to the clear would answer.
        # It reads our ClientHello as the start of a long DNS message and waits for the rest:
        # a timeout, not a failed handshake.
        ("a port without TLS", pki["ca"], "tls://127.0.0.1#%d@dns.test" % unbound.port, False),
    ]
    for i, (what, ca, upstream, counted) in enumerate(cases):
        fe = servers.FrontendCache(workdir, "fe-bad-%d" % i, "--tls-ca-file=" + ca,
                                   "--server=" + upstream, threads=1)
        env["owned"].append(fe)
        fails_closed(fe, upstream, p, what, counted)
        if i == 0:
            marked_down(fe, p, what)
    return p


def marked_down(fe, p, what):
    """Failed tries make the upstream failed; its background probe's handshake fails as a
    probe timeout would, and the upstream is down: queries fail at once."""
    down = 'kdns_frontend_servfail_total{reason="upstream_down"}'

    def is_down():
        return fe.dig("www.other.test", timeout=12).status == "SERVFAIL" and fe.metric(down) >= 1
    if not harness.wait_until(is_down, 30, interval=0.5):
        p.append("%s: the upstream was never marked down (%s is %s)" % (
            what, down, fe.metric(down)))


def test_frontend_cache_refuses_a_ca_file_it_cannot_read(env):
    fe = servers.FrontendCache(env["workdir"], "fe-no-ca",
                               "--tls-ca-file=" + os.path.join(env["workdir"], "missing.pem"),
                               "--server=tls://127.0.0.1", wait=False)
    env["owned"].append(fe)
    code = fe.process.wait(10)
    if code in (None, 0) or "--tls-ca-file" not in fe.process.log():
        return ["a missing --tls-ca-file: exit %s, log %s" % (code, fe.process.log()[-500:])]
    return []


def test_kubedns_asks_over_tls(env):
    unbound, pki, workdir = env["unbound"], env["pki"], env["workdir"]
    objects = os.path.join(workdir, "objects.json")
    with open(objects, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": []}, f)
    resolv = os.path.join(workdir, "resolv.conf")
    with open(resolv, "w") as f:
        f.write("# no nameserver\n")
    common = ["--objects-file=" + objects, "--resolv-conf=" + resolv]
    good = "tls://127.0.0.1#%d@dns.test" % unbound.tls_port
    kd = servers.Kubedns(workdir, "kubedns-tls", *common, "--tls-ca-file=" + pki["ca"],
                         "--nameservers=tls://127.0.0.1:%d@dns.test" % unbound.tls_port,
                         threads=1)
    env["owned"].append(kd)
    p = []
    check_reused(kd, lambda name: harness.dig(kd.port, name), unbound.tls_port, p, "kubedns")
    if kd.metric('kdns_kubedns_upstream_queries_total{upstream="%s"}' % good) < 6:
        p.append("kubedns: the tls:// upstream's label %s counts %s queries, want >= 6" % (
            good, kd.metric('kdns_kubedns_upstream_queries_total{upstream="%s"}' % good)))
    bad = "tls://127.0.0.1#%d@wrong.test" % unbound.tls_port
    kd_bad = servers.Kubedns(workdir, "kubedns-tls-bad", *common, "--tls-ca-file=" + pki["ca"],
                             "--nameservers=tls://127.0.0.1:%d@wrong.test" % unbound.tls_port,
                             threads=1)
    env["owned"].append(kd_bad)
    got = harness.dig(kd_bad.port, "www.other.test", timeout=12)
    if got.status != "SERVFAIL":
        p.append("kubedns, the wrong name: %s, want SERVFAIL" % got)
    series = 'kdns_kubedns_upstream_tls_handshake_failures_total{upstream="%s"}' % bad
    if kd_bad.metric(series) < 1:
        p.append("kubedns: %s is %s, want >= 1" % (series, kd_bad.metric(series)))
    return p


def test_nanny_routes_configmap_tls_upstreams(env):
    """upstreamNameservers and stubDomains with tls://IP:PORT@NAME reach frontend-cache
    through the nanny's servers file; --tls-ca-file goes after the nanny's --."""
    unbound, pki, workdir = env["unbound"], env["pki"], env["workdir"]
    config = harness.ConfigMapDir(os.path.join(workdir, "nanny-config"))
    upstream = "tls://127.0.0.1:%d@dns.test" % unbound.tls_port
    config.publish({"upstreamNameservers": json.dumps([upstream]),
                    "stubDomains": json.dumps({"stub.test": [upstream]})})
    port = harness.free_port()
    nanny = nanny_env.Nanny(workdir, "nanny-tls", config.path, metrics=False, port=port,
                            child_args=["-k", "--port=%d" % port, "--listen-address=127.0.0.1",
                                        "--threads=1", "--log-facility=-",
                                        "--tls-ca-file=" + pki["ca"]])
    env["owned"].append(nanny)
    p = []
    got = harness.dig(port, "www.other.test")
    if got.status != "NOERROR" or answers(got) != [WWW]:
        p.append("upstreamNameservers %s: %s" % (upstream, got))
    got = harness.dig(port, "x.stub.test")
    if got.status != "NXDOMAIN":
        p.append("stubDomains stub.test over %s: %s, want unbound's NXDOMAIN" % (upstream, got))
    child = nanny.child()
    mine = connections(child, unbound.tls_port) if child else []
    if len(mine) != 1:
        p.append("frontend-cache (pid %s) holds %d TLS connections to unbound, want 1: %s" % (
            child, len(mine), mine))
    return p


TESTS = [test_frontend_cache_asks_over_tls_with_a_server_name,
         test_frontend_cache_resumes_tls_sessions,
         test_frontend_cache_checks_the_ip_without_a_name,
         test_frontend_cache_fails_closed,
         test_frontend_cache_refuses_a_ca_file_it_cannot_read,
         test_kubedns_asks_over_tls,
         test_nanny_routes_configmap_tls_upstreams]


def setup(workdir, owned):
    pki = make_pki(workdir)
    unbound = servers.Unbound(workdir, tls=(pki["key"], pki["pem"]))
    owned.append(unbound)
    return {"pki": pki, "unbound": unbound}


def main():
    return harness.main("kdns-tls-upstreams-", TESTS,
                        tools=(os.path.join(harness.BIN, "frontend-cache"),
                               os.path.join(harness.BIN, "kubedns"), nanny_env.NANNY,
                               servers.UNBOUND, OPENSSL),
                        setup=setup)


if __name__ == "__main__":
    sys.exit(main())
