#!/usr/bin/python3
"""Profile reports as `lwload profile --json` writes them (lib/profile/report_json.cpp), for the
fuzz_profile_report corpus: no suite leaves one in a file. A whole report, and the same report
with one field wrong in each way report_from_json tells apart.

  /usr/bin/python3 fuzz/generate/profile_report.py OUT_DIR
"""
import json
import os
import sys


def report():
    figures = {"rss": 1 << 20, "anon": 4096, "file": 8192, "shmem": 0}
    return {
        "model": "m.safetensors", "format": "safetensors", "device": "host", "memory": "host",
        "placement": "zero_copy", "io_engine": "pread", "tensor_count": 2, "model_bytes": 96,
        "largest_tensor": {"name": "a", "bytes": 64}, "staging_budget": 0,
        "load_begin_ms": 0.5, "load_ms": 1.25, "sample_period_ms": 1,
        "baseline": figures, "peak": dict(figures, rss=2 << 20), "growth": dict(figures, rss=1 << 20),
        "peak_is_kernel_hwm": True,
        "placement_bytes": {"zero_copy": 96, "direct": 0, "staged": 0}, "max_in_flight": 1,
        "populate_ms": 0.0, "resident_bytes": 96, "lazy": False,
        "pss_baseline": None, "pss_loaded": {"pss": 1, "pss_anon": 0, "pss_file": 1},
        "contract": {"rule": "zero-copy", "bound": 4096, "anon_growth_limit": None, "held": True,
                     "verdict": "held"},
        "samples": {"ms": [0, 1.5], "rss": [1, 2], "anon": [0, 0], "file": [1, 2], "shmem": [0, 0]},
        "phases": [{"name": "open", "begin_ms": 0, "end_ms": 0.25}],
        "tensors": [{"tensor": "a", "begin_ms": 0, "end_ms": 1, "bytes": 64}],
    }


def variants():
    yield "whole", report()
    r = report()
    del r["model"]
    yield "missing", r
    for key, value in [("format", 3), ("tensor_count", -1), ("tensor_count", 1.5), ("load_ms", "1"),
                       ("baseline", []), ("samples", {"ms": {}}), ("phases", {}), ("peak_is_kernel_hwm", 1)]:
        r = report()
        r[key] = value
        yield f"{key}-{type(value).__name__}", r
    r = report()
    r["samples"]["rss"] = [1]
    yield "columns", r
    r = report()
    r["samples"]["anon"][1] = -2
    yield "sample-negative", r
    r = report()
    r["phases"] = [7]
    yield "phase-not-object", r
    r = report()
    r["contract"]["held"] = "yes"
    yield "contract-held", r
    r = report()
    r["tensor_count"] = (1 << 64) - 1
    yield "big-count", r


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, r in variants():
        with open(os.path.join(out, f"{name}.json"), "w") as f:
            json.dump(r, f)
    with open(os.path.join(out, "not-object.json"), "w") as f:
        f.write("[1, 2]")


if __name__ == "__main__":
    main()
