"""Idle resident memory of frontend-cache and kubedns by thread count, shared by
thread_memory_test.py (the bound per thread) and test/bench/thread_memory_bench.py (the
figures at 1, 2, 16 and 64 threads).

Each program is started afresh with `--threads=N` (kubedns: `--dns-threads=N`, on the
demo objects file), as servers.py starts it; once it serves, its RSS is read when it has
stopped moving (the receiver threads' first wake-ups touch their stacks), and split by
/proc/PID/smaps into thread stacks (with their static TLS), the main heap, other
anonymous memory (malloc's per-thread arenas, the buffers taken from the kernel) and
files. Per thread is (RSS at N - RSS at 1) / (N - 1), what docs/operators.md "Memory per
thread" tabulates.
"""
import os
import re

import harness
import servers

PROGRAMS = ("frontend-cache", "kubedns")
DEMO_OBJECTS = os.path.join(harness.ROOT, "kubedns", "demo-cluster.json")
# glibc's default thread stack (RLIMIT_STACK, 8 MiB): how smaps tells a stack from the rest.
STACK_KIB = 8192
PARTS = ("stacks", "heap", "other anonymous", "files")


def start(workdir, program, threads):
    """The program serving with `threads` DNS threads (a servers.FrontendCache or Kubedns)."""
    name = "%s-%d" % (program, threads)
    if program == "frontend-cache":
        return servers.FrontendCache(workdir, name, "--server=127.0.0.1#9", threads=threads)
    return servers.Kubedns(workdir, name, "--objects-file=" + DEMO_OBJECTS, threads=threads)


def settled_rss_kib(pid, timeout=10.0):
    """RSS (KiB) once three reads 0.2 s apart agree (or the last read after `timeout`)."""
    reads = []

    def steady():
        reads.append(harness.rss_kib(pid))
        return len(reads) >= 3 and reads[-1] == reads[-2] == reads[-3]
    harness.wait_until(steady, timeout, 0.2)
    return reads[-1]


def parts_kib(pid):
    """{part: resident KiB} of PARTS, from /proc/PID/smaps."""
    parts = dict.fromkeys(PARTS, 0)
    part = None
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            fields = line.split()
            if re.match(r"^[0-9a-f]+-[0-9a-f]+$", fields[0]):
                low, high = (int(x, 16) for x in fields[0].split("-"))
                path = fields[5] if len(fields) > 5 else ""
                if path == "[heap]":
                    part = "heap"
                elif path and not path.startswith("["):
                    part = "files"
                elif path == "[stack]" or ((high - low) // 1024 == STACK_KIB and
                                           fields[1].startswith("rw")):
                    part = "stacks"
                else:
                    part = "other anonymous"
            elif fields[0] == "Rss:":
                parts[part] += int(fields[1])
    return parts


def measure(workdir, program, threads):
    """(RSS KiB, {part: KiB}, OS threads) of `program` idle with `threads` DNS threads."""
    server = start(workdir, program, threads)
    try:
        pid = server.process.pid
        rss = settled_rss_kib(pid)
        return rss, parts_kib(pid), len(os.listdir("/proc/%d/task" % pid))
    finally:
        server.stop()


def per_thread_mib(rss_kib, low, high):
    """MiB each DNS thread adds between `low` and `high` threads ({threads: RSS KiB})."""
    return (rss_kib[high] - rss_kib[low]) / 1024.0 / (high - low)


