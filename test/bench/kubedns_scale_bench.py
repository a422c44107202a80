"""The objects-file scale benchmark (issue 18, DESIGN section 9): kubedns loads a generated
cluster from --objects-file and this prints ready time, steady RSS (VmRSS once synced and
idle), peak (VmHWM), bytes per endpoint (a run with endpoints against one without, same
services), and the reload peak and time (the file rewritten with every endpoint moved,
VmHWM reset through /proc/PID/clear_refs first; the time from the rename to the reload's
end), beside the targets and as ratios to the in-process model size kubedns exports
(kdns_kubedns_records_bytes).

Workloads: "5000-node profile" (10,000 Services in 100 namespaces, one EndpointSlice of 15
ready endpoints each, every 10th Service headless) and the 100k/1M one (env
KDNS_SCALE_LARGE=0 skips it). A benchmark prints figures; it never fails on them. Standard
library only; run with /usr/bin/python3 (test/bench/kubedns_scale_bench.sh).
"""
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kubedns_api_bench_lib import Kubedns, mib, vm  # noqa: E402

TARGET_STEADY_MIB = 40
TARGET_BYTES_PER_ENDPOINT = 150
TARGET_PEAK_RATIO = 1.2


def write_objects(path, services, namespaces, endpoints_per_slice, generation=0):
    """A List of `services` Services spread over `namespaces`, each with one EndpointSlice of
    `endpoints_per_slice` ready endpoints (none when 0), every 10th headless with hostnames
    on half its endpoints. `generation` shifts every endpoint address (a reload that changes
    every slice)."""
    with open(path + ".tmp", "w") as f:
        f.write('{"apiVersion":"v1","kind":"List","items":[\n')
        first = True
        n = 0
        for i in range(services):
            ns = "ns-%d" % (i % namespaces)
            name = "svc-%d" % i
            headless = i % 10 == 0
            spec = {"type": "ClusterIP",
                    "clusterIP": "None" if headless else "10.%d.%d.%d" % (
                        96 + i // 65536, (i // 256) % 256, i % 256),
                    "ports": [{"name": "http", "protocol": "TCP", "port": 80}]}
            items = [{"apiVersion": "v1", "kind": "Service",
                      "metadata": {"name": name, "namespace": ns,
                                   "resourceVersion": str(i + 1),
                                   "labels": {"app": name}},
                      "spec": spec}]
            if endpoints_per_slice:
                eps = []
                for j in range(endpoints_per_slice):
                    a = 16 + n + generation * 7919
                    n += 1
                    ep = {"addresses": ["10.%d.%d.%d" % (
                              (a >> 16) % 256, (a >> 8) % 256, a % 256)],
                          "conditions": {"ready": True, "serving": True,
                                         "terminating": False},
                          "nodeName": "node-%d" % (a % 5000),
                          "targetRef": {"kind": "Pod", "namespace": ns,
                                        "name": "%s-%d-abcde" % (name, j)}}
                    if headless and j % 2 == 0:
                        ep["hostname"] = "%s-%d" % (name, j)
                    eps.append(ep)
                items.append({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                              "metadata": {"name": name + "-abcde", "namespace": ns,
                                           "resourceVersion": str(i + 1),
                                           "labels": {"kubernetes.io/service-name": name}},
                              "addressType": "IPv4", "endpoints": eps,
                              "ports": [{"name": "http", "protocol": "TCP", "port": 8080}]})
            for item in items:
                if not first:
                    f.write(",\n")
                first = False
                json.dump(item, f, separators=(",", ":"))
        f.write("]}\n")
    os.replace(path + ".tmp", path)


def wait_reload(kd, reloads, limit_s=600):
    """Waits until kubedns has finished reload number `reloads` of the file (good or not:
    kdns_objects_file_reloads_total sums both results)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if kd.metric("kdns_objects_file_reloads_total") >= reloads:
            return
        time.sleep(0.1)
    raise SystemExit("kubedns did not reload")


def run(bin_dir, workdir, name, services, namespaces, per_slice):
    endpoints = services * per_slice
    empty = os.path.join(workdir, "empty.json")
    full = os.path.join(workdir, "full.json")
    write_objects(empty, services, namespaces, 0)
    write_objects(full, services, namespaces, per_slice)

    kd = Kubedns(bin_dir, os.path.join(workdir, "empty.log"), ["--objects-file=" + empty])
    try:
        kd.wait_ready()
        base_rss = kd.settle()
    finally:
        kd.stop()

    kd = Kubedns(bin_dir, os.path.join(workdir, "full.log"), ["--objects-file=" + full])
    try:
        ready_s = kd.wait_ready()
        steady = kd.settle()
        peak = vm(kd.proc.pid)["VmHWM"]
        model = kd.metric("kdns_kubedns_records_bytes")
        reloads = kd.metric("kdns_objects_file_reloads_total")
        with open("/proc/%d/clear_refs" % kd.proc.pid, "w") as f:
            f.write("5")  # resets VmHWM to the current RSS
        write_objects(full, services, namespaces, per_slice, generation=1)
        reload_start = time.monotonic()
        wait_reload(kd, reloads + 1)
        reload_s = time.monotonic() - reload_start
        # No query follows: idle DNS threads have let go of the old snapshot themselves
        # (SnapshotHolder::Reader::Release), so RSS after the reload needs none.
        after_reload = kd.settle()
        reload_peak = vm(kd.proc.pid)["VmHWM"]
    finally:
        kd.stop()

    per_endpoint = (steady - base_rss) / endpoints
    print("workload %r: %d services in %d namespaces, %d endpoints" %
          (name, services, namespaces, endpoints))
    print("  ready after start        %.2f s" % ready_s)
    print("  steady RSS               %.1f MiB (target <= %d MiB at 10k/150k)%s" %
          (mib(steady), TARGET_STEADY_MIB,
           "  ratio %.2f" % (mib(steady) / TARGET_STEADY_MIB) if endpoints == 150000 else ""))
    print("  services only            %.1f MiB" % mib(base_rss))
    print("  bytes per endpoint       %.0f (target <= %d)  ratio %.2f" %
          (per_endpoint, TARGET_BYTES_PER_ENDPOINT, per_endpoint / TARGET_BYTES_PER_ENDPOINT))
    print("  initial peak (VmHWM)     %.1f MiB = %.2f x steady (target <= %.1f)" %
          (mib(peak), peak / steady, TARGET_PEAK_RATIO))
    print("  reload peak (VmHWM)      %.1f MiB = %.2f x steady (target <= %.1f)" %
          (mib(reload_peak), reload_peak / steady, TARGET_PEAK_RATIO))
    print("  reload (every endpoint)  %.2f s from the rename to the reload's end" % reload_s)
    print("  RSS after reload         %.1f MiB = %.2f x steady" %
          (mib(after_reload), after_reload / steady))
    if model:
        print("  model (records_bytes)    %.1f MiB: steady RSS / model %.2f, "
              "(RSS - services only) / model %.2f, model bytes per endpoint %.0f" %
              (mib(model), steady / model, (steady - base_rss) / model, model / endpoints))
    sys.stdout.flush()


def main():
    bin_dir = sys.argv[1] if len(sys.argv) > 1 else "build/bin"
    with tempfile.TemporaryDirectory(prefix="kdns-scale-") as workdir:
        run(bin_dir, workdir, "5000-node profile", 10000, 100, 15)
        if os.environ.get("KDNS_SCALE_LARGE", "1") != "0":
            run(bin_dir, workdir, "100k/1M", 100000, 1000, 10)


if __name__ == "__main__":
    main()
