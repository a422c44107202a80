"""The servers the end-to-end suites start, on top of harness.py: Debian's NSD (the
example.test, reverse and big.test zones), unbound (other.test as local data) and
dnsmasq, unprivileged on free loopback ports in a temporary directory; frontend-cache
and kubedns themselves; and the fake Kubernetes API server (test/fake_apiserver). Each is
ready when its constructor returns (it answers), and stop() stops its process group.
"""
import json
import os
import pwd
import urllib.request

from harness import BIN, PYTHON, ROOT, Process, dig, free_port, free_ports, http_status, \
    metric_sum, scrape_metrics, wait_until

NSD = "/usr/sbin/nsd"
UNBOUND = "/usr/sbin/unbound"
DNSMASQ = "/usr/sbin/dnsmasq"


EXAMPLE_ZONE = """$ORIGIN example.test.
$TTL 3600
@        IN SOA  ns1 hostmaster 2024010101 7200 3600 1209600 3600
@        IN NS   ns1
@        IN MX   10 mail
@        IN TXT  "v=spf1 -all"
ns1      IN A    127.0.0.1
www      IN A    192.0.2.10
www      IN A    192.0.2.11
www      IN AAAA 2001:db8::10
mail     IN A    192.0.2.25
txt      IN TXT  "hello world" "second string"
_http._tcp IN SRV 10 60 80 www
alias    IN CNAME www
chain    IN CNAME alias
outside  IN CNAME www.other.test.
onlytxt  IN TXT  "no address here"
short 300 IN A   192.0.2.12
MiXeD    IN A    192.0.2.44
*.wild   IN A    192.0.2.55
sub      IN NS   ns.sub
ns.sub   IN A    127.0.0.1
"""

REVERSE_ZONE = """$ORIGIN 2.0.192.in-addr.arpa.
$TTL 3600
@   IN SOA ns1.example.test. hostmaster.example.test. 1 7200 3600 1209600 600
@   IN NS  ns1.example.test.
10  IN PTR www.example.test.
25  IN PTR mail.example.test.
"""


def big_zone():
    """bigtxt: TXT records of about 1000 bytes in all (more than 512)."""
    lines = ["$ORIGIN big.test.", "$TTL 3600",
             "@ IN SOA ns1.example.test. hostmaster.example.test. 1 7200 3600 1209600 60",
             "@ IN NS ns1.example.test."]
    for i in range(16):
        lines.append('bigtxt IN TXT "%02d-%s"' % (i, "x" * 50))
    for i in range(40):
        lines.append("many IN A 10.2.0.%d" % (i + 1))
    return "\n".join(lines) + "\n"


def default_zones():
    """(zone, zone file text) of the default NSD: example.test, its reverse, big.test."""
    return [("example.test", EXAMPLE_ZONE), ("2.0.192.in-addr.arpa", REVERSE_ZONE),
            ("big.test", big_zone())]


class Nsd:
    """NSD serving `zones` ((name, zone file text); default: default_zones()), ready once
    it answers the first zone's SOA."""

    def __init__(self, workdir, zones=None, name="nsd"):
        zones = zones or default_zones()
        self.dir = os.path.join(workdir, name)
        os.makedirs(self.dir, exist_ok=True)
        for zone, text in zones:
            with open(os.path.join(self.dir, zone + ".zone"), "w") as f:
                f.write(text)
        last = ""
        for _ in range(5):
            self.port = free_port()
            conf = write_nsd_conf(self.dir, self.port, [zone for zone, _ in zones])
            self.process = Process([NSD, "-d", "-c", conf], os.path.join(self.dir, "nsd.out"))
            if wait_until(lambda: not self.process.alive() or dig(
                    self.port, zones[0][0], "SOA", timeout=1).status == "NOERROR", 20):
                if self.process.alive():
                    return
            last = self.process.log()
            self.process.stop()
        raise RuntimeError("nsd did not start: " + last[-1500:])

    @property
    def address(self):
        return "127.0.0.1#%d" % self.port

    def stop(self):
        self.process.stop()


def write_nsd_conf(directory, port, zones):
    """Writes directory/nsd.conf, NSD on 127.0.0.1@port serving each of `zones` (names) from
    directory/NAME.zone; returns its path. The shell benchmarks write theirs with it too
    (bench_lib.sh nsd_conf)."""
    path = os.path.join(directory, "nsd.conf")
    with open(path, "w") as f:
        f.write(NSD_CONF.format(port=port, dir=directory))
        for zone in zones:
            f.write('zone:\n  name: "%s"\n  zonefile: "%s.zone"\n' % (zone, zone))
    return path


# One server process; response rate limiting (on by default, 200 q/s per /24) off: every
# query comes from 127.0.0.1 here.
NSD_CONF = """server:
  ip-address: 127.0.0.1@{port}
  server-count: 1
  do-ip6: no
  username: ""
  chroot: ""
  zonesdir: "{dir}"
  pidfile: "{dir}/nsd.pid"
  database: ""
  zonelistfile: "{dir}/zone.list"
  xfrdfile: "{dir}/xfrd.state"
  logfile: "{dir}/nsd.log"
  hide-version: yes
  verbosity: 1
  rrl-ratelimit: 0
  rrl-whitelist-ratelimit: 0
remote-control:
  control-enable: no
"""

# unbound's local data by default: other.test.
OTHER_TEST = """  local-zone: "other.test." static
  local-data: "other.test. 3600 IN SOA ns.other.test. hostmaster.other.test. 1 7200 3600 1209600 300"
  local-data: "other.test. 3600 IN NS ns.other.test."
  local-data: "ns.other.test. 3600 IN A 127.0.0.1"
  local-data: "www.other.test. 600 IN A 198.51.100.7"
  local-data: "www.other.test. 600 IN AAAA 2001:db8::7"
  local-data: 'other.test. 600 IN TXT "served by unbound"'
"""


class Unbound:
    """unbound serving `local` (local-zone and local-data lines; default: other.test),
    ready once it answers `probe` (an A query). With `tls` (key file, certificate file),
    also DNS over TLS on 127.0.0.1 and `tls_port`; `extra`: more lines for its server:
    section."""

    def __init__(self, workdir, name="unbound", local=OTHER_TEST, probe="www.other.test",
                 tls=None, extra=""):
        self.dir = os.path.join(workdir, name)
        os.makedirs(self.dir, exist_ok=True)
        last = ""
        for _ in range(5):
            self.port, self.tls_port = free_ports(2)
            conf = os.path.join(self.dir, "unbound.conf")
            with open(conf, "w") as f:
                f.write(UNBOUND_CONF.format(port=self.port, dir=self.dir, local=local))
                if tls:
                    f.write(UNBOUND_TLS_CONF.format(port=self.tls_port, key=tls[0], pem=tls[1]))
                f.write(extra)
            self.process = Process([UNBOUND, "-d", "-c", conf],
                                   os.path.join(self.dir, "unbound.out"))
            if wait_until(lambda: not self.process.alive() or dig(
                    self.port, probe, timeout=1).status == "NOERROR", 20):
                if self.process.alive():
                    return
            last = self.process.log()
            self.process.stop()
        raise RuntimeError("unbound did not start: " + last[-1500:])

    @property
    def address(self):
        return "127.0.0.1#%d" % self.port

    def stop(self):
        self.process.stop()


UNBOUND_CONF = """server:
  interface: 127.0.0.1@{port}
  port: {port}
  do-daemonize: no
  username: ""
  chroot: ""
  directory: "{dir}"
  pidfile: "{dir}/unbound.pid"
  use-syslog: no
  logfile: ""
  num-threads: 1
  do-ip6: no
  do-not-query-localhost: no
  access-control: 127.0.0.0/8 allow
  module-config: "iterator"
{local}remote-control:
  control-enable: no
"""

# Appended for DNS over TLS: a second interface, the TLS one.
UNBOUND_TLS_CONF = """server:
  interface: 127.0.0.1@{port}
  tls-port: {port}
  tls-service-key: "{key}"
  tls-service-pem: "{pem}"
"""


def wait_metrics(process, port, name, timeout=20):
    """Returns once `process` serves /metrics on 127.0.0.1:`port`; raises RuntimeError with
    its log when it exits or `timeout` passes first. The one wait for a metrics port, which
    every server class here and in nanny_env.py uses after its own "answers" wait: a DNS
    answer, readiness, or the DNS server's "serving DNS on" line (logged before the metrics
    listener binds, and before a failed bind makes the process exit) says nothing of it."""
    if not wait_until(lambda: not process.alive() or scrape_metrics(port), timeout,
                      ignore=(OSError,)):
        raise RuntimeError("%s: no metrics on port %d: %s" % (name, port, process.log()[-2000:]))
    if not process.alive():
        raise RuntimeError("%s exited: %s" % (name, process.log()[-2000:]))


class FrontendCache:
    """frontend-cache on 127.0.0.1, a free port, metrics on a free port; with `debug`, the
    debug data (--debug-address) on 127.0.0.1 and a free port of its own."""

    def __init__(self, workdir, name, *args, port=None, metrics=True, wait=True,
                 threads=2, lameduck="0", debug=False):
        # Found together, so no two of them are the same port (each is free on every address).
        fresh = iter(free_ports(3, "0.0.0.0"))
        self.port = port or next(fresh)
        self.metrics_port = next(fresh) if metrics else None
        self.debug_port = next(fresh) if debug else None
        argv = [os.path.join(BIN, "frontend-cache"), "-k", "--no-resolv",
                "--listen-address=127.0.0.1", "--port=%d" % self.port,
                "--threads=%d" % threads, "--lameduck=%s" % lameduck, "--log-facility=-"]
        if metrics:
            argv.append("--prometheus-port=%d" % self.metrics_port)
        if debug:
            argv.append("--debug-address=127.0.0.1:%d" % self.debug_port)
        argv += list(args)
        self.process = Process(argv, os.path.join(workdir, name + ".log"))
        if wait and not wait_until(
                lambda: not self.process.alive() or "serving DNS on" in self.process.log(), 20):
            raise RuntimeError("%s did not start: %s" % (name, self.process.log()[-1500:]))
        if wait and not self.process.alive():
            raise RuntimeError("%s exited: %s" % (name, self.process.log()[-1500:]))
        if wait and metrics:
            wait_metrics(self.process, self.metrics_port, name)

    def metrics(self):
        return scrape_metrics(self.metrics_port)

    def metric(self, series):
        """The sample `series` (name{labels} exactly), or the sum over a family's labels."""
        return metric_sum(self.metrics(), series)

    def dig(self, name, qtype="A", *options, **kw):
        return dig(self.port, name, qtype, None, *options, **kw)

    def chaos(self, name, qtype="TXT", *options):
        return dig(self.port, name, qtype, "CH", *options)

    def stop(self):
        return self.process.stop()


class Kubedns:
    """kubedns on 127.0.0.1, DNS, healthz and metrics on free ports (or the ones given),
    `flags` (its source: --objects-file or --kubecfg-file, and whatever the test needs)
    after ours; with `debug`, the debug data (--debug-address) on a free port of its own.
    With `wait`, ready (/readiness 200) when the constructor returns."""

    def __init__(self, workdir, name, *flags, threads=2, wait=True, debug=False, port=None,
                 healthz=None, metrics_port=None):
        # Found together, so no two of them are the same port.
        fresh = iter(free_ports(4))
        self.port = port or next(fresh)
        self.healthz = healthz or next(fresh)
        self.metrics_port = metrics_port or next(fresh)
        self.debug_port = next(fresh) if debug else None
        argv = [os.path.join(BIN, "kubedns"), "--dns-bind-address=127.0.0.1",
                "--dns-port=%d" % self.port, "--http-bind-address=127.0.0.1",
                "--healthz-port=%d" % self.healthz, "--prometheus-port=%d" % self.metrics_port,
                "--dns-threads=%d" % threads, "--logtostderr"]
        if debug:
            argv.append("--debug-address=127.0.0.1:%d" % self.debug_port)
        argv += list(flags)
        self.process = Process(argv, os.path.join(workdir, name + ".log"))
        if wait and not (wait_until(lambda: not self.process.alive() or self.ready(), 30) and
                         self.process.alive()):
            raise RuntimeError("%s did not become ready: %s" % (name, self.log()[-1500:]))
        if wait:
            wait_metrics(self.process, self.metrics_port, name)

    @property
    def pid(self):
        return self.process.pid

    def wait(self, timeout):
        """Its exit code once it has exited, None when `timeout` passes first."""
        return self.process.wait(timeout)

    def ready(self):
        return http_status(self.healthz, "/readiness", 1) == 200

    def metrics(self):
        return scrape_metrics(self.metrics_port)

    def metric(self, series):
        """The sample `series`, the sum over a family's labels, or over a label prefix."""
        return metric_sum(self.metrics(), series)

    def log(self):
        return self.process.log()

    def stop(self):
        return self.process.stop()


class Dnsmasq:
    """Debian's dnsmasq, unprivileged options, on 127.0.0.1 and a free port."""

    def __init__(self, workdir, name, *args):
        user = pwd.getpwuid(os.getuid()).pw_name
        last = ""
        for _ in range(5):
            self.port = free_port()
            argv = [DNSMASQ, "-k", "-C", "/dev/null", "--no-resolv", "--no-hosts",
                    "--port=%d" % self.port, "--listen-address=127.0.0.1",
                    "--bind-interfaces", "--user=" + user, "--pid-file=",
                    "--log-facility=-"] + list(args)
            self.process = Process(argv, os.path.join(workdir, name + ".log"))
            if wait_until(lambda: not self.process.alive() or dig(
                    self.port, "version.bind", "TXT", "CH", timeout=1).status == "NOERROR", 20):
                if self.process.alive():
                    return
            last = self.process.log()
            self.process.stop()
        raise RuntimeError("dnsmasq did not start: " + last[-1500:])

    def stop(self):
        return self.process.stop()


class FakeApiserver:
    """test/fake_apiserver as a subprocess in `workdir` (its PKI, kubeconfigs, log), ready
    once it has written its ready file (atomically, after its servers listen); `info` is
    that file's JSON (ports, URLs, kubeconfig paths)."""

    def __init__(self, workdir, *args, log_name="fake.log"):
        self.dir = workdir
        os.makedirs(self.dir, exist_ok=True)
        ready = os.path.join(self.dir, "ready.json")
        self.process = Process(
            [PYTHON, os.path.join(ROOT, "test", "fake_apiserver", "fake_apiserver.py"),
             "--pki-dir", self.dir, "--ready-file", ready] + list(args),
            os.path.join(self.dir, log_name))
        if not wait_until(lambda: not self.process.alive() or os.path.exists(ready), 30,
                          0.02) or not self.process.alive():
            raise RuntimeError("fake API server did not start: " + self.process.log()[-1500:])
        with open(ready) as f:
            self.info = json.load(f)

    def control(self, path, body=None):
        """GET (no body) or POST a control request; its JSON reply (raises on an error)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.info["control_url"] + path, data=data,
                                         method="GET" if body is None else "POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)

    def stop(self):
        return self.process.stop()


def start_nsd(workdir, owned):
    """A harness.main() set-up: the NSD upstream as env["nsd"]."""
    nsd = Nsd(workdir)
    owned.append(nsd)
    return {"nsd": nsd}


if __name__ == "__main__":
    # `servers.py nsd-conf DIR PORT ZONE...`: write_nsd_conf for the shell benchmarks.
    import sys
    if len(sys.argv) < 4 or sys.argv[1] != "nsd-conf":
        sys.exit("usage: servers.py nsd-conf DIR PORT ZONE...")
    print(write_nsd_conf(sys.argv[2], int(sys.argv[3]), sys.argv[4:]))
