"""Injected faults, set through the control port and consumed by API requests and watches.

Every rule can be limited to a path prefix ("/api/v1/services" matches the cluster-wide
list and watch of Services, "/apis/discovery.k8s.io" every slice request; "" matches all).
Counted faults are consumed by whichever matching request or watch gets there first.

Guarded by the store's lock (callers hold it); no I/O here.
"""
import time

MAX_RULES = 64
DEFAULT_MALFORMED = b'{"type":"MODIFIED","object":{"kind":"Service","apiVersion":"v1","meta\n'


class HttpErrorRule:
    def __init__(self, status, count, path_prefix, retry_after_s, verb):
        self.status = status
        self.count = count
        self.path_prefix = path_prefix
        self.retry_after_s = retry_after_s
        self.verb = verb  # "any", "list", "watch", "get", "discovery"

    def describe(self):
        return {"status": self.status, "remaining": self.count, "path_prefix": self.path_prefix,
                "retry_after_s": self.retry_after_s, "verb": self.verb}


class Faults:
    def __init__(self):
        self.clear()

    def clear(self):
        self.http_errors = []        # [HttpErrorRule]
        self.drops = []              # [[remaining, path_prefix]] cut the next event lines
        self.malformed = []          # [[remaining, path_prefix, line]]
        self.stalls = []             # [(until_monotonic, path_prefix)]

    # ---- setters (from the control port) -----------------------------------------------

    def add_http_error(self, status, count, path_prefix, retry_after_s, verb):
        if len(self.http_errors) >= MAX_RULES:
            raise ValueError("too many http error rules")
        self.http_errors.append(HttpErrorRule(status, count, path_prefix, retry_after_s, verb))

    def add_drop(self, count, path_prefix):
        self.drops = self.drops[-MAX_RULES + 1:] + [[count, path_prefix]]

    def add_malformed(self, count, path_prefix, line):
        self.malformed = self.malformed[-MAX_RULES + 1:] + [[count, path_prefix, line]]

    def add_stall(self, seconds, path_prefix):
        now = time.monotonic()
        self.stalls = [s for s in self.stalls if s[0] > now][-MAX_RULES + 1:]
        self.stalls.append((now + seconds, path_prefix))

    # ---- consumers ----------------------------------------------------------------------

    def take_http_error(self, path, verb):
        for rule in self.http_errors:
            if path.startswith(rule.path_prefix) and rule.verb in ("any", verb):
                rule.count -= 1
                if rule.count <= 0:
                    self.http_errors.remove(rule)
                return rule
        return None

    @staticmethod
    def _take(rules, path):
        for rule in rules:
            if path.startswith(rule[1]):
                rule[0] -= 1
                if rule[0] <= 0:
                    rules.remove(rule)
                return rule
        return None

    def take_drop(self, path):
        return self._take(self.drops, path) is not None

    def take_malformed(self, path):
        rule = self._take(self.malformed, path)
        return None if rule is None else rule[2]

    def has_malformed(self, path):
        return any(path.startswith(r[1]) for r in self.malformed)

    def stalled_until(self, path):
        """The monotonic time until which watches on `path` must stay silent, or 0."""
        now = time.monotonic()
        until = [s[0] for s in self.stalls if s[0] > now and path.startswith(s[1])]
        return max(until, default=0)

    def describe(self):
        now = time.monotonic()
        return {"http_errors": [r.describe() for r in self.http_errors],
                "drops": [{"remaining": r[0], "path_prefix": r[1]} for r in self.drops],
                "malformed": [{"remaining": r[0], "path_prefix": r[1]} for r in self.malformed],
                "stalls": [{"remaining_s": round(s[0] - now, 3), "path_prefix": s[1]}
                           for s in self.stalls if s[0] > now]}
