#!/usr/bin/python3
"""Line coverage per reader, as a Markdown table, from `llvm-cov export -summary-only` JSON.

  /usr/bin/python3 fuzz/coverage_table.py SUMMARY.json
  /usr/bin/python3 fuzz/coverage_table.py --missed COVERAGE.lcov BASE_NAME...   (the lines no input reaches)

Sources are grouped into readers by file base name (READERS below), wherever they lie under lib/:
a reader's files may move between folders without this table changing. A listed file the build
did not instrument is reported as missing; sources of lib/formats no reader lists are named too,
so a new file is not left out silently.
"""
import json
import os
import sys

# reader -> the base names of its sources (what one harness, with its folder harness, exercises).
READERS = {
    "safetensors": ["safetensors.cpp", "safetensors_header.cpp"],
    "gguf": ["gguf.cpp", "gguf_split.cpp"],
    "onnx": ["onnx.cpp", "onnx_decode.cpp", "protobuf_wire.cpp"],
    "tflite": ["tflite.cpp", "tflite_model.cpp", "tflite_tables.cpp", "tflite_dtype.cpp", "sparse_decode.cpp"],
    "tfjs": ["tfjs.cpp"],
    "pytorch": ["pytorch.cpp", "pickle_reader.cpp", "zip_archive.cpp"],
    "shared (JSON, headers, checks)": ["json_file.cpp", "json_select.cpp", "header_reader.cpp", "format.cpp",
                                       "registry.cpp", "decode.cpp"],
    "profile report (JSON)": ["report_json.cpp"],
}
# Sources of lib/formats that are not read by a harness, and why (not counted above).
NOT_READERS = {
    "onnx_weightless.cpp": "writes weightless ONNX graphs for the ONNX Runtime adapter; no reader calls it",
}


def missed(lcov, bases):
    """Prints, per source of those base names, each line the profile counts zero times."""
    source, zero = None, {}
    with open(lcov) as f:
        for line in f:
            if line.startswith("SF:"):
                source = os.path.normpath(line[3:].strip())
            elif line.startswith("DA:") and os.path.basename(source) in bases:
                number, count = line[3:].split(",")[:2]
                if int(count) == 0:
                    zero.setdefault(source, []).append(int(number))
    for source, numbers in zero.items():
        with open(source) as f:
            text = f.read().split("\n")
        print(f"== {source}: {len(numbers)} lines not reached")
        for n in sorted(numbers):
            print(f"{n:5} {text[n - 1]}")


def main():
    if sys.argv[1] == "--missed":
        missed(sys.argv[2], set(sys.argv[3:]))
        return
    with open(sys.argv[1]) as f:
        files = json.load(f)["data"][0]["files"]
    by_base = {}
    for entry in files:
        name = entry["filename"]
        if "/lib/" in name or name.startswith("lib/"):
            by_base.setdefault(os.path.basename(name), []).append(entry)
    listed = {base for bases in READERS.values() for base in bases}
    print("| reader | lines | covered | % | files |")
    print("|---|---:|---:|---:|---|")
    total_lines = total_covered = 0
    for reader, bases in READERS.items():
        lines = covered = 0
        parts = []
        for base in bases:
            entries = by_base.get(base, [])
            if not entries:
                parts.append(f"{base} (missing)")
                continue
            for e in entries:
                summary = e["summary"]["lines"]
                lines += summary["count"]
                covered += summary["covered"]
                parts.append(f"{base} {summary['covered']}/{summary['count']}")
        total_lines += lines
        total_covered += covered
        percent = 100.0 * covered / lines if lines else 0.0
        print(f"| {reader} | {lines} | {covered} | {percent:.1f} | {', '.join(parts)} |")
    percent = 100.0 * total_covered / total_lines if total_lines else 0.0
    print(f"| all | {total_lines} | {total_covered} | {percent:.1f} | |")
    unlisted = sorted(base for base, entries in by_base.items()
                      if base.endswith(".cpp") and base not in listed and base not in NOT_READERS
                      and any("/formats/" in e["filename"] for e in entries))
    if unlisted:
        print(f"\nSources of lib/formats in no reader: {', '.join(unlisted)}")


if __name__ == "__main__":
    main()
