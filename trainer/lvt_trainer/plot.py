"""A dependency-free PNG line chart (stdlib ``zlib`` only) for the benchmark curves.

matplotlib is not a dependency of the project, so the learning benchmark draws its figure
with this small rasteriser: panels in a grid, each with a frame, min/max labels on both
axes, one polyline per series and a legend, text in a 5x7 bitmap font (upper case).
"""

from __future__ import annotations

import itertools
import math
import struct
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Canvas", "Panel", "line_chart", "write_png"]

_FONT_ROWS = {
    "A": "01110,10001,10001,11111,10001,10001,10001",
    "B": "11110,10001,10001,11110,10001,10001,11110",
    "C": "01110,10001,10000,10000,10000,10001,01110",
    "D": "11110,10001,10001,10001,10001,10001,11110",
    "E": "11111,10000,10000,11110,10000,10000,11111",
    "F": "11111,10000,10000,11110,10000,10000,10000",
    "G": "01110,10001,10000,10111,10001,10001,01111",
    "H": "10001,10001,10001,11111,10001,10001,10001",
    "I": "01110,00100,00100,00100,00100,00100,01110",
    "J": "00111,00010,00010,00010,00010,10010,01100",
    "K": "10001,10010,10100,11000,10100,10010,10001",
    "L": "10000,10000,10000,10000,10000,10000,11111",
    "M": "10001,11011,10101,10101,10001,10001,10001",
    "N": "10001,10001,11001,10101,10011,10001,10001",
    "O": "01110,10001,10001,10001,10001,10001,01110",
    "P": "11110,10001,10001,11110,10000,10000,10000",
    "Q": "01110,10001,10001,10001,10101,10010,01101",
    "R": "11110,10001,10001,11110,10100,10010,10001",
    "S": "01111,10000,10000,01110,00001,00001,11110",
    "T": "11111,00100,00100,00100,00100,00100,00100",
    "U": "10001,10001,10001,10001,10001,10001,01110",
    "V": "10001,10001,10001,10001,10001,01010,00100",
    "W": "10001,10001,10001,10101,10101,10101,01010",
    "X": "10001,10001,01010,00100,01010,10001,10001",
    "Y": "10001,10001,10001,01010,00100,00100,00100",
    "Z": "11111,00001,00010,00100,01000,10000,11111",
    "0": "01110,10001,10011,10101,11001,10001,01110",
    "1": "00100,01100,00100,00100,00100,00100,01110",
    "2": "01110,10001,00001,00010,00100,01000,11111",
    "3": "11111,00010,00100,00010,00001,10001,01110",
    "4": "00010,00110,01010,10010,11111,00010,00010",
    "5": "11111,10000,11110,00001,00001,10001,01110",
    "6": "00110,01000,10000,11110,10001,10001,01110",
    "7": "11111,00001,00010,00100,01000,01000,01000",
    "8": "01110,10001,10001,01110,10001,10001,01110",
    "9": "01110,10001,10001,01111,00001,00010,01100",
    ".": "00000,00000,00000,00000,00000,01100,01100",
    "-": "00000,00000,00000,11111,00000,00000,00000",
    ":": "00000,01100,01100,00000,01100,01100,00000",
    "/": "00000,00001,00010,00100,01000,10000,00000",
    "(": "00010,00100,01000,01000,01000,00100,00010",
    ")": "01000,00100,00010,00010,00010,00100,01000",
    "=": "00000,00000,11111,00000,11111,00000,00000",
    ",": "00000,00000,00000,00000,01100,00100,01000",
    "_": "00000,00000,00000,00000,00000,00000,11111",
    "+": "00000,00100,00100,11111,00100,00100,00000",
    "%": "11000,11001,00010,00100,01000,10011,00011",
    " ": "00000,00000,00000,00000,00000,00000,00000",
}
_FONT = {c: [int(r, 2) for r in rows.split(",")] for c, rows in _FONT_ROWS.items()}

Color = tuple[int, int, int]
PALETTE: tuple[Color, ...] = ((31, 119, 180), (214, 39, 40), (44, 160, 44), (148, 103, 189),
                              (255, 127, 14), (23, 190, 207))


def write_png(path: str | Path, width: int, height: int, rgb: bytes | bytearray) -> None:
    """Write an 8-bit RGB PNG (``rgb`` holds ``height`` rows of ``3 * width`` bytes)."""
    if len(rgb) != 3 * width * height:
        raise ValueError("rgb must hold exactly width * height pixels")

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    stride = 3 * width
    raw = b"".join(b"\x00" + bytes(rgb[y * stride : (y + 1) * stride]) for y in range(height))
    png = b"\x89PNG\r\n\x1a\n"
    png += chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(raw, 9))
    png += chunk(b"IEND", b"")
    Path(path).write_bytes(png)


class Canvas:
    """An RGB raster with lines, rectangles and bitmap text."""

    def __init__(self, width: int, height: int, bg: Color = (255, 255, 255)) -> None:
        self.width, self.height = width, height
        self.px = bytearray(bytes(bg) * (width * height))

    def set(self, x: int, y: int, c: Color) -> None:
        """Colour one pixel (ignored outside the canvas)."""
        if 0 <= x < self.width and 0 <= y < self.height:
            i = 3 * (y * self.width + x)
            self.px[i : i + 3] = bytes(c)

    def rect(self, x0: int, y0: int, x1: int, y1: int, c: Color, fill: bool = False) -> None:
        """An outlined (or filled) axis-aligned rectangle."""
        for x in range(x0, x1 + 1):
            for y in (range(y0, y1 + 1) if fill else (y0, y1)):
                self.set(x, y, c)
        if not fill:
            for y in range(y0, y1 + 1):
                self.set(x0, y, c)
                self.set(x1, y, c)

    def line(self, x0: float, y0: float, x1: float, y1: float, c: Color, width: int = 2) -> None:
        """A line of ``width`` pixels (sampled densely, then stamped)."""
        n = int(max(abs(x1 - x0), abs(y1 - y0))) + 1
        for k in range(n + 1):
            t = k / n
            x = round(x0 + (x1 - x0) * t)
            y = round(y0 + (y1 - y0) * t)
            for dx in range(width):
                for dy in range(width):
                    self.set(x + dx - width // 2, y + dy - width // 2, c)

    def text(self, x: int, y: int, s: str, c: Color = (0, 0, 0), scale: int = 1) -> int:
        """Draw ``s`` with its top-left corner at ``(x, y)``; returns the end x."""
        for ch in s.upper():
            rows = _FONT.get(ch, _FONT[" "])
            for r, bits in enumerate(rows):
                for col in range(5):
                    if bits >> (4 - col) & 1:
                        for sx in range(scale):
                            for sy in range(scale):
                                self.set(x + col * scale + sx, y + r * scale + sy, c)
            x += 6 * scale
        return x

    def png(self, path: str | Path) -> None:
        """Write the canvas as a PNG file."""
        write_png(path, self.width, self.height, self.px)


@dataclass(frozen=True)
class Panel:
    """One chart: a title and named series (``x`` defaults to 0, 1, 2, ...)."""

    title: str
    series: Mapping[str, Sequence[float]]
    x: Sequence[float] | None = None


def _fmt(v: float) -> str:
    if v == 0 or 1e-3 <= abs(v) < 1e4:
        return f"{v:.3g}"
    return f"{v:.1e}"


def line_chart(path: str | Path, panels: Sequence[Panel], *, cols: int = 2,
               panel_w: int = 420, panel_h: int = 260) -> None:
    """Draw ``panels`` in a grid of ``cols`` columns and write the PNG to ``path``."""
    rows = math.ceil(len(panels) / cols)
    cv = Canvas(cols * panel_w, rows * panel_h)
    for k, p in enumerate(panels):
        ox, oy = (k % cols) * panel_w, (k // cols) * panel_h
        left, top, right, bottom = ox + 56, oy + 24, ox + panel_w - 12, oy + panel_h - 58
        cv.text(ox + 56, oy + 6, p.title, scale=2 if len(p.title) <= 30 else 1)
        cv.rect(left, top, right, bottom, (0, 0, 0))
        vals = [v for s in p.series.values() for v in s if math.isfinite(v)]
        if not vals:
            continue
        lo, hi = min(vals), max(vals)
        if hi - lo < 1e-12:
            lo, hi = lo - 0.5, hi + 0.5
        n = max(len(s) for s in p.series.values())
        xs = list(p.x) if p.x is not None else list(range(n))
        x_lo, x_hi = (xs[0], xs[-1]) if len(xs) > 1 else (0.0, 1.0)
        cv.text(ox + 2, top, _fmt(hi))
        cv.text(ox + 2, bottom - 7, _fmt(lo))
        cv.text(left, bottom + 5, _fmt(x_lo))
        cv.text(right - 6 * len(_fmt(x_hi)), bottom + 5, _fmt(x_hi))

        def to_px(x: float, y: float, lo: float = lo, hi: float = hi, x_lo: float = x_lo,
                  x_hi: float = x_hi, left: int = left, right: int = right, top: int = top,
                  bottom: int = bottom) -> tuple[float, float]:
            fx = (x - x_lo) / (x_hi - x_lo) if x_hi != x_lo else 0.0
            fy = (y - lo) / (hi - lo)
            return left + 2 + fx * (right - left - 4), bottom - 2 - fy * (bottom - top - 4)

        lx = left
        for j, (name, s) in enumerate(p.series.items()):
            c = PALETTE[j % len(PALETTE)]
            pts = [to_px(xs[i], v) for i, v in enumerate(s) if i < len(xs) and math.isfinite(v)]
            for a, b in itertools.pairwise(pts):
                cv.line(a[0], a[1], b[0], b[1], c)
            if len(pts) == 1:
                cv.rect(int(pts[0][0]) - 1, int(pts[0][1]) - 1, int(pts[0][0]) + 1,
                        int(pts[0][1]) + 1, c, fill=True)
            cv.rect(lx, bottom + 20, lx + 10, bottom + 28, c, fill=True)
            lx = cv.text(lx + 14, bottom + 21, name) + 12
    cv.png(path)
