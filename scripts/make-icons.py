#!/usr/bin/env python3
"""Draws the app's home-screen icons (Sources/Web/Assets/icon-192.png and
icon-512.png) from the shapes of icon.svg, with nothing but the standard
library: a school gate on the accent blue. Run it after changing icon.svg."""
import os
import struct, zlib
def png(size, path):
    s = size / 64.0
    house = [(12,52),(12,24),(32,12),(52,24),(52,52),(43,52),(43,30),(21,30),(21,52)]
    def inside(poly, x, y):
        c = False
        n = len(poly)
        for i in range(n):
            x1,y1 = poly[i]; x2,y2 = poly[(i+1)%n]
            if (y1 > y) != (y2 > y) and x < (x2-x1)*(y-y1)/(y2-y1)+x1: c = not c
        return c
    def rounded(x, y, r=14):
        if x < 0 or y < 0 or x > 64 or y > 64: return False
        cx = min(max(x, r), 64-r); cy = min(max(y, r), 64-r)
        return (x-cx)**2 + (y-cy)**2 <= r*r
    rows = []
    for py in range(size):
        row = bytearray([0])
        for px in range(size):
            x, y = (px + .5)/s, (py + .5)/s
            if 25 <= x <= 39 and 34 <= y <= 52: c = (0xf2,0xb7,0x05,255)
            elif inside(house, x, y): c = (255,255,255,255)
            elif rounded(x, y): c = (0x1f,0x5f,0xbf,255)
            else: c = (0,0,0,0)
            row += bytes(c)
        rows.append(bytes(row))
    raw = b"".join(rows)
    def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t+d) & 0xffffffff)
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    open(path, "wb").write(data)
ASSETS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "Sources", "Web", "Assets")
for size in (192, 512):
    png(size, os.path.join(ASSETS, f"icon-{size}.png"))
