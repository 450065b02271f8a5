#!/usr/bin/python3
# benchmark: torch.load's time and memory on a 1 GiB checkpoint (docs/BENCHMARKS.md).
# torch.load side of docs/BENCHMARKS.md "PyTorch checkpoints": `write PATH` saves a 1 GiB state dict with
# torch.save; `load PATH` times torch.load(map_location="cpu") and prints its peak and anonymous RSS growth.
import sys, time, resource, subprocess, json
if sys.argv[1] == 'write':
    import torch
    torch.manual_seed(0)
    sd = {f"layer{i}.weight": torch.randn(1024, 1024) for i in range(256)}  # 1 GiB F32
    torch.save(sd, sys.argv[2])
elif sys.argv[1] == 'load':
    import torch
    def anon():
        for l in open('/proc/self/status'):
            if l.startswith('RssAnon'): return int(l.split()[1])
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss; a0 = anon()
    t = time.time(); sd = torch.load(sys.argv[2], map_location='cpu'); s = sum(int(v.numel()) for v in sd.values()); dt = time.time() - t
    print(json.dumps({"seconds": dt, "peak_growth_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base, "anon_growth_kib": anon() - a0}))
