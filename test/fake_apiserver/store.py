"""The fake cluster's state: objects, one growing revision, and a bounded event history.

Like etcd plus the apiserver's watch cache, reduced to what a list/watch client can see:
- `revision` is one global counter (etcd's revision); every write bumps it, and an
  object's resourceVersion is the revision of its last write.
- Each resource keeps its last `history_size` events. `horizon[resource]` is the oldest
  revision the history can still serve: watches and continue tokens from an older
  revision get 410 Expired. Compaction and restart move the horizon to the current
  revision.
- Snapshots at an older revision (continue tokens, resourceVersionMatch=Exact) are
  rebuilt by undoing history events, so they need the history to reach back that far.

No I/O. All methods must be called with `lock` held (it is the `cond`'s lock): the HTTP
side waits on `cond` for new events, and every write notifies it.

Large clusters (benchmarks hold 100k objects per resource): a snapshot of the current state
is the live ObjectMap itself, copied only when the next write to that resource comes
(copy on write), and an ObjectMap that no longer changes keeps its keys sorted once, so a
LIST page is a binary search plus `limit` items (see ObjectMap.sorted_from). The last
rebuilt older snapshot per resource is kept, since every page of a paginated LIST asks for
the same one.
"""
import bisect
import collections
import copy
import threading

import shapes


class ObjectMap(dict):
    """{key: object} of one resource. Once handed out as a snapshot it is never written
    again (the store copies it first), so its sorted keys can be cached."""
    __slots__ = ("sorted_keys",)

    def sorted_from(self, start):
        """The (key, object) pairs with key >= start, in key order (byte order of UTF-8,
        which is code point order), as a read-only sequence."""
        try:
            keys = self.sorted_keys
        except AttributeError:
            keys = self.sorted_keys = sorted(self)
        return SortedItems(self, keys, bisect.bisect_left(keys, start) if start else 0)


class SortedItems:
    """A sequence of (key, object) pairs over an ObjectMap's sorted keys from `begin`."""
    __slots__ = ("map", "keys", "begin")

    def __init__(self, objects, keys, begin):
        self.map, self.keys, self.begin = objects, keys, begin

    def __len__(self):
        return len(self.keys) - self.begin

    def __getitem__(self, i):
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            return [(k, self.map[k]) for k in
                    self.keys[self.begin + start:self.begin + stop:step]]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        k = self.keys[self.begin + i]
        return k, self.map[k]

    def __iter__(self):
        m = self.map
        for k in self.keys[self.begin:]:
            yield k, m[k]


class Expired(Exception):
    """A revision older than the history still holds."""

    def __init__(self, rv, horizon):
        super().__init__(f"too old resource version: {rv} ({horizon})")
        self.rv = rv
        self.horizon = horizon


class Event:
    __slots__ = ("rv", "type", "key", "obj", "prev")

    def __init__(self, rv, type_, key, obj, prev):
        self.rv = rv          # revision of this write
        self.type = type_     # ADDED, MODIFIED, DELETED
        self.key = key        # "namespace/name"
        self.obj = obj        # object after the write (last state for DELETED), with kind
        self.prev = prev      # object before the write, None for ADDED


def key_of(obj):
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace', 'default')}/{meta.get('name', '')}"


class Store:
    def __init__(self, history_size=100, initial_rv=1):
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.revision = initial_rv
        self.history_size = max(1, history_size)
        self.objects = {name: ObjectMap() for name in shapes.RESOURCES}
        self.shared = {name: False for name in shapes.RESOURCES}  # handed out as a snapshot
        self.memo = {name: None for name in shapes.RESOURCES}  # (rv, ObjectMap) rebuilt
        self.history = {name: collections.deque() for name in shapes.RESOURCES}
        self.horizon = {name: initial_rv for name in shapes.RESOURCES}
        self.epoch = 0  # bumped on restart, so open watches notice

    # ---- writes -------------------------------------------------------------------------

    def apply(self, obj):
        """Creates or replaces an object. Returns the Event, or None for a no-op update."""
        res = shapes.resource_for(obj.get("kind"), obj.get("apiVersion"))
        if res is None:
            raise ValueError(f"unsupported kind {obj.get('kind')!r} ({obj.get('apiVersion')!r})")
        if not (obj.get("metadata") or {}).get("name"):
            raise ValueError("object has no metadata.name")
        key = key_of(obj)
        old = self.objects[res.plural].get(key)
        new = shapes.apply_defaults(obj, res, old)
        if old is not None and shapes.content_equal(shapes.normalize(new, res), old):
            return None
        self.revision += 1
        new["metadata"]["resourceVersion"] = str(self.revision)
        if res.kind == "EndpointSlice":
            gen = old["metadata"].get("generation", 0) if old is not None else 0
            new["metadata"]["generation"] = gen + 1
        new = shapes.Stored(shapes.normalize(new, res))
        self._writable(res.plural, same_keys=old is not None)[key] = new
        return self._record(res, Event(self.revision, "MODIFIED" if old else "ADDED", key,
                                       new, old))

    def delete(self, kind, namespace, name, api_version=None):
        """Deletes an object. Returns the DELETED Event, or None when it did not exist.
        `api_version` tells the ServiceImport kinds apart."""
        res = shapes.resource_for(kind, api_version)
        if res is None:
            raise ValueError(f"unsupported kind {kind!r}")
        key = f"{namespace or 'default'}/{name}"
        if key not in self.objects[res.plural]:
            return None
        old = self._writable(res.plural, same_keys=False).pop(key)
        self.revision += 1
        last = copy.deepcopy(dict(old))  # a plain dict: its encoding is not cached
        last["metadata"]["resourceVersion"] = str(self.revision)
        return self._record(res, Event(self.revision, "DELETED", key, last, old))

    def _writable(self, plural, same_keys):
        """The resource's map, copied first when a snapshot holds it."""
        current = self.objects[plural]
        if self.shared[plural]:
            copied = ObjectMap(current)
            if same_keys and hasattr(current, "sorted_keys"):
                copied.sorted_keys = current.sorted_keys
            self.objects[plural] = current = copied
            self.shared[plural] = False
        elif not same_keys and hasattr(current, "sorted_keys"):
            del current.sorted_keys
        return current

    def _record(self, res, event):
        hist = self.history[res.plural]
        hist.append(event)
        while len(hist) > self.history_size:
            self.horizon[res.plural] = hist.popleft().rv
        self.cond.notify_all()
        return event

    def compact(self):
        """Forgets all history (etcd compaction): older revisions now get 410."""
        for name in self.history:
            self.history[name].clear()
            self.horizon[name] = self.revision
            self.memo[name] = None
        self.cond.notify_all()

    def restart(self):
        """An apiserver restart: history gone, and the apiserver writes once on start-up."""
        self.revision += 1
        self.compact()
        self.epoch += 1
        self.cond.notify_all()

    # ---- reads --------------------------------------------------------------------------

    def snapshot(self, plural, rv=None):
        """{key: object} at revision `rv` (None: now), an ObjectMap the caller must not
        change. Raises Expired beyond the history."""
        current = self.objects[plural]
        if rv is None or rv >= self.revision:
            self.shared[plural] = True
            return current
        if rv < self.horizon[plural]:
            raise Expired(rv, self.horizon[plural])
        memo = self.memo[plural]
        if memo is not None and memo[0] == rv:
            return memo[1]
        state = ObjectMap(current)
        for ev in reversed(self.history[plural]):
            if ev.rv <= rv:
                break
            if ev.type == "ADDED":
                state.pop(ev.key, None)
            else:
                state[ev.key] = ev.prev
        self.memo[plural] = (rv, state)
        return state

    def events_after(self, plural, rv):
        """Events with revision > rv, oldest first. Raises Expired beyond the history."""
        if rv < self.horizon[plural]:
            raise Expired(rv, self.horizon[plural])
        out = []
        for ev in reversed(self.history[plural]):
            if ev.rv <= rv:
                break
            out.append(ev)
        out.reverse()
        return out

    def describe(self):
        return {"revision": self.revision, "epoch": self.epoch,
                "history_size": self.history_size,
                "resources": {name: {"objects": len(self.objects[name]),
                                     "history": len(self.history[name]),
                                     "horizon": self.horizon[name]}
                              for name in self.objects}}
