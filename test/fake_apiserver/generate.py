"""Bulk objects for benchmarks: a synthetic cluster built inside the fake, and a background
generator of endpoint churn. Both write through Store.apply, so watches see the same ADDED
and MODIFIED events, revisions and stored shapes as for objects posted to /control/objects.

The cluster is a pure function of its spec, so a benchmark driver can import this module
and compute names and addresses without asking the fake:
- service i (0-based) is `svc-<i>` in namespace `<prefix>-<i // services_per_namespace>`;
  every fifth one (i % 5 == 0, with the default 20%) is headless, the others have the
  ClusterIP `cluster_ip(i)` (10.96.1.0 upwards); each has one port `http` 80 -> 8080/TCP.
- service i has `endpoint_count(spec, i)` endpoints, addresses `endpoint_ip(n)` for
  consecutive n from `first_endpoint(spec, i)` (10.128.0.0 upwards; `endpoint_shift` added
  to n moves every address, as a cluster whose pods were all replaced), split into slices
  `svc-<i>-<k>` of at most `max_endpoints_per_slice` (100, the EndpointSlice
  controller's default) each, shaped as that controller writes them (labels, owner
  reference, conditions, nodeName, targetRef to a pod).
- churn addresses come from 10.160.0.0 upwards, probe addresses from 10.240.0.0 upwards.

No I/O except the churn thread, which takes the store's lock for each batch of writes.
"""
import gc
import random
import threading
import time

import shapes

DEFAULTS = {"services": 1000, "endpoints_per_service": 10, "headless_percent": 20,
            "services_per_namespace": 100, "namespace_prefix": "gen",
            "max_endpoints_per_slice": 100, "nodes": 50, "endpoint_shift": 0}
CHURN_IP_BASE = (10 << 24) | (160 << 16)
PROBE_IP_BASE = (10 << 24) | (240 << 16)
MAX_CHURN_RATE = 100000
MAX_PROBE_LOG = 100000


def _ip(n):
    return "%d.%d.%d.%d" % (n >> 24, (n >> 16) & 255, (n >> 8) & 255, n & 255)


def parse_spec(body):
    """The generator's spec from a request body; ValueError on a bad field."""
    spec = dict(DEFAULTS)
    for key, default in DEFAULTS.items():
        if key not in body:
            continue
        value = body[key]
        if isinstance(default, str):
            if not isinstance(value, str) or not value or "/" in value:
                raise ValueError(f"{key} must be a non-empty string without '/'")
        elif isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{key} must be a non-negative integer")
        spec[key] = value
    unknown = set(body) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"unknown fields {sorted(unknown)}")
    if spec["services"] > 2_000_000 or spec["endpoints_per_service"] > 1000:
        raise ValueError("at most 2M services and 1000 endpoints per service")
    if spec["headless_percent"] > 100:
        raise ValueError("headless_percent must be 0..100")
    for key in ("services_per_namespace", "max_endpoints_per_slice", "nodes"):
        if spec[key] < 1:
            raise ValueError(f"{key} must be at least 1")
    if total_endpoints(spec) + spec["endpoint_shift"] > 1 << 21:  # 10.128.0.0/11
        raise ValueError("at most 2097152 endpoints in all, endpoint_shift included")
    return spec


def namespace(spec, i):
    return "%s-%d" % (spec["namespace_prefix"], i // spec["services_per_namespace"])


def is_headless(spec, i):
    # Spread evenly: with 20%, services 0, 5, 10, ...
    p = spec["headless_percent"]
    return (i * p) % 100 < p


def cluster_ip(i):
    return _ip((10 << 24) | (96 << 16) + 256 + i)


def endpoint_count(spec, i):
    """Mean endpoints_per_service; m-4..m+4 in a cycle of 9 when the mean is at least 5."""
    m = spec["endpoints_per_service"]
    return m - 4 + (i * 7) % 9 if m >= 5 else m


def first_endpoint(spec, i):
    """Index (for endpoint_ip) of service i's first endpoint."""
    m = spec["endpoints_per_service"]
    if m < 5:
        return m * i
    full, rest = divmod(i, 9)
    return full * 9 * m + sum(m - 4 + (j * 7) % 9 for j in range(rest))


def endpoint_ip(n):
    return _ip((10 << 24) | (128 << 16) + n)


def total_endpoints(spec):
    return first_endpoint(spec, spec["services"])


def _uid(kind, n):
    return "%08x-%04x-4000-8000-%012x" % (n >> 16, kind, n & 0xFFFFFFFFFFFF)


def cluster_objects(spec):
    """Yields the Services and EndpointSlices, in the form a client would write them."""
    per_slice = spec["max_endpoints_per_slice"]
    nodes = spec["nodes"]
    ts = "2024-01-01T00:00:00Z"
    for i in range(spec["services"]):
        ns, name = namespace(spec, i), "svc-%d" % i
        svc_uid = _uid(1, i)
        spec_ = {"ports": [{"name": "http", "protocol": "TCP", "port": 80,
                            "targetPort": 8080}],
                 "selector": {"app": name}, "type": "ClusterIP"}
        if is_headless(spec, i):
            spec_["clusterIP"] = "None"
            spec_["clusterIPs"] = ["None"]
        else:
            spec_["clusterIP"] = cluster_ip(i)
            spec_["clusterIPs"] = [cluster_ip(i)]
        spec_["ipFamilies"] = ["IPv4"]
        spec_["ipFamilyPolicy"] = "SingleStack"
        yield {"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": name, "namespace": ns, "uid": svc_uid,
                            "creationTimestamp": ts, "labels": {"app": name}},
               "spec": spec_}
        first, count = first_endpoint(spec, i), endpoint_count(spec, i)
        for k, begin in enumerate(range(0, count, per_slice)):
            endpoints = []
            for n in range(first + begin, first + min(count, begin + per_slice)):
                endpoints.append({
                    "addresses": [endpoint_ip(n + spec["endpoint_shift"])],
                    "conditions": {"ready": True, "serving": True, "terminating": False},
                    "targetRef": {"kind": "Pod", "namespace": ns,
                                  "name": "%s-%x" % (name, n), "uid": _uid(3, n)},
                    "nodeName": "node-%d" % (n % nodes)})
            yield {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                   "metadata": {"name": "%s-%d" % (name, k), "namespace": ns,
                                "uid": _uid(2, (i << 8) | k), "creationTimestamp": ts,
                                "labels": {"endpointslice.kubernetes.io/managed-by":
                                           "endpointslice-controller.k8s.io",
                                           "kubernetes.io/service-name": name},
                                "ownerReferences": [{"apiVersion": "v1", "kind": "Service",
                                                     "name": name, "uid": svc_uid,
                                                     "controller": True,
                                                     "blockOwnerDeletion": True}]},
                   "addressType": "IPv4", "endpoints": endpoints,
                   "ports": [{"name": "http", "protocol": "TCP", "port": 8080}]}


def generate(store, spec):
    """Writes the cluster into the store (lock held) and encodes every object as a list
    item once, so LISTs only join bytes. Returns counts, the bytes of those encodings per
    resource, and the time taken.

    The cyclic garbage collector is off while it runs, and afterwards everything alive is
    moved to its permanent generation (gc.freeze): with millions of long-lived dicts, every
    full collection would otherwise stop the fake for seconds.
    """
    start = time.monotonic()
    counts = {"services": 0, "headless": 0, "endpoint_slices": 0, "endpoints": 0,
              "unchanged": 0, "list_item_bytes": {"services": 0, "endpointslices": 0}}
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for obj in cluster_objects(spec):
            ev = store.apply(obj)
            if ev is None:
                counts["unchanged"] += 1
                continue
            if obj["kind"] == "Service":
                counts["services"] += 1
                counts["headless"] += obj["spec"]["clusterIP"] == "None"
                plural = "services"
            else:
                counts["endpoint_slices"] += 1
                counts["endpoints"] += len(obj["endpoints"])
                plural = "endpointslices"
            counts["list_item_bytes"][plural] += len(shapes.list_item(ev.obj)) + 1
    finally:
        if was_enabled:
            gc.enable()
        gc.freeze()
    counts["seconds"] = round(time.monotonic() - start, 3)
    return counts


class Churn:
    """Rewrites endpoint addresses of existing EndpointSlices at a steady rate, on its own
    thread. Each change replaces one endpoint's address (a random endpoint of a random
    slice whose namespace starts with `namespace_prefix`) with a new address, never used
    before by this or an earlier churn. Slices in `probe_namespace` are left out of that
    and are the probes instead: each probe change sets a probe slice (round robin) to one
    ready endpoint at a new address and logs the address with the time of the write
    (time.monotonic(), i.e. CLOCK_MONOTONIC, comparable across processes on one host).
    `probe_rate` of the `rate` changes per second are probe changes.

    Writes go out in batches every `tick_s`, each under the lock, as many as are due, so
    a slow tick is caught up on the next one and `applied` says what really happened.
    After each batch everything alive is frozen for the garbage collector (gc.freeze).
    """

    def __init__(self, state, rate, seconds, probe_namespace, probe_rate, seed, tick_s,
                 namespace_prefix="", previous=None):
        self.state = state
        self.rate = rate
        self.seconds = seconds
        self.probe_namespace = probe_namespace
        self.probe_rate = min(probe_rate, rate)
        self.tick_s = tick_s
        self.rng = random.Random(seed)
        self.applied = 0
        self.probe_applied = 0
        self.unchanged = 0
        self.ticks = 0
        self.max_batch = 0
        self.probe_log = []
        self.started = None
        self.ended = None
        self.error = None
        self.stop_event = threading.Event()
        slices = state.store.objects["endpointslices"]
        prefix = (probe_namespace + "/") if probe_namespace else None
        self.probes = sorted(k for k in slices if prefix and k.startswith(prefix))
        self.namespace_prefix = namespace_prefix
        self.keys = [k for k, o in slices.items()
                     if k.startswith(namespace_prefix) and o.get("endpoints")
                     and not (prefix and k.startswith(prefix))]
        if not self.keys and self.rate > self.probe_rate:
            raise ValueError("no EndpointSlice with endpoints to churn")
        if self.probe_rate and not self.probes:
            raise ValueError(f"no EndpointSlice in probe_namespace {probe_namespace!r}")
        # Addresses never repeat, not even across churns (`previous`, the last one).
        self.next_ip = previous.next_ip if previous is not None else 0
        self.next_probe_ip = previous.next_probe_ip if previous is not None else 0
        self.thread = threading.Thread(target=self._run, name="churn", daemon=True)

    def start(self):
        self.started = time.monotonic()
        self.thread.start()

    def stop(self):
        """Asks the thread to end; it writes nothing more once it sees this (it checks
        under the lock, which callers on the control port hold, so no join here)."""
        self.stop_event.set()

    def _change(self, key):
        store = self.state.store
        obj = store.objects["endpointslices"].get(key)
        if not obj or not obj.get("endpoints"):
            return None
        new = dict(obj)
        endpoints = list(obj["endpoints"])
        j = self.rng.randrange(len(endpoints))
        ep = dict(endpoints[j])
        ep["addresses"] = [_ip(CHURN_IP_BASE + self.next_ip)]
        self.next_ip += 1
        endpoints[j] = ep
        new["endpoints"] = endpoints
        return store.apply(new)

    def _probe(self):
        store = self.state.store
        key = self.probes[self.probe_applied % len(self.probes)]
        obj = store.objects["endpointslices"].get(key)
        if obj is None:
            return
        ip = _ip(PROBE_IP_BASE + self.next_probe_ip)
        self.next_probe_ip += 1
        new = dict(obj)
        new["endpoints"] = [{"addresses": [ip], "conditions": {"ready": True}}]
        ev = store.apply(new)
        self.probe_applied += 1
        if len(self.probe_log) < MAX_PROBE_LOG:
            meta = obj["metadata"]
            self.probe_log.append({"namespace": meta["namespace"], "slice": meta["name"],
                                   "service": (meta.get("labels") or {}).get(
                                       "kubernetes.io/service-name"),
                                   "ip": ip, "t": time.monotonic(),
                                   "resourceVersion": None if ev is None else str(ev.rv)})

    def _run(self):
        st = self.state
        try:
            while not self.stop_event.wait(self.tick_s):
                elapsed = time.monotonic() - self.started
                if elapsed >= self.seconds:
                    elapsed = self.seconds
                due = int(self.rate * elapsed) - self.applied
                probes_due = int(self.probe_rate * elapsed) - self.probe_applied
                with st.lock:
                    if self.stop_event.is_set():
                        break
                    # Probes last, so their logged write times are closest to the moment
                    # the watches can send them (when the lock is released).
                    probes = max(0, min(probes_due, due))
                    for _ in range(due - probes):
                        if self.keys and self._change(self.rng.choice(self.keys)) is None:
                            self.unchanged += 1
                    for _ in range(probes):
                        self._probe()
                    n = max(0, due)
                    self.applied += n
                    # What this batch made lives on in the history: out of the collector's
                    # sight at once (gc.freeze is cheap), or full collections over the
                    # growing history stall every thread for 100 ms and more, which the
                    # real apiserver's concurrent collector does not do.
                    gc.freeze()
                    self.ticks += 1
                    self.max_batch = max(self.max_batch, n)
                    st.cond.notify_all()
                if elapsed >= self.seconds:
                    break
        except Exception as e:  # report, do not kill the fake
            self.error = f"{type(e).__name__}: {e}"
        self.ended = time.monotonic()

    def describe(self, with_log=False, since=0):
        running = self.thread.is_alive()
        end = self.ended if self.ended is not None else time.monotonic()
        elapsed = (end - self.started) if self.started is not None else 0.0
        out = {"running": running, "rate": self.rate, "seconds": self.seconds,
               "probe_rate": self.probe_rate, "probe_namespace": self.probe_namespace,
               "namespace_prefix": self.namespace_prefix,
               "probe_slices": len(self.probes), "slices": len(self.keys),
               "elapsed_s": round(elapsed, 3), "applied": self.applied,
               "probe_applied": self.probe_applied, "unchanged": self.unchanged,
               "applied_per_s": round(self.applied / elapsed, 1) if elapsed > 0 else 0.0,
               "ticks": self.ticks, "max_batch": self.max_batch, "error": self.error}
        if with_log:
            out["probe_log"] = self.probe_log[since:]
        return out
