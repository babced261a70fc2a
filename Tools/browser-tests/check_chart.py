#!/usr/bin/env python3
"""The price chart (`catledger prices --svg`, the one renderer of the CLI and the pages) checked as a
person sees it: rendered to PNG by headless Chromium and read back pixel by pixel.

On the bundled cafe sample it draws the item with the most price series (Danish (House): three
variations, each with its base price and a location's price, so six lines) and checks:
- dimensions: the PNG is the SVG's size (plus the margin it is drawn in), and nothing is drawn outside
  the SVG's box (a label cut off at an edge shows there, as the SVG's root is drawn overflow: visible);
- the legend: drawn (one row per series), entirely below the plot area, never over it;
- the text: the title, the y axis's money, the x axis's dates and the legend's names are drawn;
- the lines: each series' colour is drawn inside the plot area.
The legend's and the text's pixels are found by rendering the chart again without them and comparing.
The PNG is kept in $SCREENSHOTS/price-chart.png to be looked at.

    Tools/browser-tests/check_chart.py [--svg FILE]   (FILE: check that chart instead of the sample's)

Environment: CATLEDGER (default .build/debug/catledger), CHROMIUM (default: found on PATH),
SCREENSHOTS (default .build/screenshots). Exit status 0 when every check passed, 1 when one failed,
2 when something it needs is missing. Part of `make test`.
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zlib

SVG_NS = "http://www.w3.org/2000/svg"
ET.register_namespace("", SVG_NS)
ITEM = "42YU3B4CSW3B45OQYIYGAVG5"  # Danish (House) in data-samples/cafe (deterministic ids)
PAD = 40  # the margin around the chart in the page it is rendered in
failures = []


def check(condition, message):
    print(("ok    " if condition else "FAIL  ") + message)
    if not condition:
        failures.append(message)


# --- PNG, read without libraries (8-bit RGB or RGBA, as Chromium writes it) ---
def read_png(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path} is not a PNG")
    position, idat, width = 8, b"", 0
    while position < len(data):
        length, kind = struct.unpack(">I4s", data[position:position + 8])
        body = data[position + 8:position + 8 + length]
        position += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour not in (2, 6) or interlace:
                raise ValueError(f"{path}: PNG depth {depth} colour type {colour} interlace {interlace} not read here")
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        rows.append([tuple(line[x * channels:x * channels + 3]) for x in range(width)])
        previous = line
    return width, height, rows


def render(svg_text, width, height, chromium, work, name):
    """The SVG inline in a white page, PAD px from each edge, drawn overflow: visible; its PNG's pixels."""
    svg_text = svg_text.replace("<svg ", '<svg style="overflow:visible;display:block" ', 1)
    page = os.path.join(work, name + ".html")
    with open(page, "w", encoding="utf-8") as f:
        f.write(f'<!doctype html><html><body style="margin:0;background:#fff">'
                f'<div style="padding:{PAD}px">{svg_text}</div></body></html>')
    png = os.path.join(work, name + ".png")
    subprocess.run([chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--force-device-scale-factor=1", f"--window-size={width + 2 * PAD},{height + 2 * PAD}",
                    f"--screenshot={png}", "file://" + page],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    return png, read_png(png)


def ink(pixel):
    return min(pixel) < 235


def changed(a, b):
    """The pixels that differ between two renders, as (x, y) in the chart's own coordinates."""
    return [(x - PAD, y - PAD) for y, (row_a, row_b) in enumerate(zip(a, b))
            for x, (p, q) in enumerate(zip(row_a, row_b)) if max(abs(p[i] - q[i]) for i in range(3)) > 40]


def without(root, predicate):
    """The SVG's text with every element `predicate` picks removed."""
    copy = ET.fromstring(ET.tostring(root))
    for parent in copy.iter():
        for child in list(parent):
            if predicate(child):
                parent.remove(child)
    return ET.tostring(copy, encoding="unicode")


def tag(element):
    return element.tag.split("}")[-1]


def main():
    catledger = os.environ.get("CATLEDGER", ".build/debug/catledger")
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    screenshots = os.environ.get("SCREENSHOTS", ".build/screenshots")
    if not chromium:
        print("check_chart: chromium is missing (make deps-test)", file=sys.stderr)
        return 2
    work = tempfile.mkdtemp(prefix="catledger-chart.")
    try:
        if len(sys.argv) == 3 and sys.argv[1] == "--svg":
            svg_path = sys.argv[2]
        else:
            if not os.access(catledger, os.X_OK):
                print(f"check_chart: {catledger} is missing (swift build first)", file=sys.stderr)
                return 2
            ledger, svg_path = os.path.join(work, "ledger"), os.path.join(work, "chart.svg")
            subprocess.run([catledger, "import", "data-samples/cafe/cafe-history.jsonl", "--data-dir", ledger],
                           check=True, stdout=subprocess.DEVNULL)
            subprocess.run([catledger, "prices", "--item", ITEM, "--svg", svg_path, "--data-dir", ledger],
                           check=True, stdout=subprocess.DEVNULL)
        with open(svg_path, encoding="utf-8") as f:
            text = f.read()
        root = ET.fromstring(text)
        width, height = int(root.get("width")), int(root.get("height"))
        plot = next(e for e in root.iter() if tag(e) == "rect" and e.get("class") == "plot")
        left, top = float(plot.get("x")), float(plot.get("y"))
        right, bottom = left + float(plot.get("width")), top + float(plot.get("height"))
        series = [e for e in root.iter() if tag(e) == "path"]
        colours = [e.get("stroke") for e in series]
        print(f"chart {svg_path}: {width}x{height}, plot ({left:g},{top:g})-({right:g},{bottom:g}), {len(series)} series")

        full_png, (png_width, png_height, full) = render(text, width, height, chromium, work, "full")
        _, (_, _, no_legend) = render(without(root, lambda e: e.get("class") == "legend"), width, height, chromium, work, "no-legend")
        _, (_, _, no_text) = render(without(root, lambda e: tag(e) == "text"), width, height, chromium, work, "no-text")
        os.makedirs(screenshots, exist_ok=True)
        shutil.copy(full_png, os.path.join(screenshots, "price-chart.png"))

        # Dimensions, and nothing drawn outside the chart's box (cut off when the SVG stands alone).
        check((png_width, png_height) == (width + 2 * PAD, height + 2 * PAD),
              f"the PNG is {png_width}x{png_height}: the chart's {width}x{height} and its margin")
        outside = [(x - PAD, y - PAD) for y, row in enumerate(full) for x, p in enumerate(row)
                   if ink(p) and not (PAD <= x < PAD + width and PAD <= y < PAD + height)]
        check(not outside, f"nothing is drawn outside the chart's {width}x{height} box"
              + (f" ({len(outside)} pixels, e.g. at {outside[:3]}: a label cut off at the edge)" if outside else ""))

        # The legend: below the plot, one row per series.
        legend = changed(full, no_legend)
        check(bool(legend), "the legend is drawn")
        if legend:
            xs, ys = [p[0] for p in legend], [p[1] for p in legend]
            box = (min(xs), min(ys), max(xs), max(ys))
            overlap = [p for p in legend if left <= p[0] <= right and top <= p[1] <= bottom]
            check(not overlap, f"the legend (pixels {box}) does not overlap the plot area"
                  + (f" ({len(overlap)} pixels inside it)" if overlap else ""))
            check(box[1] > bottom, f"the legend starts below the plot area (y {box[1]} > {bottom:g})")
            rows = sorted(set(ys))
            bands = 1 + sum(1 for a, b in zip(rows, rows[1:]) if b - a > 2)
            check(bands == len(series), f"the legend has one row per series ({bands} rows, {len(series)} series)")

        # The text: title, y axis money, x axis dates, legend names.
        drawn = changed(full, no_text)
        regions = {
            "the title (above the plot)": lambda x, y: y < top - 16,
            "the y axis's money (left of the plot)": lambda x, y: x < left - 2 and top - 8 <= y <= bottom + 8,
            "the x axis's dates (under the plot)": lambda x, y: left - 40 <= x <= width and bottom + 6 <= y <= bottom + 24,
            "the legend's names (below the axis)": lambda x, y: x > left + 30 and y > bottom + 40,
        }
        for name, inside in regions.items():
            count = sum(1 for x, y in drawn if inside(x, y))
            check(count > 50, f"{name} is drawn ({count} pixels of text)")

        # Each series is drawn inside the plot area, in its own colour.
        def rgb(hex_colour):
            return tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
        for colour in colours:
            target = rgb(colour)
            count = sum(1 for y in range(int(top) + PAD, int(bottom) + PAD + 1)
                        for p in full[y][int(left) + PAD:int(right) + PAD + 1]
                        if max(abs(p[i] - target[i]) for i in range(3)) < 30)
            check(count > 20, f"the series in {colour} is drawn in the plot area ({count} pixels)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print(f"check_chart: {len(failures)} check(s) failed", file=sys.stderr)
        return 1
    print("check_chart: every check passed; the chart is in", os.path.join(screenshots, "price-chart.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
