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
"""
import collections
import copy
import threading

import shapes


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
        self.objects = {name: {} for name in shapes.RESOURCES}
        self.history = {name: collections.deque() for name in shapes.RESOURCES}
        self.horizon = {name: initial_rv for name in shapes.RESOURCES}
        self.epoch = 0  # bumped on restart, so open watches notice

    # ---- writes -------------------------------------------------------------------------

    def apply(self, obj):
        """Creates or replaces an object. Returns the Event, or None for a no-op update."""
        res = shapes.RESOURCE_BY_KIND.get(obj.get("kind"))
        if res is None:
            raise ValueError(f"unsupported kind {obj.get('kind')!r}")
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
        new = shapes.normalize(new, res)
        self.objects[res.plural][key] = new
        return self._record(res, Event(self.revision, "MODIFIED" if old else "ADDED", key,
                                       new, old))

    def delete(self, kind, namespace, name):
        """Deletes an object. Returns the DELETED Event, or None when it did not exist."""
        res = shapes.RESOURCE_BY_KIND.get(kind)
        if res is None:
            raise ValueError(f"unsupported kind {kind!r}")
        key = f"{namespace or 'default'}/{name}"
        old = self.objects[res.plural].pop(key, None)
        if old is None:
            return None
        self.revision += 1
        last = copy.deepcopy(old)
        last["metadata"]["resourceVersion"] = str(self.revision)
        return self._record(res, Event(self.revision, "DELETED", key, last, old))

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
        self.cond.notify_all()

    def restart(self):
        """An apiserver restart: history gone, and the apiserver writes once on start-up."""
        self.revision += 1
        self.compact()
        self.epoch += 1
        self.cond.notify_all()

    # ---- reads --------------------------------------------------------------------------

    def snapshot(self, plural, rv=None):
        """{key: object} at revision `rv` (None: now). Raises Expired beyond the history."""
        current = self.objects[plural]
        if rv is None or rv >= self.revision:
            return dict(current)
        if rv < self.horizon[plural]:
            raise Expired(rv, self.horizon[plural])
        state = dict(current)
        for ev in reversed(self.history[plural]):
            if ev.rv <= rv:
                break
            if ev.type == "ADDED":
                state.pop(ev.key, None)
            else:
                state[ev.key] = ev.prev
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
