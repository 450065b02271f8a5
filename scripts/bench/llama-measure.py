#!/usr/bin/python3
# benchmark helper: one command's peak and sampled memory, for llama-vulkan.sh and ggml.sh.
# Issue 9 helper: runs one command and measures its memory while it runs.
#
#   /usr/bin/python3 scripts/bench/llama-measure.py [--marker REGEX] [--interval 0.02] [--log FILE] -- CMD ARGS...
#
# Samples /proc/PID/status (VmRSS, VmHWM, RssAnon, RssFile, RssShmem) every --interval seconds and reports
#   peak_rss_kib      ru_maxrss of the child from wait4() (exact, kernel-tracked high-water mark)
#   vmhwm_kib         the last VmHWM sampled (should agree with peak_rss_kib)
#   peak_anon_kib     max sampled RssAnon  (sampled: can miss a spike shorter than the interval)
#   peak_file_kib     max sampled RssFile
#   peak_shmem_kib    max sampled RssShmem
#   marker_s          seconds from spawn until the first stdout line matching --marker (the "loaded" line)
#   marker_line       that line; capture_line: the first line matching --capture
#   anon_at_marker_kib / rss_at_marker_kib  the sample taken right after the marker was seen
#   exit_s, rc        seconds from spawn to exit, exit status
# The child's stdout and stderr (merged into one pipe) go to --log (default /dev/null) and are scanned for the marker
# (lwload load --hold writes 'holding the weights' to stderr as soon as the load is done; its stdout comes at exit).
# Prints one JSON line.
import argparse, json, os, re, subprocess, sys, threading, time


def read_status(pid):
    out = {}
    try:
        with open(f'/proc/{pid}/status') as f:
            for line in f:
                k, _, v = line.partition(':')
                if k in ('VmRSS', 'VmHWM', 'RssAnon', 'RssFile', 'RssShmem'):
                    out[k] = int(v.split()[0])
    except (FileNotFoundError, ProcessLookupError, ValueError):
        pass
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--marker')
    ap.add_argument('--capture', help='also keep the first output line matching this (e.g. the line with the load time)')
    ap.add_argument('--interval', type=float, default=0.02)
    ap.add_argument('--log', default='/dev/null')
    ap.add_argument('--label', default='')
    ap.add_argument('cmd', nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == '--' else a.cmd
    marker = re.compile(a.marker) if a.marker else None
    capture = re.compile(a.capture) if a.capture else None
    log = open(a.log, 'w')
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=1, text=True, errors='replace')
    hit = {}

    def pump():
        for line in p.stdout:
            if marker and 'marker_s' not in hit and marker.search(line):
                hit['marker_s'] = time.monotonic() - t0
                hit['line'] = line.strip()
            if capture and 'capture' not in hit and capture.search(line):
                hit['capture'] = line.strip()
            log.write(line)
            log.flush()

    th = threading.Thread(target=pump, daemon=True)
    th.start()
    peak = {'RssAnon': 0, 'RssFile': 0, 'RssShmem': 0, 'VmHWM': 0}
    at_marker = None
    samples = 0
    while True:
        st = read_status(p.pid)
        if not st or p.poll() is not None:
            break
        samples += 1
        for k in peak:
            peak[k] = max(peak[k], st.get(k, 0))
        if at_marker is None and 'marker_s' in hit:
            at_marker = st
        time.sleep(a.interval)
    _, status, ru = os.wait4(p.pid, 0)
    t_exit = time.monotonic() - t0
    th.join(timeout=5)
    rc = os.waitstatus_to_exitcode(status)
    res = {
        'label': a.label,
        'rc': rc,
        'marker_s': round(hit['marker_s'], 3) if 'marker_s' in hit else None,
        'exit_s': round(t_exit, 3),
        'peak_rss_kib': ru.ru_maxrss,
        'vmhwm_kib': peak['VmHWM'],
        'peak_anon_kib': peak['RssAnon'],
        'peak_file_kib': peak['RssFile'],
        'peak_shmem_kib': peak['RssShmem'],
        'rss_at_marker_kib': at_marker.get('VmRSS') if at_marker else None,
        'anon_at_marker_kib': at_marker.get('RssAnon') if at_marker else None,
        'file_at_marker_kib': at_marker.get('RssFile') if at_marker else None,
        'samples': samples,
        'user_s': round(ru.ru_utime, 2),
        'sys_s': round(ru.ru_stime, 2),
        'marker_line': hit.get('line'),
        'capture_line': hit.get('capture'),
        'cmd': ' '.join(cmd),
    }
    print(json.dumps(res), flush=True)
    return 0 if rc == 0 else 1


if __name__ == '__main__':
    sys.exit(main())
