#!/usr/bin/python3
"""lwload from Python through its C API (ctypes + numpy, nothing else): open a manifest, load it on
the host, and wrap each zero-copy tensor as a numpy array without copying a byte — the array's
memory is the file's own mapping, which the script proves from /proc/self/maps.

  /usr/bin/python3 examples/python_ctypes.py [MODEL] [--library PATH/liblwload.so]

Without MODEL it writes a small packed safetensors file (the reference writer's layout) and uses
it. Exit status 0 when every tensor matches the file, 1 otherwise.
"""
import argparse
import ctypes
import json
import os
import sys
import tempfile

import numpy as np


class SizedStruct(ctypes.Structure):
    """A struct the library fills: its struct_size says how much of it this script knows (lwload.h)."""

    def __init__(self):
        super().__init__()
        self.struct_size = ctypes.sizeof(self)


class TensorInfo(SizedStruct):
    _fields_ = [("struct_size", ctypes.c_size_t), ("name", ctypes.c_char_p), ("dtype", ctypes.c_char_p),
                ("rank", ctypes.c_size_t), ("shape", ctypes.POINTER(ctypes.c_int64)), ("bytes", ctypes.c_uint64),
                ("file", ctypes.c_char_p)]


class TensorHandle(SizedStruct):
    _fields_ = [("struct_size", ctypes.c_size_t), ("name", ctypes.c_char_p), ("placement", ctypes.c_char_p),
                ("native_type", ctypes.c_char_p), ("native", ctypes.c_void_p), ("offset", ctypes.c_uint64),
                ("bytes", ctypes.c_uint64), ("file_offset", ctypes.c_uint64)]


NUMPY_DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32,
                "I16": np.int16, "I8": np.int8, "U64": np.uint64, "U32": np.uint32, "U16": np.uint16,
                "U8": np.uint8, "BOOL": np.bool_, "BF16": np.uint16}  # numpy has no bfloat16: its bits


class Lwload:
    """The C API's functions with their C signatures; errors become Python exceptions."""

    def __init__(self, path):
        lib = ctypes.CDLL(path)
        p, c = ctypes.c_void_p, ctypes.c_char_p
        err = ctypes.POINTER(p)
        sigs = {
            "lwload_version": (c, []),
            "lwload_error_status": (ctypes.c_int, [p]),
            "lwload_error_message": (c, [p]),
            "lwload_error_free": (None, [p]),
            "lwload_manifest_open": (p, [c, err]),
            "lwload_manifest_free": (None, [p]),
            "lwload_manifest_tensor_count": (ctypes.c_size_t, [p]),
            "lwload_version_number": (ctypes.c_uint32, []),
            "lwload_manifest_tensor": (ctypes.c_int, [p, ctypes.c_size_t, ctypes.POINTER(TensorInfo), err]),
            "lwload_device_open": (p, [c, err]),
            "lwload_device_free": (None, [p]),
            "lwload_device_id": (c, [p]),
            "lwload_load": (p, [p, p, p, err]),
            "lwload_weights_find": (ctypes.c_int, [p, c, ctypes.POINTER(TensorHandle), err]),
            "lwload_weights_free": (None, [p]),
        }
        for name, (restype, argtypes) in sigs.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = restype, argtypes
        self.lib = lib

    def call(self, fn, *args):
        """Calls a function taking a trailing lwload_error**; raises with lwload's message on failure."""
        error = ctypes.c_void_p()
        result = getattr(self.lib, fn)(*args, ctypes.byref(error))
        if not result:
            message = self.lib.lwload_error_message(error).decode()
            status = self.lib.lwload_error_status(error)
            self.lib.lwload_error_free(error)
            raise RuntimeError(f"{fn}: {message} (status {status})")
        return result

    def status(self, fn, *args):
        """Calls a function returning lwload_status; raises with lwload's message unless LWLOAD_OK (0)."""
        error = ctypes.c_void_p()
        status = getattr(self.lib, fn)(*args, ctypes.byref(error))
        if status != 0:
            message = self.lib.lwload_error_message(error).decode()
            self.lib.lwload_error_free(error)
            raise RuntimeError(f"{fn}: {message} (status {status})")


def write_packed_safetensors(path):
    """Tensors packed right after an 8-byte-padded header, as safetensors' own writer does."""
    rng = np.random.default_rng(7)
    tensors = {"embed": rng.standard_normal((5, 3)).astype(np.float32),
               "norm": rng.standard_normal(7).astype(np.float16),
               "ids": np.arange(-3, 6, dtype=np.int32),
               "proj": rng.standard_normal((4, 9)).astype(np.float64)}
    names = {np.float32: "F32", np.float16: "F16", np.int32: "I32", np.float64: "F64"}
    header, offset = {}, 0
    for name, array in tensors.items():
        header[name] = {"dtype": names[array.dtype.type], "shape": list(array.shape),
                        "data_offsets": [offset, offset + array.nbytes]}
        offset += array.nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as out:
        out.write(len(text).to_bytes(8, "little"))
        out.write(text)
        for array in tensors.values():
            out.write(array.tobytes())


def mapped_ranges(path):
    """The address ranges /proc/self/maps shows mapped from `path`."""
    real = os.path.realpath(path)
    ranges = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            if len(fields) == 6 and fields[5].strip() == real:
                low, high = (int(x, 16) for x in fields[0].split("-"))
                ranges.append((low, high))
    return ranges


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", nargs="?")
    parser.add_argument("--library", default=os.environ.get("LWLOAD_LIBRARY", "liblwload.so"))
    args = parser.parse_args()

    lw = Lwload(args.library)
    scratch = None
    model = args.model
    if model is None:
        scratch = tempfile.TemporaryDirectory(prefix="lwload-ctypes-")
        model = os.path.join(scratch.name, "sample.safetensors")
        write_packed_safetensors(model)

    manifest = lw.call("lwload_manifest_open", model.encode())
    device = lw.call("lwload_device_open", b"host")
    weights = lw.call("lwload_load", manifest, device, None)
    print(f"liblwload {lw.lib.lwload_version().decode()}: {model} on {lw.lib.lwload_device_id(device).decode()}")

    ranges = {}  # file → the address ranges mapped from it
    failures = wrapped = 0
    for i in range(lw.lib.lwload_manifest_tensor_count(manifest)):
        info = TensorInfo()
        lw.status("lwload_manifest_tensor", manifest, i, ctypes.byref(info))
        handle = TensorHandle()
        if lw.lib.lwload_weights_find(weights, info.name, ctypes.byref(handle), None) != 0:
            print(f"{info.name.decode()}: not loaded")
            failures += 1
            continue
        name, dtype = info.name.decode(), info.dtype.decode()
        if handle.placement != b"zero_copy" or handle.native_type != b"host_ptr" or dtype not in NUMPY_DTYPES:
            print(f"{name}: {handle.placement.decode()} {dtype}, not wrapped")
            continue
        address = handle.native + handle.offset
        # The file holding the tensor: the model itself, a shard or an external data file.
        data_file = info.file.decode()
        if data_file not in ranges:
            ranges[data_file] = mapped_ranges(data_file)
        shape = tuple(info.shape[d] for d in range(info.rank))
        raw = (ctypes.c_ubyte * handle.bytes).from_address(address)
        array = np.ctypeslib.as_array(raw).view(NUMPY_DTYPES[dtype]).reshape(shape)

        no_copy = array.__array_interface__["data"][0] == address
        in_mapping = any(low <= address and address + handle.bytes <= high for low, high in ranges[data_file])
        # The reference is read from the file, one tensor at a time (never the whole model).
        expected = np.fromfile(data_file, dtype=np.uint8, count=handle.bytes, offset=handle.file_offset)
        same = np.array_equal(array.reshape(-1).view(np.uint8), expected)
        ok = no_copy and in_mapping and same
        failures += not ok
        wrapped += ok
        print(f"{name}: {dtype}{list(shape)} at {address:#x} (+{handle.offset} in its region): "
              f"{'no copy' if no_copy else 'COPIED'}, {'inside' if in_mapping else 'OUTSIDE'} the file mapping, "
              f"{'equal to' if same else 'DIFFERENT from'} the file")
        del array, raw  # the memory belongs to the weights: drop the views before freeing them

    lw.lib.lwload_weights_free(weights)
    lw.lib.lwload_device_free(device)
    lw.lib.lwload_manifest_free(manifest)
    if scratch:
        scratch.cleanup()
    if wrapped == 0:
        print("no zero-copy tensor was wrapped")
        return 1
    print(f"{wrapped} tensor(s) wrapped without a copy, {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
