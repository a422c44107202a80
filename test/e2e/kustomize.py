"""A small kustomize, the manifests suites' fallback where the real one is not installed
(manifests.render() chooses; manifests_render_test.py checks that the two agree): renders
a kustomization directory into its documents, for what manifests/ uses: resources (also
directories of other kustomizations), components, ConfigMap generators (literals, files)
without a name hash, images and JSON 6902 patches; and the pod spec of a rendered
workload. No I/O beyond reading the files.
"""
import copy
import os

import yaml

WORKLOADS = {"Deployment", "DaemonSet", "StatefulSet"}


def load_docs(path):
    with open(path) as f:
        return [doc for doc in yaml.safe_load_all(f) if doc is not None]


def json_pointer(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise ValueError("bad JSON pointer " + path)
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def apply_json6902(doc, ops):
    """RFC 6902 add, replace, remove and test: what the kustomizations' patches use (a
    failed test fails the rendering, as it fails kustomize's)."""
    for op in ops:
        parts = json_pointer(op["path"])
        parent = doc
        for part in parts[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent[part]
        last = parts[-1]
        if op["op"] in ("add", "replace"):
            value = copy.deepcopy(op["value"])
            if isinstance(parent, list):
                if last == "-":
                    parent.append(value)
                elif op["op"] == "add":
                    parent.insert(int(last), value)
                else:
                    parent[int(last)] = value
            else:
                if op["op"] == "replace" and last not in parent:
                    raise ValueError("replace of a missing path " + op["path"])
                parent[last] = value
        elif op["op"] == "remove":
            del parent[int(last) if isinstance(parent, list) else last]
        elif op["op"] == "test":
            found = parent[int(last)] if isinstance(parent, list) else parent.get(last)
            if found != op["value"]:
                raise ValueError("patch test failed: %s is %r, not %r" % (op["path"], found,
                                                                         op["value"]))
        else:
            raise ValueError("unsupported patch op " + op["op"])


def target_matches(target, doc):
    meta = doc.get("metadata", {})
    group_version = doc.get("apiVersion", "")
    group, _, version = group_version.rpartition("/")
    checks = {"kind": doc.get("kind"), "name": meta.get("name"),
              "namespace": meta.get("namespace"), "version": version, "group": group}
    for key, want in target.items():
        if key not in checks:
            raise ValueError("unsupported patch target field " + key)
        if checks[key] != want:
            return False
    return True


def split_image(image):
    """registry/name:tag@digest -> (name, tag, digest)."""
    digest = None
    if "@" in image:
        image, digest = image.split("@", 1)
    tag = None
    slash = image.rfind("/")
    colon = image.rfind(":")
    if colon > slash:
        image, tag = image[:colon], image[colon + 1:]
    return image, tag, digest


def pod_spec(doc):
    if doc.get("kind") in WORKLOADS:
        return doc["spec"]["template"]["spec"]
    if doc.get("kind") == "Pod":
        return doc["spec"]
    return None


def all_containers(spec):
    return spec.get("initContainers", []) + spec.get("containers", [])


def generate_configmaps(directory, kustomization):
    """The ConfigMaps of configMapGenerator (literals and files, no name hash): a file's
    key is its base name, as kustomize's."""
    docs = []
    for generator in kustomization.get("configMapGenerator", []):
        options = generator.get("options", {})
        if not options.get("disableNameSuffixHash") or set(generator) - {
                "name", "namespace", "literals", "files", "options"}:
            raise ValueError("configMapGenerator %s: only literals and files with "
                             "disableNameSuffixHash are rendered here" % generator["name"])
        metadata = {"name": generator["name"]}
        if "namespace" in generator:
            metadata["namespace"] = generator["namespace"]
        if options.get("labels"):
            metadata["labels"] = dict(options["labels"])
        data = dict(literal.split("=", 1) for literal in generator.get("literals", []))
        for name in generator.get("files", []):
            with open(os.path.join(directory, name)) as f:
                data[os.path.basename(name)] = f.read()
        docs.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata,
                     "data": data})
    return docs


def apply_patches(kustomization, docs):
    for patch in kustomization.get("patches", []):
        ops = yaml.safe_load(patch["patch"])
        if not isinstance(ops, list):
            raise ValueError("only JSON 6902 patches (a list of ops) are rendered here")
        hits = [doc for doc in docs if target_matches(patch["target"], doc)]
        if not hits:
            raise ValueError("patch target %s matches nothing" % patch["target"])
        for doc in hits:
            apply_json6902(doc, ops)


def read_kustomization(directory, kind):
    with open(os.path.join(directory, "kustomization.yaml")) as f:
        kustomization = yaml.safe_load(f)
    if kustomization.get("kind", "Kustomization") != kind:
        raise ValueError("%s is a %s, not a %s" % (directory, kustomization.get("kind"), kind))
    supported = {"apiVersion", "kind", "resources", "images", "patches", "components",
                 "configMapGenerator", "replacements"}
    extra = set(kustomization) - supported
    if extra:
        raise ValueError("%s/kustomization.yaml uses %s, which this test does not render: "
                         "teach render() or drop them" % (directory, sorted(extra)))
    return kustomization


def field_path(path):
    """A replacement's fieldPath split at its dots, a [key=value] or [=value] selector (which
    may hold dots) one segment."""
    segments, current, depth = [], "", 0
    for char in path:
        if char == "." and depth == 0:
            segments.append(current)
            current = ""
            continue
        depth += {"[": 1, "]": -1}.get(char, 0)
        current += char
    return segments + [current]


def walk(node, segments):
    """(parent, key) of the field `segments` name in `node`: a key, an index, [key=value]
    (the list item whose key is value) or [=value] (the list item equal to value)."""
    parent, key = None, None
    for segment in segments:
        if parent is not None:
            node = parent[key]
        if segment.startswith("[") and segment.endswith("]"):
            want_key, want = segment[1:-1].split("=", 1)
            matches = [i for i, item in enumerate(node)
                       if (item == want if not want_key else
                           isinstance(item, dict) and item.get(want_key) == want)]
            if len(matches) != 1:
                raise ValueError("replacement: %s selects %d items" % (segment, len(matches)))
            parent, key = node, matches[0]
        else:
            parent, key = node, int(segment) if isinstance(node, list) else segment
    return parent, key


def apply_replacements(kustomization, docs):
    """kustomize's replacements as the components write them: a source object's field into
    each target's fieldPaths, whole, or as part `options.index` of the target value split
    at `options.delimiter`."""
    for replacement in kustomization.get("replacements", []):
        source = replacement["source"]
        found = [d for d in docs if d.get("kind") == source["kind"] and
                 d["metadata"]["name"] == source["name"]]
        if len(found) != 1:
            raise ValueError("replacement: nothing selected by %s/%s:%s" % (
                source["kind"], source["name"], source["fieldPath"]))
        parent, key = walk(found[0], field_path(source["fieldPath"]))
        value = parent[key]
        for target in replacement["targets"]:
            select = target["select"]
            for doc in docs:
                if doc.get("kind") != select["kind"] or doc["metadata"]["name"] != select["name"]:
                    continue
                for path in target["fieldPaths"]:
                    parent, key = walk(doc, field_path(path))
                    options = target.get("options", {})
                    if "delimiter" in options:
                        parts = str(parent[key]).split(options["delimiter"])
                        parts[options.get("index", 0)] = str(value)
                        parent[key] = options["delimiter"].join(parts)
                    else:
                        parent[key] = value


def local_config(doc):
    """Whether kustomize reads `doc` but leaves it out of the output."""
    annotations = doc.get("metadata", {}).get("annotations") or {}
    return annotations.get("config.kubernetes.io/local-config") == "true"


def load_resources(directory, kustomization):
    docs = []
    for resource in kustomization.get("resources", []):
        path = os.path.join(directory, resource)
        docs += build(path)[1] if os.path.isdir(path) else load_docs(path)
    return docs


def render(kustomization_dir):
    """(the kustomization, its objects), in kustomize's order of work: resources, then
    each component (its resources, generators, patches and replacements), then the
    kustomization's own generators, patches, replacements and images; local-config objects
    (read, never applied) are left out at the end."""
    kustomization, docs = build(kustomization_dir)
    return kustomization, [doc for doc in docs if not local_config(doc)]


def build(kustomization_dir):
    """render() before local-config objects are left out (what a parent's replacements
    may read)."""
    kustomization = read_kustomization(kustomization_dir, "Kustomization")
    docs = load_resources(kustomization_dir, kustomization)
    for component in kustomization.get("components", []):
        directory = os.path.join(kustomization_dir, component)
        part = read_kustomization(directory, "Component")
        docs += load_resources(directory, part) + generate_configmaps(directory, part)
        apply_patches(part, docs)
        apply_replacements(part, docs)
    docs += generate_configmaps(kustomization_dir, kustomization)
    apply_patches(kustomization, docs)
    apply_replacements(kustomization, docs)
    for entry in kustomization.get("images", []):
        for doc in docs:
            spec = pod_spec(doc)
            for container in all_containers(spec) if spec else []:
                name, tag, digest = split_image(container["image"])
                if name != entry["name"]:
                    continue
                name = entry.get("newName", name)
                tag = entry.get("newTag", tag)
                digest = entry.get("digest", digest)
                container["image"] = name + (":" + tag if tag and not digest else "") + \
                    ("@" + digest if digest else "")
    return kustomization, docs
