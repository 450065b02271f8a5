#!/usr/bin/python3
"""Prints a PNG's size and colours as JSON, for the tests' SVG render checks.

usage: png_summary.py FILE [RRGGBB ...]
-> {"width": W, "height": H, "colours": distinct colours, "present": [the RRGGBB given that occur]}

Decodes 8-bit RGB / RGBA PNGs (what rsvg-convert writes) with the standard library only (zlib),
so the test needs no image library.
"""
import json
import struct
import sys
import zlib


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def decode(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit(f"{path}: not a PNG")
    at, idat, header = 8, b"", None
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    width, height, depth, colour_type, _, _, interlace = header
    if depth != 8 or colour_type not in (2, 6) or interlace:
        sys.exit(f"{path}: only 8-bit RGB/RGBA, non-interlaced (got depth {depth}, type {colour_type})")
    bpp = 3 if colour_type == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    previous = bytearray(stride)
    rows = []
    for y in range(height):
        kind = raw[y * (stride + 1)]
        row = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            left = row[x - bpp] if x >= bpp else 0
            up = previous[x]
            if kind == 1:
                row[x] = (row[x] + left) & 0xFF
            elif kind == 2:
                row[x] = (row[x] + up) & 0xFF
            elif kind == 3:
                row[x] = (row[x] + ((left + up) >> 1)) & 0xFF
            elif kind == 4:
                row[x] = (row[x] + paeth(left, up, previous[x - bpp] if x >= bpp else 0)) & 0xFF
        rows.append(bytes(row))
        previous = row
    return width, height, bpp, rows


def main():
    width, height, bpp, rows = decode(sys.argv[1])
    colours = set()
    for row in rows:
        for x in range(0, len(row), bpp):
            colours.add(row[x:x + 3])
    wanted = [w.lstrip("#").lower() for w in sys.argv[2:]]
    present = [w for w in wanted if bytes.fromhex(w) in colours]
    print(json.dumps({"width": width, "height": height, "colours": len(colours), "present": present}))


main()
