#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_row_source (fuzz/corpus/fuzz_row_source): small files of every format the
row sources read by rows (binary PGM/PPM, PAM, PFM, TIFF strips and tiles, compressed or not, BigTIFF), each
under 4 KiB. Standard library only; TIFFs are laid out by hand so that each seed holds what it is named for
(strips that do not divide the height, tiles overhanging the image, separate planes).

Run from anywhere: python3 fuzz/make_row_source_corpus.py
"""
import os
import random
import struct
import zlib

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "fuzz_row_source")
rng = random.Random(1)


def samples(n, bits):
    return [rng.randrange(1 << bits) for _ in range(n)]


def pack(values, bits, endian=">"):
    return struct.pack(endian + {8: "%dB", 16: "%dH"}[bits] % len(values), *values)


def pnm(kind, w, h, c, bits, pam=False):
    data = pack(samples(w * h * c, bits), bits)
    maxval = (1 << bits) - 1
    if pam:
        tuple_type = ["GRAYSCALE", "GRAYSCALE_ALPHA", "RGB", "RGB_ALPHA"][c - 1]
        head = f"P7\nWIDTH {w}\nHEIGHT {h}\nDEPTH {c}\nMAXVAL {maxval}\nTUPLTYPE {tuple_type}\nENDHDR\n"
    else:
        head = f"{kind}\n# seed\n{w} {h}\n{maxval}\n"
    return head.encode() + data


def pfm(w, h, c, little):
    values = [rng.uniform(-100, 100) for _ in range(w * h * c)]
    head = f"{'PF' if c == 3 else 'Pf'}\n{w} {h}\n{-1.0 if little else 1.0}\n".encode()
    return head + struct.pack(("<" if little else ">") + "%df" % len(values), *values)


def tiff(w, h, c, bits, chunks, *, tile=0, rows_per_strip=0, compression=1, predictor=1, separate=False,
         big=False, float_samples=False):
    """A little-endian TIFF (or BigTIFF) of `chunks` (strips or tiles, already encoded), one directory."""
    count_type, offset_type = (16, 16) if big else (4, 4)  # LONG8 in BigTIFF, LONG in classic TIFF
    entries = [(256, 4, [w]), (257, 4, [h]), (258, 3, [bits] * c), (259, 3, [compression]),
               (262, 3, [2 if c >= 3 else 1])]
    if not tile:
        entries.append((273, offset_type, None))  # strip offsets, filled in below
    entries.append((277, 3, [c]))
    if not tile:
        entries += [(278, 4, [rows_per_strip]), (279, count_type, [len(x) for x in chunks])]
    entries.append((284, 3, [2 if separate else 1]))
    if predictor != 1:
        entries.append((317, 3, [predictor]))
    if tile:
        entries += [(322, 4, [tile]), (323, 4, [tile]), (324, offset_type, None),
                    (325, count_type, [len(x) for x in chunks])]
    if c in (2, 4):
        entries.append((338, 3, [2]))
    entries.append((339, 3, [3 if float_samples else 1] * c))
    entries.sort()

    fmt = {3: "H", 4: "I", 16: "Q"}
    head_size, entry_size, count_fmt, inline = (16, 20, "<Q", 8) if big else (8, 12, "<H", 4)
    ifd_size = struct.calcsize(count_fmt) + entry_size * len(entries) + (8 if big else 4)
    data_at = head_size + ifd_size
    # Arrays too long for the entry go after the directory, then the chunks.
    offsets = []
    at = data_at + sum(len(x) for x in chunks)
    for x in chunks:
        offsets.append(data_at)
        data_at += len(x)
    out_arrays = b""
    body = b""
    for tag, typ, values in entries:
        if values is None:
            values = offsets
        raw = struct.pack("<%d%s" % (len(values), fmt[typ]), *values)
        if len(raw) <= inline:
            value = raw.ljust(inline, b"\0")
        else:
            value = struct.pack("<Q" if big else "<I", at + len(out_arrays))
            out_arrays += raw
        body += struct.pack("<HHQ" if big else "<HHI", tag, typ, len(values)) + value
    head = b"II+\0\x08\0\0\0" + struct.pack("<Q", 16) if big else b"II*\0" + struct.pack("<I", 8)
    ifd = struct.pack(count_fmt, len(entries)) + body + b"\0" * (8 if big else 4)
    return head + ifd + b"".join(chunks) + out_arrays


def strips(w, h, c, bits, rows_per_strip, compress=None):
    out = []
    for y in range(0, h, rows_per_strip):
        n = min(rows_per_strip, h - y)
        raw = pack(samples(w * n * c, bits), bits, "<")
        out.append(compress(raw) if compress else raw)
    return out


def tiles(w, h, c, bits, side, planes=1):
    count = ((w + side - 1) // side) * ((h + side - 1) // side) * planes
    return [pack(samples(side * side * (c // planes), bits), bits, "<") for _ in range(count)]


def main():
    os.makedirs(OUT, exist_ok=True)
    seeds = {
        "gray8.pgm": pnm("P5", 7, 5, 1, 8),
        "gray16.pgm": pnm("P5", 5, 3, 1, 16),
        "rgb8.ppm": pnm("P6", 6, 4, 3, 8),
        "gray-alpha16.pam": pnm(None, 3, 4, 2, 16, pam=True),
        "rgba8.pam": pnm(None, 4, 3, 4, 8, pam=True),
        "gray-le.pfm": pfm(4, 3, 1, True),
        "rgb-be.pfm": pfm(3, 2, 3, False),
        # 9 rows in strips of 4: the last strip is short.
        "strips.tif": tiff(7, 9, 1, 8, strips(7, 9, 1, 8, 4), rows_per_strip=4),
        "deflate-strips.tif": tiff(6, 11, 3, 8, strips(6, 11, 3, 8, 3, zlib.compress), rows_per_strip=3,
                                   compression=8),
        # Tiles of 16 over 20x18: the right and bottom tiles overhang the image.
        "tiles.tif": tiff(20, 18, 1, 8, tiles(20, 18, 1, 8, 16), tile=16),
        "big-planes.tif": tiff(5, 7, 2, 16, strips(5, 7, 1, 16, 2) + strips(5, 7, 1, 16, 2), rows_per_strip=2,
                               separate=True, big=True),
        "big-tiles.tif": tiff(17, 3, 2, 8, tiles(17, 3, 2, 8, 16), tile=16, big=True),
    }
    for name, data in seeds.items():
        assert len(data) < 4096, name
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print(f"{len(seeds)} seeds in {OUT}")


if __name__ == "__main__":
    main()
