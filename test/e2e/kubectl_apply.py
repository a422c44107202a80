"""The real `kubectl apply` (client-side, the guide's default) against a minimal API server,
so a test sees the patch kubectl really computes and the object that patch really makes.

kubectl computes a three-way strategic merge patch (the `last-applied-configuration`
annotation, the new manifest, the live object) and sends it as a PATCH; the API server
applies it with the same strategic-merge code (k8s.io/apimachinery strategicpatch, which
merges a Service's `ports` by `port` alone, its patchMergeKey). Here the server applies the
PATCH with `kubectl patch --local --type=strategic`, which runs that code on a local file,
so both halves are Kubernetes's own, and then validates what the real server validates of
a Service's ports (unique names, unique port+protocol: 422 otherwise).

The server is what kubectl needs and no more: discovery of the core group (services,
configmaps), GET, POST (create), PATCH; other paths 404 (kubectl then goes without the
OpenAPI schema and merges with its built-in types, as it does for core objects anyway).
Plain HTTP on 127.0.0.1:0. test/fake_apiserver is the read path's fake (LIST, WATCH):
kubectl's write path needs none of that, and this keeps the two apart.
"""
import copy
import json
import os
import shutil
import subprocess
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import yaml

KUBECTL = shutil.which("kubectl")
RESOURCES = {"services": "Service", "configmaps": "ConfigMap"}


def available():
    """Whether kubectl is installed (the Debian image for tests has it)."""
    return KUBECTL is not None


def service_port_errors(obj):
    """What the API server's validation refuses in a Service's ports (422)."""
    if obj.get("kind") != "Service":
        return []
    ports = obj.get("spec", {}).get("ports", [])
    errors = []
    names = [p.get("name") for p in ports]
    for name in sorted({n for n in names if n and names.count(n) > 1}):
        errors.append("spec.ports[].name: Duplicate value: %r" % name)
    keys = [(p["port"], p.get("protocol", "TCP")) for p in ports]
    for key in sorted({k for k in keys if keys.count(k) > 1}):
        errors.append("spec.ports[]: Duplicate value: %s/%s" % key)
    return errors


class _Handler(BaseHTTPRequestHandler):
    api = None  # the ApplyServer, set per server class

    def log_message(self, *args):
        pass

    def _reply(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _status(self, code, reason, message):
        self._reply(code, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                           "reason": reason, "message": message, "code": code})

    def _body(self):
        return self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()

    def do_GET(self):
        path = self.path.split("?")[0]
        if path == "/version":
            return self._reply(200, {"major": "1", "minor": "32", "gitVersion": "v1.32.4"})
        if path == "/api":
            return self._reply(200, {"kind": "APIVersions", "versions": ["v1"],
                                     "serverAddressByClientCIDRs": [
                                         {"clientCIDR": "0.0.0.0/0",
                                          "serverAddress": "127.0.0.1"}]})
        if path == "/apis":
            return self._reply(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": []})
        if path == "/api/v1":
            return self._reply(200, {"kind": "APIResourceList", "groupVersion": "v1",
                                     "resources": [
                                         {"name": name, "singularName": kind.lower(),
                                          "namespaced": True, "kind": kind,
                                          "verbs": ["create", "get", "list", "patch", "update"]}
                                         for name, kind in RESOURCES.items()]})
        obj = self.api.objects.get(path)
        if obj is None:
            return self._status(404, "NotFound", "%s not found" % path)
        return self._reply(200, obj)

    def do_POST(self):
        obj = json.loads(self._body())
        path = self.path.split("?")[0] + "/" + obj["metadata"]["name"]
        errors = service_port_errors(obj)
        if errors:
            return self._status(422, "Invalid", "; ".join(errors))
        self.api.objects[path] = obj
        self._reply(201, obj)

    def do_PATCH(self):
        path = self.path.split("?")[0]
        patch = self._body()
        self.api.patches.append((path, self.headers.get("Content-Type"), json.loads(patch)))
        if path not in self.api.objects:
            return self._status(404, "NotFound", "%s not found" % path)
        merged, error = self.api.strategic_merge(self.api.objects[path], patch)
        if merged is None:
            return self._status(500, "InternalError", error)
        errors = service_port_errors(merged)
        if errors:
            return self._status(422, "Invalid", "; ".join(errors))
        self.api.objects[path] = merged
        self._reply(200, merged)


class ApplyServer:
    """Objects by API path; `kubectl(...)` runs kubectl against it."""

    def __init__(self, objects=()):
        self.objects = {}
        self.patches = []  # (path, content type, patch) of every PATCH, in order
        self.workdir = tempfile.mkdtemp(prefix="kdns-apply-")
        for obj in objects:
            self.put(obj)
        handler = type("Handler", (_Handler,), {"api": self})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @staticmethod
    def path_of(obj):
        kind = {v: k for k, v in RESOURCES.items()}[obj["kind"]]
        return "/api/v1/namespaces/%s/%s/%s" % (obj["metadata"]["namespace"], kind,
                                                obj["metadata"]["name"])

    def put(self, obj):
        """Stores `obj` as the API server holds it (created without kubectl apply)."""
        self.objects[self.path_of(obj)] = copy.deepcopy(obj)

    def get(self, obj):
        return self.objects.get(self.path_of(obj))

    def strategic_merge(self, live, patch):
        """(merged, None) or (None, error): `patch` over `live` by kubectl's own code."""
        live_file = os.path.join(self.workdir, "live.json")
        with open(live_file, "w") as f:
            json.dump(live, f)
        out = subprocess.run([KUBECTL, "patch", "--local", "-f", live_file,
                              "--type=strategic", "-p", patch, "-o", "json"],
                             capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            return None, out.stderr.strip()
        return json.loads(out.stdout), None

    def kubectl(self, *args, stdin=None):
        """(exit code, stdout + stderr) of kubectl with `args`, pointed at this server."""
        kubeconfig = os.path.join(self.workdir, "kubeconfig")
        open(kubeconfig, "a").close()
        out = subprocess.run(
            [KUBECTL, "--kubeconfig=" + kubeconfig,
             "--server=http://127.0.0.1:%d" % self.server.server_address[1], *args],
            input=stdin, capture_output=True, text=True, timeout=120,
            env=dict(os.environ, HOME=self.workdir))
        return out.returncode, out.stdout + out.stderr

    def apply(self, docs):
        """`kubectl apply -f -` of `docs` (a list of objects): (exit code, output)."""
        return self.kubectl("apply", "--validate=false", "-f", "-",
                            stdin=yaml.safe_dump_all(docs))

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        shutil.rmtree(self.workdir, ignore_errors=True)
