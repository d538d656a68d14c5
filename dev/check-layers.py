#!/usr/bin/env python3
"""check-layers.py: the library's floors (docs/architecture.md), checked from
the sources: every `#include "..."` of a library file must name a header of
its own folder or of a folder on a lower floor. Two folders on one floor may
not include each other (no cycles), only the engine includes the public
header, and a private header (name ending in _impl.h) is included only by
files of its own directory. Exits 1 naming each offending include; 0 prints a one-line summary.

Headers are included by bare name, so each header name must be unique across
the library (also checked). The per-floor CMake targets enforce the same rule
when building; this check also covers what the build would not reach (a file
of a configuration not built here, e.g. the CUDA sources on a CPU machine).

usage: dev/check-layers.py [REPO_ROOT]"""
import os
import re
import sys

# Folder -> floor, lowest first. Subfolders (cpu/, cuda/, nocuda/) belong to
# their folder.
FLOORS = {
    "core": 0,
    "kernels": 1, "text": 1,
    "format": 2, "shrink": 2,
    "model": 3,
    "decoder": 4,
    "engine": 5,
    "include": 5,  # the public header: the API the engine implements
}
SOURCE_EXT = (".c", ".cc", ".h", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    root = os.path.abspath(root)
    headers = {}  # name -> folder
    header_paths = {}  # name -> path
    sources = []  # (path, folder)
    problems = []
    for folder in FLOORS:
        for dirpath, _, files in os.walk(os.path.join(root, folder)):
            for name in sorted(files):
                if not name.endswith(SOURCE_EXT):
                    continue
                path = os.path.join(dirpath, name)
                sources.append((path, folder))
                if name.endswith((".h", ".cuh")):
                    if name in headers and headers[name] != folder:
                        problems.append(f"header name {name} is in both {headers[name]}/ and {folder}/")
                    headers[name] = folder
                    header_paths[name] = path
    n_includes = 0
    for path, folder in sources:
        rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for match in INCLUDE.finditer(text):
            name = os.path.basename(match.group(1))
            line = text.count("\n", 0, match.start()) + 1
            target = headers.get(name)
            if target is None:
                problems.append(f"{rel}:{line}: includes \"{match.group(1)}\", not a library header")
                continue
            n_includes += 1
            if name.endswith("_impl.h") and os.path.dirname(rel) != os.path.relpath(
                    os.path.dirname(header_paths[name]), root):
                problems.append(f"{rel}:{line}: includes {name}, private to "
                                f"{os.path.relpath(os.path.dirname(header_paths[name]), root)}/")
                continue
            if target == folder:
                continue
            if target == "include":
                if folder != "engine":
                    problems.append(f"{rel}:{line}: includes the public header {name}; "
                                    "only engine/ may")
            elif FLOORS[target] > FLOORS[folder]:
                problems.append(f"{rel}:{line}: {folder}/ (floor {FLOORS[folder]}) includes {name} "
                                f"from {target}/ (floor {FLOORS[target]}): up a floor")
            elif FLOORS[target] == FLOORS[folder]:
                problems.append(f"{rel}:{line}: {folder}/ includes {name} from {target}/, a folder "
                                f"of the same floor {FLOORS[folder]} (folders of a floor stay apart)")
    if problems:
        for p in problems:
            print("check-layers: " + p)
        print(f"check-layers: FAILED, {len(problems)} problem(s)")
        return 1
    print(f"check-layers: ok ({len(sources)} files, {n_includes} includes, "
          f"{len(FLOORS)} folders on {max(FLOORS.values()) + 1} floors)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
