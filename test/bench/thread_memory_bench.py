"""Driver of thread_memory_bench.sh: idle RSS of frontend-cache and kubedns at 1, 2, 16 and
64 DNS threads (KDNS_THREAD_COUNTS), and what each DNS thread adds, as
(RSS@64 - RSS@1) / 63 and (RSS@64 - RSS@16) / 48, split by mapping (thread stacks with
their static TLS, the main heap, other anonymous memory: malloc's per-thread arenas and the
buffers taken from the kernel; files). The measurement is test/e2e/thread_memory.py's,
which thread_memory_test.py holds to issue 32's bound (0.15 MiB per idle thread); where
the bytes come from is docs/operators.md, "Memory per thread". Figures only.
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
if len(sys.argv) > 1:
    os.environ["KDNS_BIN"] = os.path.abspath(sys.argv[1])
import thread_memory  # noqa: E402  (after KDNS_BIN: harness reads it on import)


def report(program, counts, workdir):
    rss, parts, tasks = {}, {}, {}
    for n in counts:
        rss[n], parts[n], tasks[n] = thread_memory.measure(workdir, program, n)
    print("%s (idle; KiB)" % program)
    print("  %8s %8s %10s" % ("threads", "OS thr.", "RSS") +
          "".join(" %16s" % part for part in thread_memory.PARTS))
    for n in counts:
        print("  %8d %8d %10d" % (n, tasks[n], rss[n]) +
              "".join(" %16d" % parts[n][part] for part in thread_memory.PARTS))
    low, high = counts[0], counts[-1]
    pairs = [(low, high)] + ([(16, high)] if 16 in counts and high > 16 else [])
    for a, b in pairs:
        split = ", ".join("%s %.1f" % (part, (parts[b][part] - parts[a][part]) / (b - a))
                          for part in thread_memory.PARTS)
        print("  per DNS thread, (RSS@%d - RSS@%d) / %d: %.3f MiB (KiB: %s)"
              % (b, a, b - a, thread_memory.per_thread_mib(rss, a, b), split))


def main():
    counts = [int(n) for n in os.environ.get("KDNS_THREAD_COUNTS", "1 2 16 64").split()]
    with tempfile.TemporaryDirectory(prefix="kdns-thread-memory-") as workdir:
        for program in thread_memory.PROGRAMS:
            report(program, counts, workdir)


if __name__ == "__main__":
    main()
