#!/usr/bin/env python3
"""Draws apron's sample image (samples/sample.png): a synthetic scene made by this project, so the
repository carries no third-party picture. Gradients, discs, stripes at several frequencies, a star
chart and mild noise give every filter something to show. Needs only numpy."""
import struct
import sys
import zlib

import numpy as np


def write_png(path, rgb):
    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[y].tobytes() for y in range(h))
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(png)


def scene(w=640, h=480, seed=2026):
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    r = 0.25 + 0.5 * x / w
    g = 0.25 + 0.5 * y / h
    b = 0.5 + 0.25 * np.sin(x / 37.0) * np.cos(y / 23.0)
    img = np.stack([r, g, b], axis=-1)
    # Discs of several sizes and colours.
    for cx, cy, rad, col in [(160, 140, 90, (0.9, 0.2, 0.2)), (470, 120, 60, (0.1, 0.6, 0.9)),
                             (520, 360, 80, (0.95, 0.85, 0.2)), (120, 380, 45, (0.2, 0.8, 0.3))]:
        img[(x - cx) ** 2 + (y - cy) ** 2 < rad ** 2] = col
    # Stripes whose frequency rises to the right (aliasing and blur show here).
    band = (y > 230) & (y < 290)
    stripes = 0.5 + 0.5 * np.sign(np.sin(x * x / 900.0))
    img[band] = np.stack([stripes, stripes, stripes], axis=-1)[band]
    # A star chart: 36 wedges around (320, 380).
    ang = np.arctan2(y - 380, x - 320)
    disc = (x - 320) ** 2 + (y - 380) ** 2 < 70 ** 2
    wedge = (np.floor(ang / (np.pi / 18)) % 2).astype(np.float64)
    img[disc] = np.stack([wedge, wedge, wedge], axis=-1)[disc]
    rng = np.random.default_rng(seed)
    img += rng.normal(0, 0.02, img.shape)
    return np.clip(np.rint(img * 255), 0, 255).astype(np.uint8)


if __name__ == "__main__":
    write_png(sys.argv[1] if len(sys.argv) > 1 else "samples/sample.png", scene())
