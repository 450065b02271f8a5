#!/usr/bin/python3
# benchmark helper: medians of llama-measure.py's JSON lines, for llama-vulkan.sh.
# Issue 9 helper: medians per label of the JSON lines scripts/bench/llama-measure.py printed.
#   /usr/bin/python3 scripts/bench/llama-summary.py /tmp/llama/results/runs.jsonl
import json, re, statistics, sys
from collections import OrderedDict

runs = OrderedDict()
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith('{'):
        r = json.loads(line)
        runs.setdefault(r['label'], []).append(r)


def med(rs, k):
    v = [r[k] for r in rs if r.get(k) is not None]
    return statistics.median(v) if v else None


def inproc_ms(r):  # the loader's own load time from its loaded line
    m = re.search(r'load_ms=(\d+)|in ([\d.]+) ms', (r.get('capture_line') or '') + ' ' + (r.get('marker_line') or ''))
    return float(m.group(1) or m.group(2)) if m else None


def mib(kib):
    return '-' if kib is None else f'{kib / 1024:.0f} MiB'


print('| tool | placement | runs | time to loaded (spawn -> loaded line) | load call (in-process) | peak RSS (ru_maxrss) | peak anon RSS (sampled) | peak file RSS (sampled) | RSS / anon at loaded | exit rc |')
print('|---|---|---|---|---|---|---|---|---|---|')
for label, rs in runs.items():
    tool, _, placement = label.partition('-')
    print(f"| {tool} | {placement} | {len(rs)} | {med(rs, 'marker_s'):.2f} s "
          f"(min {min(r['marker_s'] for r in rs):.2f}, max {max(r['marker_s'] for r in rs):.2f}) "
          f"| {statistics.median([inproc_ms(r) for r in rs]) / 1000:.2f} s "
          f"| {mib(med(rs, 'peak_rss_kib'))} | {mib(med(rs, 'peak_anon_kib'))} | {mib(med(rs, 'peak_file_kib'))} "
          f"| {mib(med(rs, 'rss_at_marker_kib'))} / {mib(med(rs, 'anon_at_marker_kib'))} "
          f"| {','.join(str(r['rc']) for r in rs)} |")
