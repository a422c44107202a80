"""Everything the fake's threads share: the store, faults, credentials, settings, the open
watches and the request statistics. One lock (the store's) guards all of it; watch
threads wait on the store's condition, which every write and every control action
notifies.
"""
import collections
import itertools
import time

import faults
import store

REQUEST_LOG_SIZE = 2000


class OpenWatch:
    """One streaming watch, as the control port sees and steers it."""

    def __init__(self, wid, path, query):
        self.id = wid
        self.path = path
        self.query = query
        self.started = time.monotonic()
        self.cursor = None        # last resourceVersion sent (events or bookmark)
        self.cut_at = None        # monotonic time to cut the TCP connection (no final chunk)
        self.cut_partial = False  # write half an event line before cutting
        self.log_entry = None

    def describe(self):
        return {"id": self.id, "path": self.path, "query": self.query,
                "resourceVersion": None if self.cursor is None else str(self.cursor),
                "age_s": round(time.monotonic() - self.started, 3),
                "being_cut": self.cut_at is not None}


class State:
    def __init__(self, history_size, initial_rv, tokens, bookmark_interval_s,
                 default_watch_timeout_s, too_large_wait_s, slices_served):
        self.store = store.Store(history_size, initial_rv)
        self.lock = self.store.lock
        self.cond = self.store.cond
        self.faults = faults.Faults()
        self.tokens = set(tokens)
        self.bookmark_interval_s = bookmark_interval_s
        self.default_watch_timeout_s = default_watch_timeout_s
        self.too_large_wait_s = too_large_wait_s
        self.slices_served = slices_served
        self.crds_absent = set()  # CRD groups not installed: their paths answer 404
        # Serve watch-list (sendInitialEvents=true), as a 1.32+ server does; off, the fake
        # is the 1.25 server of the captures, which refuses resourceVersionMatch on a watch.
        self.watch_list = False
        self.down_until = 0.0
        self.churn = None  # the running or last generate.Churn
        self.watches = {}
        self._watch_ids = itertools.count(1)
        self._log_seq = itertools.count(1)
        self.reset_stats()

    def reset_stats(self):
        self.counts = collections.Counter()   # (method, path, verb, status) -> n
        self.watch_ends = collections.Counter()
        self.dropped_while_down = 0
        self.log = collections.deque(maxlen=REQUEST_LOG_SIZE)
        # Reads by where a real apiserver serves them: "etcd" (a consistent LIST, a page of
        # one, an Exact or paged NotOlderThan LIST, a watch from before the window) or
        # "cache" (the watch cache: resourceVersion=0, NotOlderThan without limit,
        # watch-list's initial events), each also by resource plural.
        self.reads = collections.Counter()
        self.reads_by_resource = collections.defaultdict(collections.Counter)

    # The methods below expect the lock held.

    def record(self, method, path, query, verb, status, auth):
        self.counts[(method, path, verb, status)] += 1
        entry = {"seq": next(self._log_seq), "t": round(time.time(), 6), "method": method,
                 "path": path, "query": query, "verb": verb, "status": status, "auth": auth}
        self.log.append(entry)
        return entry

    def count_read(self, plural, source):
        self.reads[source] += 1
        self.reads_by_resource[plural][source] += 1

    def open_watch(self, path, query):
        w = OpenWatch(next(self._watch_ids), path, query)
        self.watches[w.id] = w
        return w

    def close_watch(self, w, reason):
        self.watches.pop(w.id, None)
        self.watch_ends[reason] += 1
        if w.log_entry is not None:
            w.log_entry["end"] = reason
            w.log_entry["end_t"] = round(time.time(), 6)
            w.log_entry["last_resourceVersion"] = None if w.cursor is None else str(w.cursor)

    def cut_watches(self, path_prefix, delay_s, partial):
        now = time.monotonic()
        n = 0
        for w in self.watches.values():
            if w.path.startswith(path_prefix) and w.cut_at is None:
                w.cut_at = now + delay_s
                w.cut_partial = partial
                n += 1
        self.cond.notify_all()
        return n

    def stats(self):
        by_verb = collections.defaultdict(collections.Counter)
        for (method, path, verb, status), n in self.counts.items():
            by_verb[verb][str(status)] += n
        return {
            "revision": str(self.store.revision),
            "requests": [{"method": m, "path": p, "verb": v, "status": s, "count": n}
                         for (m, p, v, s), n in sorted(self.counts.items(), key=str)],
            "by_verb": {v: dict(c) for v, c in by_verb.items()},
            "open_watches": [w.describe() for w in self.watches.values()],
            "open_watch_count": len(self.watches),
            "watch_ends": dict(self.watch_ends),
            "dropped_while_down": self.dropped_while_down,
            "faults": self.faults.describe(),
            "store": self.store.describe(),
            "slices_served": self.slices_served,
            "crds_absent": sorted(self.crds_absent),
            "tokens": len(self.tokens),
            "bookmark_interval_s": self.bookmark_interval_s,
            "reads": {"etcd": self.reads["etcd"], "cache": self.reads["cache"]},
            "reads_by_resource": {p: dict(c) for p, c in self.reads_by_resource.items()},
            "watch_list": self.watch_list,
        }

    def requests_since(self, seq):
        return [e for e in self.log if e["seq"] > seq]
