"""The kube-dns pod, assembled once for the suites that run all of it (pod_test and
autopath_test in their namespaces, monitoring_test, debug_address_test): kubedns, the
nanny running frontend-cache in front of it, and the sidecar probing both, sharing one
ConfigMap directory written as the kubelet writes it. Each container is a process of its
own that a test may kill and start again (start_kubedns, start_nanny, start_sidecar), as
the kubelet restarts a container. The pod is up when the constructor returns: kubedns
ready, the cache answering a cluster name, every sidecar probe healthy; and nothing
outlives a failed start.
"""
import os

import harness
import nanny_env
import servers

CLUSTER_NAME = "kubernetes.default.svc.cluster.local"


def default_probes(pod):
    """The sidecar probes of kube-dns: a cluster SRV name from kubedns and from the cache,
    as (label, port, name, type)."""
    return [("kubedns", pod.kubedns.port, CLUSTER_NAME, "SRV"),
            ("dnsmasq", pod.nanny.port, CLUSTER_NAME, "SRV")]


class Pod:
    """The pod in `workdir`. kubedns gets --domain=cluster.local. and the ConfigMap
    directory, then `source_flags` (its objects: --objects-file or --kubecfg-file, and what
    the pod always runs with), then `kubedns_flags` (a test may change them and restart
    kubedns). The nanny gets `nanny_flags` and supervises frontend-cache with `cache_args`
    (default: the nanny_env defaults, routing cluster.local to kubedns). `probes(pod)` gives
    the sidecar's probes (default_probes). `ports` fixes ports where a test needs the real
    ones (pod_test: "kubedns", "healthz", "kubedns_metrics", "cache", "sidecar"); the rest
    are free ports. `debug`: both DNS servers serve their debug data on ports of their own.
    """

    def __init__(self, workdir, source_flags, kubedns_flags=(), nanny_flags=(),
                 cache_args=None, probes=default_probes, ports=None, debug=False,
                 config=None):
        self.workdir = workdir
        self.source_flags = list(source_flags)
        self.kubedns_flags = list(kubedns_flags)
        self.nanny_flags = list(nanny_flags)
        self.cache_args = cache_args
        self.probes = probes
        self.ports = dict(ports or {})
        self.with_debug = debug
        if config is None:
            config = harness.ConfigMapDir(os.path.join(workdir, "kube-dns-config"))
            config.publish({})
        self.config = config
        self.sidecar_port = self.ports.get("sidecar") or harness.free_port()
        self.kubedns = self.nanny = self.sidecar = None
        self.probe_labels = []
        try:
            self.start_kubedns()
            self.start_nanny()
            self.start_sidecar()
        except Exception:
            self.stop()  # what did start must not outlive a failed start
            raise

    def start_kubedns(self):
        self.kubedns = servers.Kubedns(
            self.workdir, "kubedns", "--domain=cluster.local.",
            "--config-dir=" + self.config.path, *(self.source_flags + self.kubedns_flags),
            port=self.ports.get("kubedns"), healthz=self.ports.get("healthz"),
            metrics_port=self.ports.get("kubedns_metrics"), debug=self.with_debug)

    def start_nanny(self):
        """The nanny and its frontend-cache, answering a cluster name through the cache."""
        self.nanny = nanny_env.Nanny(
            self.workdir, "nanny", self.config.path, flags=self.nanny_flags,
            child_args=self.cache_args, kubedns=self.kubedns, port=self.ports.get("cache"),
            metrics=self.cache_args is None, debug=self.with_debug)
        if not harness.wait_until(lambda: self.answers(CLUSTER_NAME), 30):
            raise RuntimeError("the cache is not answering:\n" + self.nanny.log()[-3000:])

    def start_sidecar(self):
        """The sidecar, healthy on every probe."""
        probes = self.probes(self)
        self.probe_labels = [label for label, _, _, _ in probes]
        self.sidecar = harness.Process(
            [os.path.join(harness.BIN, "sidecar"), "--v=2", "--logtostderr",
             "--dnsmasq-addr=127.0.0.1", "--dnsmasq-port=%d" % self.nanny.port,
             "--dnsmasq-poll-interval-ms=500", "--prometheus-addr=127.0.0.1",
             "--prometheus-port=%d" % self.sidecar_port] +
            ["--probe=%s,127.0.0.1:%d,%s,1,%s" % probe for probe in probes],
            os.path.join(self.workdir, "sidecar.log"))
        for label in self.probe_labels:
            if not harness.wait_until(lambda label=label: harness.http_status(
                    self.sidecar_port, "/healthcheck/" + label) == 200, 30):
                raise RuntimeError("probe %s never healthy: %s" % (
                    label, self.sidecar.log()[-1500:]))

    def answers(self, name, qtype="A"):
        """Whether the cache answers `name` with records."""
        answer = harness.dig(self.nanny.port, name, qtype, timeout=1)
        return answer.status == "NOERROR" and bool(answer.answer)

    def stop(self):
        harness.stop_all([c for c in (self.kubedns, self.nanny, self.sidecar) if c is not None])
