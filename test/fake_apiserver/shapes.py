"""Byte shapes of kube-apiserver v1.25 responses, as captured in test/fixtures/k8s-api.

Pure functions, no I/O: the resource table, Go-compatible compact JSON, the field order
Go's structs give (so our bytes line up with the captures), the defaults the apiserver
fills in on create, Status bodies, bookmark stubs, continue tokens and discovery documents.
"""
import base64
import binascii
import json
import time
import uuid


class Resource:
    """One served resource: its URL segments and the kinds it lists and watches."""

    def __init__(self, plural, kind, group, version, body_keys, bookmark_body, url_plural=None):
        self.plural = plural  # the store's key for the resource (unique)
        self.url_plural = url_plural or plural  # its last URL segment
        self.kind = kind
        self.group = group  # "" for the core group
        self.version = version
        self.api_version = f"{group}/{version}" if group else version
        self.list_kind = kind + "List"
        self.body_keys = body_keys  # top-level keys after metadata, in Go struct order
        self.bookmark_body = bookmark_body  # Go zero values of those keys in a bookmark

    def prefix(self):
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"


RESOURCES = {
    "services": Resource("services", "Service", "", "v1", ["spec", "status"],
                         {"spec": {}, "status": {"loadBalancer": {}}}),
    "endpoints": Resource("endpoints", "Endpoints", "", "v1", ["subsets"], {}),
    "pods": Resource("pods", "Pod", "", "v1", ["spec", "status"],
                     {"spec": {"containers": None}, "status": {}}),
    "endpointslices": Resource("endpointslices", "EndpointSlice", "discovery.k8s.io", "v1",
                               ["addressType", "endpoints", "ports"],
                               {"addressType": "", "endpoints": None, "ports": None}),
}
# CRDs of the multicluster zones. Two groups call their kind ServiceImport, so these are
# found by kind and apiVersion (resource_for). A CRD stays served unless the fake was
# started with --crd-absent GROUP or POST /control/crd took it away. Each is served at one
# version (MCS: v1alpha1; its v1beta1 path answers 404, as on a cluster without that
# version). Bookmarks of custom resources carry only kind, apiVersion and metadata.
for _group, _version in (("multicluster.x-k8s.io", "v1alpha1"),
                         ("networking.kubeslice.io", "v1beta1"), ("mesh.avesha.io", "v1beta1")):
    RESOURCES["serviceimports." + _group] = Resource(
        "serviceimports." + _group, "ServiceImport", _group, _version, ["spec", "status"], {},
        url_plural="serviceimports")
CRD_GROUPS = ("multicluster.x-k8s.io", "networking.kubeslice.io", "mesh.avesha.io")
RESOURCE_BY_KIND = {r.kind: r for r in RESOURCES.values() if r.kind != "ServiceImport"}


def resource_for(kind, api_version=None):
    """The Resource of an object's kind and apiVersion, or None."""
    if kind != "ServiceImport":
        return RESOURCE_BY_KIND.get(kind)
    group = (api_version or "").split("/")[0] if "/" in (api_version or "") else ""
    return RESOURCES.get("serviceimports." + group)


def resource_at(api_prefix, url_plural):
    """The Resource served at /<api_prefix>/<url_plural> ("apis/discovery.k8s.io/v1",
    "endpointslices"), or None."""
    for res in RESOURCES.values():
        if res.url_plural == url_plural and res.prefix() == "/" + api_prefix:
            return res
    return None


def _selector_parts(selector):
    """The requirements of a labelSelector: split at commas outside parentheses."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(selector or ""):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(selector[start:i])
            start = i + 1
    parts.append((selector or "")[start:])
    return [p.strip() for p in parts if p.strip()]


def _selector_terms(selector):
    """[(key, op, value)] of a labelSelector: "k", "!k", "k=v", "k==v", "k!=v",
    "k in (a,b)", "k notin (a,b)", comma-joined (set values as a frozenset)."""
    terms = []
    for part in _selector_parts(selector):
        words = part.split(None, 1)
        if len(words) == 2 and words[1].split("(")[0].strip() in ("in", "notin"):
            op = words[1].split("(")[0].strip()
            values = words[1][words[1].index("(") + 1:words[1].rindex(")")]
            terms.append((words[0], op, frozenset(v.strip() for v in values.split(","))))
        elif part.startswith("!"):
            terms.append((part[1:].strip(), "absent", None))
        elif "!=" in part:
            k, v = part.split("!=", 1)
            terms.append((k.strip(), "!=", v.strip()))
        elif "=" in part:
            k, v = part.split("==", 1) if "==" in part else part.split("=", 1)
            terms.append((k.strip(), "=", v.strip()))
        else:
            terms.append((part, "exists", None))
    return terms


def selector_matcher(selector):
    """A function obj -> bool for a labelSelector (None or "" matches everything)."""
    terms = _selector_terms(selector)
    if not terms:
        return lambda obj: True

    def match(obj):
        labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
        for key, op, value in terms:
            if op == "exists" and key not in labels:
                return False
            if op == "absent" and key in labels:
                return False
            if op == "=" and labels.get(key) != value:
                return False
            if op == "!=" and labels.get(key) == value:
                return False
            if op == "in" and labels.get(key) not in value:
                return False
            if op == "notin" and key in labels and labels[key] in value:
                return False
        return True
    return match

# Go struct field order (k8s.io/api), used to order keys the way the real server does.
META_ORDER = ["name", "generateName", "namespace", "selfLink", "uid", "resourceVersion",
              "generation", "creationTimestamp", "deletionTimestamp",
              "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences",
              "finalizers", "managedFields"]
SERVICE_SPEC_ORDER = ["ports", "selector", "clusterIP", "clusterIPs", "type", "externalIPs",
                      "sessionAffinity", "loadBalancerIP", "loadBalancerSourceRanges",
                      "externalName", "externalTrafficPolicy", "healthCheckNodePort",
                      "publishNotReadyAddresses", "sessionAffinityConfig", "ipFamilies",
                      "ipFamilyPolicy", "allocateLoadBalancerNodePorts",
                      "loadBalancerClass", "internalTrafficPolicy"]
SERVICE_PORT_ORDER = ["name", "protocol", "appProtocol", "port", "targetPort", "nodePort"]
SLICE_ENDPOINT_ORDER = ["addresses", "conditions", "hostname", "targetRef",
                        "deprecatedTopology", "nodeName", "zone", "hints"]
SLICE_CONDITION_ORDER = ["ready", "serving", "terminating"]
SLICE_PORT_ORDER = ["name", "protocol", "port", "appProtocol"]

CONTINUE_VERSION = "meta.k8s.io/v1"


class Stored(dict):
    """An object as the store keeps it. Stored objects are never changed in place (a write
    stores a new one), so each caches its encoding as a list item (see list_item)."""
    __slots__ = ("item_bytes",)


class EncodedItem(bytes):
    """A list item already encoded; encode() splices it into the list's bytes."""
    __slots__ = ()


def encode(obj):
    """Compact JSON as Go's encoding/json writes it (HTML-safe escapes, UTF-8 kept).

    A List whose items were given by list_item() is joined from their cached bytes: the
    same bytes, without encoding every stored object again for every page."""
    items = obj.get("items") if type(obj) is dict else None
    if (type(items) is list and items and next(reversed(obj)) == "items"
            and any(type(item) is EncodedItem for item in items)):
        head = _encode({k: v for k, v in obj.items() if k != "items"})
        parts = [item if type(item) is EncodedItem else _encode(item) for item in items]
        return b"".join((head[:-1], b',"items":[' if len(obj) > 1 else b'"items":[',
                         b",".join(parts), b"]}"))
    return _encode(obj)


def _encode(obj):
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    for raw, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                     ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(raw, esc)
    return text.encode("utf-8")


def _ordered(d, order):
    if not isinstance(d, dict):
        return d
    out = {k: d[k] for k in order if k in d}
    out.update((k, v) for k, v in d.items() if k not in out)
    return out


def now_timestamp():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def normalize(obj, res):
    """Key order of a stored object: kind, apiVersion, metadata, then the type's fields."""
    obj = dict(obj)
    obj["kind"] = res.kind
    obj["apiVersion"] = res.api_version
    obj["metadata"] = _ordered(obj.get("metadata") or {}, META_ORDER)
    if res.kind == "Service" and isinstance(obj.get("spec"), dict):
        spec = _ordered(obj["spec"], SERVICE_SPEC_ORDER)
        if isinstance(spec.get("ports"), list):
            spec["ports"] = [_ordered(p, SERVICE_PORT_ORDER) for p in spec["ports"]]
        obj["spec"] = spec
    if res.kind == "EndpointSlice":
        if isinstance(obj.get("endpoints"), list):
            eps = []
            for ep in obj["endpoints"]:
                ep = _ordered(ep, SLICE_ENDPOINT_ORDER)
                if isinstance(ep, dict) and isinstance(ep.get("conditions"), dict):
                    ep["conditions"] = _ordered(ep["conditions"], SLICE_CONDITION_ORDER)
                eps.append(ep)
            obj["endpoints"] = eps
        if isinstance(obj.get("ports"), list):
            obj["ports"] = [_ordered(p, SLICE_PORT_ORDER) for p in obj["ports"]]
    return _ordered(obj, ["kind", "apiVersion", "metadata"] + res.body_keys)


def apply_defaults(obj, res, old):
    """What the apiserver adds on create/update: uid, timestamps, managedFields, defaults.

    `old` is the stored object being replaced (None on create); its uid and
    creationTimestamp carry over unless the caller set them.
    """
    obj = dict(obj)
    meta = dict(obj.get("metadata") or {})
    meta.setdefault("namespace", "default")
    if old is not None:
        meta.setdefault("uid", old["metadata"].get("uid"))
        meta.setdefault("creationTimestamp", old["metadata"].get("creationTimestamp"))
    meta.setdefault("uid", str(uuid.uuid4()))
    meta.setdefault("creationTimestamp", now_timestamp())
    if "managedFields" not in meta:
        fields = {"f:" + k: {} for k in obj if k not in ("kind", "apiVersion", "metadata")}
        if meta.get("labels"):
            fields["f:metadata"] = {"f:labels": {".": {}}}
        meta["managedFields"] = [{"manager": "kdns-fake-apiserver", "operation": "Update",
                                  "apiVersion": res.api_version, "time": now_timestamp(),
                                  "fieldsType": "FieldsV1", "fieldsV1": fields}]
    obj["metadata"] = meta
    if res.kind == "Service":
        spec = dict(obj.get("spec") or {})
        spec.setdefault("type", "ClusterIP")
        if spec["type"] != "ExternalName":
            spec.setdefault("sessionAffinity", "None")
            spec.setdefault("internalTrafficPolicy", "Cluster")
            ports = []
            for p in spec.get("ports") or []:
                p = dict(p)
                p.setdefault("protocol", "TCP")
                if "port" in p:
                    p.setdefault("targetPort", p["port"])
                ports.append(p)
            if ports:
                spec["ports"] = ports
        obj["spec"] = spec
        obj.setdefault("status", {"loadBalancer": {}})
    return obj


def content_equal(a, b):
    """True when an update changes nothing the apiserver would store (a no-op patch)."""
    def strip(o):
        o = dict(o)
        meta = dict(o.get("metadata") or {})
        for k in ("resourceVersion", "managedFields", "generation", "uid", "creationTimestamp"):
            meta.pop(k, None)
        o["metadata"] = meta
        return o
    return strip(a) == strip(b)


def list_item(obj):
    """An object as it appears inside a …List: without kind and apiVersion. For a Stored
    object, its encoding (an EncodedItem, computed once)."""
    if type(obj) is Stored:
        try:
            return obj.item_bytes
        except AttributeError:
            pass
    item = {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}
    if type(obj) is not Stored:
        return item
    obj.item_bytes = EncodedItem(_encode(item))
    return obj.item_bytes


def bookmark(res, rv):
    obj = {"kind": res.kind, "apiVersion": res.api_version,
           "metadata": {"resourceVersion": str(rv), "creationTimestamp": None}}
    obj.update(res.bookmark_body)
    return obj


def watch_line(event_type, obj):
    return encode({"type": event_type, "object": obj}) + b"\n"


def status(code, message, reason=None, details=None, metadata=None):
    """A metav1.Status body (field order as Go writes it)."""
    body = {"kind": "Status", "apiVersion": "v1", "metadata": metadata or {},
            "status": "Failure", "message": message}
    if reason:
        body["reason"] = reason
    if details is not None:
        body["details"] = details
    body["code"] = code
    return body


def status_unauthorized():
    return status(401, "Unauthorized", "Unauthorized")


def status_not_found_generic():
    return status(404, "the server could not find the requested resource", "NotFound", {})


def status_not_found_object(res, name):
    details = {"name": name}
    if res.group:
        details["group"] = res.group
    details["kind"] = res.url_plural
    return status(404, f'{res.url_plural} "{name}" not found', "NotFound", details)


def status_too_old_watch(rv, oldest):
    return status(410, f"too old resource version: {rv} ({oldest})", "Expired")


def status_rv_not_a_number(rv):
    return status(500, f'resourceVersion: Invalid value: "{rv}": strconv.ParseUint: '
                       f'parsing "{rv}": invalid syntax')


def status_rv_too_large(rv, current):
    return status(504, f"Timeout: Too large resource version: {rv}, current: {current}",
                  "Timeout", {"causes": [{"reason": "ResourceVersionTooLarge",
                                          "message": "Too large resource version"}],
                              "retryAfterSeconds": 1})


def status_match_without_rv():
    msg = "resourceVersionMatch is forbidden unless resourceVersion is provided"
    return status(422, f'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: '
                       f'Forbidden: {msg}', "Invalid",
                  {"group": "meta.k8s.io", "kind": "ListOptions",
                   "causes": [{"reason": "FieldValueForbidden", "message": f"Forbidden: {msg}",
                               "field": "resourceVersionMatch"}]})


def status_forbidden_option(field, msg):
    """The 422 of an invalid ListOptions (the form of 07-list-services-match-without-rv)."""
    return status(422, f'ListOptions.meta.k8s.io "" is invalid: {field}: Forbidden: {msg}',
                  "Invalid",
                  {"group": "meta.k8s.io", "kind": "ListOptions",
                   "causes": [{"reason": "FieldValueForbidden", "message": f"Forbidden: {msg}",
                               "field": field}]})


def status_list_rv_expired():
    return status(410, "The resourceVersion for the provided list is too old.", "Expired")


def status_continue_expired(inconsistent_token):
    return status(410, "The provided continue parameter is too old to display a consistent "
                       "list result. You can start a new list without the continue parameter, "
                       "or use the continue token in this response to retrieve the remainder "
                       "of the results. Continuing with the provided token results in an "
                       "inconsistent list - objects that were created, modified, or deleted "
                       "between the time the first chunk was returned and now may show up in "
                       "the list.", "Expired", metadata={"continue": inconsistent_token})


def status_bad_continue(why):
    return status(400, f"invalid continue token: {why}", "BadRequest")


def status_fault(code):
    """Bodies for injected 500/503/504 faults (shapes of the apiserver's own errors)."""
    if code == 500:
        return status(500, "Internal error occurred: injected by the fake apiserver",
                      "InternalError", {"causes": [{"message": "injected by the fake apiserver"}]})
    if code == 503:
        return status(503, "The server is currently unable to handle the request",
                      "ServiceUnavailable", {})
    if code == 504:
        return status(504, "Timeout: request did not complete within the allotted timeout",
                      "Timeout", {})
    return status(code, "injected by the fake apiserver")


def encode_continue(rv, start):
    raw = json.dumps({"v": CONTINUE_VERSION, "rv": rv, "start": start}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_continue(token):
    """(rv, start) of a continue token; raises ValueError with the apiserver's wording."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    for i, ch in enumerate(token):
        if ch not in alphabet and not (ch == "=" and i >= len(token) - 2):
            raise ValueError(f"continue key is not valid: illegal base64 data at input byte {i}")
    if len(token.rstrip("=")) % 4 == 1:
        raise ValueError("continue key is not valid: illegal base64 data at input byte "
                         f"{len(token.rstrip('=')) - 1}")
    try:
        raw = base64.urlsafe_b64decode(token.rstrip("=") + "=" * (-len(token.rstrip("=")) % 4))
        data = json.loads(raw)
    except (binascii.Error, ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"continue key is not valid: {e}") from None
    if not isinstance(data, dict) or data.get("v") != CONTINUE_VERSION:
        raise ValueError("continue key is not valid: incorrect encoded start resourceVersion "
                         f"(version {CONTINUE_VERSION})")
    if not isinstance(data.get("rv"), int) or not isinstance(data.get("start"), str):
        raise ValueError("continue key is not valid: missing rv or start")
    return data["rv"], data["start"]


VERSION_BODY = b"""{
  "major": "1",
  "minor": "25",
  "gitVersion": "v1.25.0-k3s1",
  "gitCommit": "743e65b624d1f3fae9f6b785011fdce14c1f90a2",
  "gitTreeState": "clean",
  "buildDate": "2022-08-26T15:32:08Z",
  "goVersion": "go1.19.8",
  "compiler": "gc",
  "platform": "linux/amd64"
}"""

_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
_HASHES = {"services": "0/CO1lhkEBI=", "endpoints": "fWeeMqaN/OA=", "pods": "xPOwRZ+Yhw8=",
           "endpointslices": "Nx3SIv6I0mE="}


def api_versions(host):
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}]}


def discovery_group():
    gv = {"groupVersion": "discovery.k8s.io/v1", "version": "v1"}
    return {"kind": "APIGroup", "apiVersion": "v1", "name": "discovery.k8s.io",
            "versions": [gv], "preferredVersion": gv}


def api_group_list(slices_served):
    groups = []
    if slices_served:
        g = discovery_group()
        del g["kind"], g["apiVersion"]
        groups.append(g)
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def resource_list(group_version):
    resources = [r for r in RESOURCES.values() if r.api_version == group_version]
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version,
            "resources": [{"name": r.plural, "singularName": "", "namespaced": True,
                           "kind": r.kind, "verbs": _VERBS,
                           "storageVersionHash": _HASHES[r.plural]} for r in resources]}
