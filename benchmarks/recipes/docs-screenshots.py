"""Screenshot the documentation's index, matmul guide and benchmark page with headless Chromium, and
fail on a blank or clipped page.

    scripts/recipe docs-screenshots [--html DIR] [--out DIR] [--width PIXELS] [--height PIXELS]

Builds the site first (``sphinx -b html docs DIR``) unless ``--html`` names a built one. Writes
``<page>.png`` under ``--out`` (default ``/tmp/nvmathx-screenshots``) and prints one line per page.
A page fails when its screenshot is blank (almost every pixel the background's colour) or clipped
(the document is wider than the window, so a table or plot runs off its right edge). Needs
``chromium-headless-shell`` or ``chromium`` (Debian: ``apt-get install chromium-headless-shell``)
and Pillow. Not part of CI (no browser there). Exits 1 when a page fails, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGES = {"index": "index.html", "matmul-guide": "guide/linalg.html", "benchmarks": "generated/benchmarks.html"}
# The page reports its own width: this script is added to a copy of the page, and the DOM that
# Chromium dumps after loading carries the numbers in an attribute of <html>.
_PROBE = ("<script>window.addEventListener('load', function () {"
          " var e = document.documentElement;"
          " e.setAttribute('data-probe', e.scrollWidth + 'x' + window.innerWidth); });</script>")


def browser() -> str | None:
    """The headless browser on this machine, or None."""
    return next(filter(None, map(shutil.which, ("chromium-headless-shell", "chromium", "chromium-browser"))), None)


def blank_fraction(png_path: str) -> float:
    """The fraction of pixels of the image's most common colour (1.0: one colour, a blank page)."""
    from PIL import Image

    image = Image.open(png_path).convert("RGB").resize((320, 320))
    colours = image.getcolors(320 * 320) or []
    return max(count for count, _ in colours) / (320 * 320) if colours else 1.0


def clipped(dumped_dom: str) -> tuple[int, int] | None:
    """(document width, window width) where the document is wider than the window, else None."""
    match = re.search(r'data-probe="(\d+)x(\d+)"', dumped_dom)
    if not match:
        raise RuntimeError("the page did not report its width (did it load?)")
    document, window = int(match.group(1)), int(match.group(2))
    return (document, window) if document > window + 1 else None


def check_page(chrome: str, html: str, out: str, name: str, width: int, height: int) -> list[str]:
    """Screenshot one page into ``out/name.png``; the problems found (empty when it is fine)."""
    source = os.path.join(html, PAGES[name])
    if not os.path.exists(source):
        return [f"{source} does not exist (was the site built?)"]
    with open(source, encoding="utf-8") as file:
        text = file.read()
    probe = os.path.join(os.path.dirname(source), f".probe-{name}.html")  # beside it: relative links resolve
    with open(probe, "w", encoding="utf-8") as file:
        file.write(text.replace("</body>", _PROBE + "</body>"))
    common = [chrome, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
              f"--window-size={width},{height}"]
    try:
        png = os.path.join(out, f"{name}.png")
        subprocess.run(common + [f"--screenshot={png}", "file://" + source], check=True, capture_output=True,
                       timeout=120)
        dom = subprocess.run(common + ["--dump-dom", "file://" + probe], check=True, capture_output=True, text=True,
                             timeout=120).stdout
    finally:
        os.unlink(probe)
    problems = []
    fraction = blank_fraction(png)
    if fraction > 0.995:
        problems.append(f"blank: {fraction:.1%} of the screenshot is one colour")
    too_wide = clipped(dom)
    if too_wide:
        problems.append(f"clipped: the document is {too_wide[0]} px wide in a {too_wide[1]} px window")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/recipe docs-screenshots", description=__doc__.split("\n\n")[0])
    parser.add_argument("--html", help="a built site (default: build docs/ into a temporary folder)")
    parser.add_argument("--out", default="/tmp/nvmathx-screenshots", help="where the PNGs go")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=1600)
    args = parser.parse_args(argv)
    chrome = browser()
    if chrome is None:
        print("no headless browser: apt-get install chromium-headless-shell", file=sys.stderr)
        return 2
    html = args.html
    if html is None:
        html = tempfile.mkdtemp(prefix="nvmathx-docs-")
        docs = os.path.join(ROOT, "docs")
        subprocess.run([sys.executable, "-m", "sphinx", "-q", "-b", "html", docs, html], check=True)
    os.makedirs(args.out, exist_ok=True)
    failed = 0
    for name in PAGES:
        problems = check_page(chrome, html, args.out, name, args.width, args.height)
        print(f"{name}: {os.path.join(args.out, name + '.png')} {'; '.join(problems) if problems else 'ok'}")
        failed += bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
