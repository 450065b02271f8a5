#!/usr/bin/python3
# benchmark: the default plan against every forced placement, warm and cold (docs/BENCHMARKS.md).
"""The default plan against every forced choice, warm and cold, per device: the table in
docs/BENCHMARKS.md ("Choosing from where the bytes are"). Runs `lwload bench --json` (median of
--reps, every variant interleaved in one run) with the page cache warm and evicted, and prints a
Markdown table: each cell the default's median, the best forced variant and its median, and
default / best (≤ 1.10 is the target).

  /usr/bin/python3 scripts/bench/placement.py --lwload build/tools/lwload/lwload MODEL \\
      [--devices host,opencl:0,vulkan:0,cuda:0] [--reps 5] [--cuda-sim build/tests/cuda_sim/libcuda.so.1]

cuda:0 runs on the simulated discrete device (tests/cuda_sim) when --cuda-sim is given.
"""
import argparse
import json
import os
import subprocess
import sys


def bench(lwload, model, device, reps, cold, env):
    command = [lwload, "bench", model, "--device", device, "--no-naive", "--reps", str(reps), "--json"]
    if cold:
        command.append("--cold")
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)}: {result.stderr.strip()}")
    return json.loads(result.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--lwload", required=True)
    ap.add_argument("--devices", default="host,opencl:0,vulkan:0,cuda:0")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--cuda-sim")
    args = ap.parse_args()
    print("| device | cache | default (as executed) | best forced | default / best |")
    print("|---|---|---|---|---|")
    worst = 0.0
    for device in args.devices.split(","):
        env = dict(os.environ)
        if device.startswith("cuda"):
            if not args.cuda_sim:
                continue
            env.update(LWLOAD_CUDA_LIBRARY=os.path.abspath(args.cuda_sim), LWLOAD_CUDA_SIM="dgpu")
        for cold in (False, True):
            report = bench(args.lwload, args.model, device, args.reps, cold, env)
            prefix = report["device"].split(":")[0] + " "
            lwload = {v["name"][len(prefix):]: v for v in report["variants"] if v["name"].startswith(prefix)}
            default = lwload.pop("default")
            name, best = min(lwload.items(), key=lambda item: item[1]["seconds_median"])
            ratio = default["seconds_median"] / best["seconds_median"]
            worst = max(worst, ratio)
            label = report["device"] + (" (simulated discrete)" if device.startswith("cuda") else "")
            cache = "cold" if cold else "warm"
            same = " (same choice)" if default["placement"] == best["placement"] else ""
            print(f"| {label} | {cache} | {default['seconds_median'] * 1000:.1f} ms ({default['placement']}) | "
                  f"{name}: {best['seconds_median'] * 1000:.1f} ms | {ratio:.2f}{same} |", flush=True)
    print(f"\nworst default / best: {worst:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
