#!/usr/bin/env python3
"""The layer table in meson.build holds: an #include that crosses layers the wrong way does not compile.

Called by the `layers` test (tests/meson.build) with the build's compiler and arguments:
  check_layers.py --source-root DIR --compiler CMD... --args ARGS... --layer NAME=BELOW=MACROS ...
                  [--absent NAME...]
where --absent names the layers this configuration does not build (a backend turned off), BELOW is the comma-separated layers NAME declares it may include and MACROS the comma-separated
-DLWLOAD_LAYER_* its library is compiled with. It checks that
  1. every header under lib/, backends/ and tools/lib/ lies in a folder with a layer guard (layer.hpp)
     and includes that guard;
  2. each layer's macros are itself and exactly the layers it reaches through the table;
  3. for every layer and every guarded folder, a header of that folder preprocesses with the layer's
     arguments if the folder's layer is the layer itself or below it, and otherwise fails with the
     guard's #error;
  4. every public header (include/lwload) has one owner: the layer X its "Layer X's public header"
     line names, whose guard it then carries (active only inside lwload's build: LWLOAD_LAYER_CORE,
     which every layer of liblwload reaches and an application, an adapter or profile never
     defines), an adapter outside the table ("Adapter A's public header"), or else core; and every
     layer x every public header of a present layer preprocesses or is refused as the table says
     (so a core header including a higher one fails core's row);
  5. full compiles: formats including a load/ header fails with the guard's message; the formats
     registry including an io/ header compiles; a format wing (gguf) including the formats base
     compiles and another wing's header (pytorch/) fails; load including the tools library's
     synth.hpp fails.
"""
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

KEYS = ('--source-root', '--compiler', '--args', '--layer', '--absent')


def parse(argv):
    opts = {k: [] for k in KEYS}
    key = None
    for a in argv:
        if a in KEYS:
            key = a
        elif key is None:
            sys.exit(f'unexpected argument {a!r}')
        else:
            opts[key].append(a)
    return opts


def source_text(path):
    """A source's text with its continued lines joined, as the preprocessor reads it (the formatter
    may wrap a long #error onto a second line)."""
    return re.sub(r'\\\n[ \t]*', '', open(path).read())


def guards(root):
    """folder (relative to root) -> (macro, include spelling of its guard)."""
    found = {}
    for top in ('lib', 'backends', 'tools/lib'):
        for dp, _, fn in os.walk(os.path.join(root, top)):
            if 'layer.hpp' in fn:
                folder = os.path.relpath(dp, root)
                text = source_text(os.path.join(dp, 'layer.hpp'))
                m = re.search(r'#if !defined\((LWLOAD_LAYER_\w+)\)', text)
                if not m or '#error "lwload layering: ' + folder + '/' not in text:
                    sys.exit(f'{folder}/layer.hpp: not a layer guard')
                spelling = folder[len('lib/'):] if folder.startswith('lib/') else folder
                found[folder] = (m.group(1), spelling + '/layer.hpp')
    return found


def headers_of(root, folder, all_guards):
    out = []
    for dp, dn, fn in os.walk(os.path.join(root, folder)):
        rel = os.path.relpath(dp, root)
        if rel != folder and rel in all_guards:
            dn[:] = []
            continue
        out += [os.path.join(rel, n) for n in sorted(fn) if n.endswith(('.hpp', '.h')) and n != 'layer.hpp']
    return sorted(out)


def run(cmd, source):
    with tempfile.NamedTemporaryFile('w', suffix='.cpp', delete=False) as f:
        f.write(source)
        path = f.name
    try:
        p = subprocess.run(cmd + [path], capture_output=True, text=True)
        return p.returncode, p.stderr
    finally:
        os.unlink(path)


def main():
    opts = parse(sys.argv[1:])
    root = opts['--source-root'][0]
    compiler, args = opts['--compiler'], opts['--args']
    failures = []

    table = {}
    for spec in opts['--layer']:
        name, below, macros = spec.split('=')
        table[name] = ([b for b in below.split(',') if b], set(m for m in macros.split(',') if m))

    # 1. Every header is guarded, and includes its guard.
    all_guards = guards(root)
    for top in ('lib', 'backends', 'tools/lib'):
        for dp, _, fn in os.walk(os.path.join(root, top)):
            for n in fn:
                if not n.endswith(('.hpp', '.h')) or n == 'layer.hpp':
                    continue
                rel = os.path.relpath(os.path.join(dp, n), root)
                folder = os.path.dirname(rel)
                while folder and folder not in all_guards:
                    folder = os.path.dirname(folder)
                if not folder:
                    failures.append(f'{rel}: in no folder with a layer guard (layer.hpp)')
                    continue
                spelling = all_guards[folder][1]
                if f'#include "{spelling}"' not in source_text(os.path.join(root, rel)):
                    failures.append(f'{rel}: does not include its layer guard "{spelling}"')

    # 2. Each layer's macros: itself and the layers it reaches.
    def reach(name, seen):
        for b in table[name][0]:
            if b not in table:
                failures.append(f'layer {name}: declares unknown layer {b}')
            elif b not in seen:
                seen.add(b)
                reach(b, seen)
        return seen
    for name, (below, macros) in table.items():
        want = {'-DLWLOAD_LAYER_' + n.upper() for n in reach(name, {name})}
        if macros != want:
            failures.append(f'layer {name}: compiled with {sorted(macros)}, the table says {sorted(want)}')

    macro_to_layer = {'-DLWLOAD_LAYER_' + n.upper(): n for n in table}
    absent = {'LWLOAD_LAYER_' + n.upper() for n in opts['--absent']}
    for folder, (macro, _) in list(all_guards.items()):
        if macro in absent:
            del all_guards[folder]  # not built here: its headers may need an SDK this machine lacks
        elif '-D' + macro not in macro_to_layer:
            failures.append(f'{folder}/layer.hpp: {macro} names no layer of the table')

    # 3. The matrix: every layer × every guarded folder, preprocessed.
    jobs = []
    for name, (_, macros) in sorted(table.items()):
        for folder, (macro, _) in sorted(all_guards.items()):
            hs = headers_of(root, folder, all_guards)
            if not hs:
                continue
            header = hs[0]
            spelling = header[len('lib/'):] if header.startswith('lib/') else header
            allowed = '-D' + macro in macros
            jobs.append((name, folder, spelling, allowed, sorted(macros)))

    def preprocess(job):
        name, folder, spelling, allowed, macros = job
        rc, err = run(compiler + args + macros + ['-Wfatal-errors', '-E', '-o', os.devnull],
                      f'#include "{spelling}"\n')
        message = f'lwload layering: {folder}/ is not below this layer'
        if allowed and rc != 0:
            return f'{name} may include {spelling}, but it does not preprocess:\n{err[-2000:]}'
        if not allowed and (rc == 0 or message not in err):
            return f'{name} may not include {spelling}, but it was not refused with "{message}" (rc {rc}):\n{err[-2000:]}'
        return None

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(preprocess, jobs))
    failures += [r for r in results if r]
    refused = sum(1 for j in jobs if not j[3])
    print(f'matrix: {len(jobs)} layer x folder pairs preprocessed, {refused} refused as the table says, '
          f'{len(jobs) - refused} allowed')

    # 4. Public headers: each names its owner layer and carries its guard; the matrix again.
    public = {}  # name -> owner layer (None: an adapter's, outside the table)
    include_dir = os.path.join(root, 'include', 'lwload')
    for n in sorted(os.listdir(include_dir)):
        if not n.endswith(('.hpp', '.h', '.hpp.in')):
            continue
        name = n[:-len('.in')] if n.endswith('.in') else n
        text = source_text(os.path.join(include_dir, n))
        m = re.search(r"^// (Layer|Adapter) (\w+)'s public header", text, re.M)
        if m and m.group(1) == 'Adapter':
            public[name] = None
            continue
        # A header without a guard is core's: the matrix below proves it includes only core's.
        owner = m.group(2) if m else 'core'
        if not m and 'lwload layering:' in text:
            failures.append(f'include/lwload/{n}: has a guard but no "// Layer X\'s public header" line')
            continue
        if owner not in table:
            failures.append(f'include/lwload/{n}: owner {owner} names no layer of the table')
            continue
        public[name] = owner
        if owner == 'core':
            continue
        macro = 'LWLOAD_LAYER_' + owner.upper()
        guard = (f'#if defined(LWLOAD_LAYER_CORE) && !defined({macro})\n'
                 f'#error "lwload layering: include/lwload/{name} (layer {owner}) is not below this layer')
        if guard not in text:
            failures.append(f'include/lwload/{n}: lacks the guard of layer {owner}:\n{guard}')
        elif '\n#include' in text and text.index(guard) > text.index('\n#include'):
            failures.append(f'include/lwload/{n}: its guard must come before its first #include')
    # Refused pairs one by one (each stops at its guard); a layer's allowed headers together, one
    # preprocess per layer, and one by one only when that fails (to name the header).
    refused_jobs, allowed_jobs = [], []
    for name, (_, macros) in sorted(table.items()):
        allowed_headers = []
        for header, owner in sorted(public.items()):
            if owner is None or 'LWLOAD_LAYER_' + owner.upper() in absent:
                continue
            if '-DLWLOAD_LAYER_CORE' not in macros or '-DLWLOAD_LAYER_' + owner.upper() in macros:
                allowed_headers.append(header)
            else:
                refused_jobs.append((name, header, owner, sorted(macros)))
        allowed_jobs.append((name, allowed_headers, sorted(macros)))

    def preprocess_public(source, macros):
        return run(compiler + args + macros + ['-Wfatal-errors', '-E', '-o', os.devnull], source)

    def refused_public(job):
        name, header, owner, macros = job
        rc, err = preprocess_public(f'#include "lwload/{header}"\n', macros)
        message = f'lwload layering: include/lwload/{header} (layer {owner}) is not below this layer'
        if rc == 0 or message not in err:
            return [f'{name} may not include lwload/{header}, but it was not refused with "{message}" (rc {rc}):\n{err[-2000:]}']
        return []

    def allowed_public(job):
        name, headers, macros = job
        rc, _ = preprocess_public(''.join(f'#include "lwload/{h}"\n' for h in headers), macros)
        if rc == 0:
            return []
        out = []
        for h in headers:
            rc, err = preprocess_public(f'#include "lwload/{h}"\n', macros)
            if rc != 0:
                out.append(f'{name} may include lwload/{h}, but it does not preprocess:\n{err[-2000:]}')
        return out or [f'{name}: its public headers preprocess one by one but not together']

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for r in list(pool.map(refused_public, refused_jobs)) + list(pool.map(allowed_public, allowed_jobs)):
            failures += r
    allowed = sum(len(j[1]) for j in allowed_jobs)
    print(f'public headers: {len(public)} with an owner; {len(refused_jobs) + allowed} layer x header pairs, '
          f'{len(refused_jobs)} refused as the table says, {allowed} allowed (preprocessed together per layer)')

    # 5. Full compiles with the build's arguments.
    probes = [
        ('formats', '#include "loading/load_run.hpp"\n', 'lwload layering: lib/loading/ is not below this layer'),
        ('formats_registry', '#include "io/sources.hpp"\nint probe() { return 0; }\n', None),
        # A wing stands alone: it includes the formats base, never another wing.
        ('formats_gguf', '#include "formats/format.hpp"\nint probe() { return 0; }\n', None),
        ('formats_gguf', '#include "formats/pytorch/zip_archive.hpp"\n',
         'lwload layering: lib/formats/pytorch/ is not below this layer'),
        ('loading', '#include "tools/lib/synth/synth.hpp"\n', 'lwload layering: tools/lib/ is not below this layer'),
        ('core', '#include "backends/layer.hpp"\n', 'lwload layering: backends/ is not below this layer'),
        # A public header of a lower layer that includes a higher one's does not build: what core's
        # manifest.hpp would be, including loader.hpp.
        ('core', '#include "lwload/manifest.hpp"\n#include "lwload/loader.hpp"\n',
         'lwload layering: include/lwload/loader.hpp (layer loading) is not below this layer'),
        # The io-engine names are io's own; a backend's typed header takes a TensorHandle from core.
        ('io', '#include "lwload/io_engine.hpp"\nint probe() { return 0; }\n', None),
        ('backend_opencl', '#include "lwload/opencl.hpp"\nint probe() { return 0; }\n', None),
        ('backend_opencl', '#include "lwload/loader.hpp"\n',
         'lwload layering: include/lwload/loader.hpp (layer loading) is not below this layer'),
    ]
    for name, source, refusal in probes:
        if name not in table:
            continue
        rc, err = run(compiler + args + sorted(table[name][1]) + ['-fsyntax-only'], source)
        first = source.splitlines()[0]
        if refusal is None and rc != 0:
            failures.append(f'{name}: {first} should compile, but:\n{err[-2000:]}')
        elif refusal is not None and (rc == 0 or refusal not in err):
            failures.append(f'{name}: {first} should fail with "{refusal}" (rc {rc}):\n{err[-2000:]}')
        else:
            print(f'{name}: {first} ' + ('compiles' if refusal is None else f'is refused: {refusal}'))

    for f in failures:
        print('FAIL:', f)
    if failures:
        return 1
    print(f'layers: {len(table)} layers, {len(all_guards)} guarded folders, {len(public)} public headers, '
          'all as the table says')
    return 0


if __name__ == '__main__':
    sys.exit(main())
