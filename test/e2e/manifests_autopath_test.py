#!/usr/bin/python3
"""The autopath component of the manifests (manifests/components/autopath), rendered by
manifests.render() (the real kustomize where installed) from a kustomization of the operator's kind, outside
manifests/, next to the base rendered alone: the only difference is `--autopath` at the
end of kubedns's arguments, and that command line passes kubedns's own flag check
(`--check-flags`, from $KDNS_BIN). Closes with `N passed, M failed`.
"""
import json
import os
import sys


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import kustomize  # noqa: E402
import manifests  # noqa: E402

COMPONENT = os.path.join(manifests.MANIFESTS, "components", "autopath")


def with_component():
    """Renders the base with the component, as an operator's kustomization would."""
    return manifests.render(components=[COMPONENT]).docs


def kubedns_container(docs):
    for doc in docs:
        if doc.get("kind") == "Deployment" and doc["metadata"]["name"] == "kube-dns":
            for container in kustomize.pod_spec(doc)["containers"]:
                if container["name"] == "kubedns":
                    return container
    raise AssertionError("no kubedns container in the kube-dns Deployment")


def test_the_component_adds_autopath_to_kubedns_only(env):
    base = manifests.render().docs
    docs = with_component()
    p = []
    args = kubedns_container(docs).get("args", [])
    base_args = kubedns_container(base).get("args", [])
    if args != base_args + ["--autopath"]:
        p.append("kubedns's args %s, want the base's %s and --autopath" % (args, base_args))
    # Everything else as the base renders it.
    kubedns_container(docs)["args"] = base_args
    key = lambda d: json.dumps(d, sort_keys=True)  # noqa: E731
    if sorted(map(key, docs)) != sorted(map(key, base)):
        p.append("the component changes more than kubedns's arguments")
    kubedns_container(docs)["args"] = args
    return p


def test_kubedns_accepts_the_command_line(env):
    rendered = manifests.render(components=[COMPONENT])
    container = kubedns_container(rendered.docs)
    argv = rendered.argv(container)
    if "--autopath" not in argv:
        return ["--autopath is not on kubedns's command line: %s" % argv]
    problem = manifests.check_command(container, argv, rendered.program_of(container),
                                      rendered.image_env(container))
    return [problem] if problem else []


def main():
    return harness.main("kdns-manifests-autopath-",
                        [test_the_component_adds_autopath_to_kubedns_only,
                         test_kubedns_accepts_the_command_line])


if __name__ == "__main__":
    sys.exit(main())
