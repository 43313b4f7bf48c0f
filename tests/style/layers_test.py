#!/usr/bin/env python3
"""The layers of README's table, and the folders inside transforms, checked on the includes.

usage: layers_test.py SOURCE_DIR [--self-test]

Every C++ file of include/aotgrad and src belongs to one unit (its layer, or for transforms one of
its four folders). A file may include aotgrad headers of its own unit and of the units below it,
never of one above: an include that runs upward names the file, the line and both units. The
layers below providers (support, ir, ops, the transforms folders, driver, report) include no
libtorch header (torch/, ATen/, c10/, caffe2/). Exits 1 with one line per violation.
"""
import os
import re
import sys

# Lowest first. A unit may include itself and those before it.
UNITS = [
    "support",
    "ir",
    "ops",
    "transforms/passes",
    "transforms",
    "transforms/partition",
    "transforms/distributed",
    "driver",
    "report",
    "providers",
    "runtime",
    "frontend",
    "api",
    "cli",
    "python",
]
RANK = {u: i for i, u in enumerate(UNITS)}
NO_TORCH = {u for u in UNITS if RANK[u] < RANK["providers"]}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
TORCH = ("torch/", "ATen/", "c10/", "caffe2/")


def unit_of(rel):
    """The unit of a path relative to the root (include/aotgrad/... or src/...), else None."""
    parts = rel.split("/")
    if parts[:2] == ["include", "aotgrad"]:
        parts = parts[2:]
        if len(parts) == 1:  # aotgrad.h, nested.h: the api's public headers (op_tags.inc: generated)
            return "api" if parts[0].endswith(".h") else None
    elif parts[0] == "src":
        parts = parts[1:]
    else:
        return None
    if len(parts) < 2:
        return None
    if parts[0] == "transforms" and len(parts) > 2 and "transforms/" + parts[1] in RANK:
        return "transforms/" + parts[1]
    return parts[0] if parts[0] in RANK else None


def violations(root):
    out = []
    for top in ("include/aotgrad", "src"):
        for d, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith((".h", ".cc")):
                    continue
                path = os.path.join(d, name)
                rel = os.path.relpath(path, root)
                unit = unit_of(rel)
                if unit is None:
                    out.append(f"{rel}: in no unit of the layer table")
                    continue
                with open(path, encoding="utf-8") as f:
                    for k, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        kind, target = m.groups()
                        if target.startswith(TORCH) and unit in NO_TORCH:
                            out.append(f"{rel}:{k}: {unit} includes libtorch's {target}")
                            continue
                        if kind != '"':
                            continue
                        if target.startswith("aotgrad/"):
                            trel = "include/" + target
                        else:  # a private header, relative to the including file
                            trel = os.path.relpath(os.path.join(os.path.dirname(path), target), root)
                        tunit = unit_of(trel)
                        if tunit is not None and RANK[tunit] > RANK[unit]:
                            out.append(f"{rel}:{k}: {unit} includes {target} of {tunit}, a unit "
                                       "above it")
    return out


def self_test(root):
    """The check catches upward includes (providers reaching into runtime among them) and a libtorch
    include below providers."""
    import shutil
    import tempfile
    tmp = tempfile.mkdtemp()
    try:
        for rel, text in [
            ("include/aotgrad/transforms/passes/p.h", '#include "aotgrad/transforms/partition/q.h"\n'),
            ("src/transforms/partition/q.cc", '#include "../passes/p.h"\n#include <ATen/ATen.h>\n'),
            ("src/runtime/r.cc", '#include <ATen/ATen.h>\n#include "aotgrad/driver/d.h"\n'),
            ("src/providers/o.cc", '#include <ATen/ATen.h>\n#include "aotgrad/runtime/r.h"\n'),
        ]:
            os.makedirs(os.path.join(tmp, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(tmp, rel), "w") as f:
                f.write(text)
        got = violations(tmp)
        want = [
            "include/aotgrad/transforms/passes/p.h:1: transforms/passes includes "
            "aotgrad/transforms/partition/q.h of transforms/partition, a unit above it",
            "src/transforms/partition/q.cc:2: transforms/partition includes libtorch's ATen/ATen.h",
            "src/providers/o.cc:2: providers includes aotgrad/runtime/r.h of runtime, a unit above it",
        ]
        if sorted(got) != sorted(want):
            print("FAIL self-test: got", got)
            return False
        return True
    finally:
        shutil.rmtree(tmp)


def main():
    root = sys.argv[1]
    if not self_test(root):
        return 1
    bad = violations(root)
    for v in bad:
        print(v)
    if bad:
        print(f"FAIL: {len(bad)} includes break the layer order")
        return 1
    print("every include runs down the layer table")
    return 0


if __name__ == "__main__":
    sys.exit(main())
