#!/usr/bin/env python3
"""Checks that no #include runs back up the layer order of common/ (docs/design.md, "Layers").

Each module of common/ sits on a layer and may include only modules on lower layers (and
itself); modules on one layer do not include each other. A program folder may include
common/ and itself, never another program. common/ never includes a program. Test files
(*_test.cc, testing.h, *_testing.h, *_test_util.h) may also include test/ support; no other
file may. Prints one line per include that breaks these rules and exits 1, or prints
"layers: clean".
"""

import pathlib
import re
import subprocess
import sys

# Lowest first. Keep in step with docs/design.md, "Layers".
LAYERS = [
    ["base"],
    ["app", "dns", "loop", "metrics"],
    ["limits"],
    ["http", "k8s"],
    ["upstream"],
    ["ares", "config"],
    ["server"],
]
PROGRAMS = ["frontend-cache", "kubedns", "nanny", "sidecar"]

RANK = {module: rank for rank, layer in enumerate(LAYERS) for module in layer}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def is_test_file(path):
    name = pathlib.PurePath(path).name
    return (name.endswith("_test.cc") or name == "testing.h" or name.endswith("_testing.h")
            or name.endswith("_test_util.h"))


def owner(path):
    """('common', module) or ('program', name) or (None, None) for anything else."""
    parts = pathlib.PurePath(path).parts
    if len(parts) >= 3 and parts[0] == "common":
        return "common", parts[1]
    if len(parts) >= 2 and parts[0] in PROGRAMS:
        return "program", parts[0]
    return None, None


def layer_of(module):
    return f"layer {RANK[module]}" if module in RANK else "no layer"


def check(path, target):
    """The problem with `path` including `target`, or None."""
    kind, name = owner(path)
    target_kind, target_name = owner(target)
    if target.startswith("test/"):
        if is_test_file(path):
            return None
        return f"{target} is test support; only test files may include it"
    if kind == "common":
        if name not in RANK:
            return f"common/{name} has no layer: add it to LAYERS and docs/design.md"
        if target_kind == "program":
            return f"common/ never includes a program ({target})"
        if target_kind == "common" and target_name != name:
            if target_name not in RANK:
                return f"common/{target_name} has no layer: add it to LAYERS and docs/design.md"
            if RANK[target_name] >= RANK[name]:
                return (f"common/{name} ({layer_of(name)}) includes common/{target_name} "
                        f"({layer_of(target_name)}), which is not below it")
        return None
    if kind == "program" and target_kind == "program" and target_name != name:
        return f"programs never include each other ({name} includes {target})"
    return None


def main():
    files = subprocess.run(
        ["git", "ls-files", "--", *(f"common/*.{e}" for e in ("h", "cc")),
         *(f"{p}/*.{e}" for p in PROGRAMS for e in ("h", "cc"))],
        check=True, capture_output=True, text=True).stdout.split()
    problems = []
    for path in files:
        try:
            text = pathlib.Path(path).read_text(errors="replace")
        except FileNotFoundError:  # deleted in the work tree, not yet in the index
            continue
        for number, line in enumerate(text.splitlines(), 1):
            match = INCLUDE.match(line)
            if match:
                problem = check(path, match.group(1))
                if problem:
                    problems.append(f"{path}:{number}: {problem}")
    for problem in problems:
        print(f"layers: {problem}")
    if problems:
        print("layers: the order is in mk/check_layers.py and docs/design.md, \"Layers\"")
        return 1
    print("layers: clean")
    return 0


if __name__ == "__main__":
    sys.exit(main())
