"""Check the built HTML documentation as a reader sees it, offline.

Opens pages of a Sphinx HTML build in headless Chromium with the network
blocked (every http(s) load goes to a closed proxy port; ``file://`` works),
lets their scripts run, and checks the rendered DOM:

- no page loads a script or stylesheet from the network;
- on every page with formulas, MathJax typeset them (``mjx-container``
  elements, at least one per formula) and no raw ``\\(`` or ``\\[`` TeX
  delimiter is left in the visible text;
- every class page of a feature map and of ``kernelmaps.sklearn`` documents
  ``transform``.

It also saves screenshots of a few pages (a map, a scikit-learn adapter, the
user-guide page with the most formulas, the gallery index). Usage::

    python doc/check_rendered.py BUILD_DIR [--screenshots DIR] [--chromium PATH]

Exit status 0 when every check passes, 1 with one line per failure
otherwise, 2 when Chromium is missing.
"""

import argparse
import html.parser
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# The feature maps of the core, whose class pages must show ``transform``;
# every class of kernelmaps.sklearn is checked too (found in the build).
MAP_CLASSES = [
    "Chi2DirectMap", "Chi2ChebyshevMap", "HomogeneousKernelMap",
    "ExpChi2Features", "AnchorMap", "RandomFourierFeatures",
    "RandomDistributionFeatures", "DoublyRandomDistributionFeatures",
    "EMKFeatures",
]
# Sphinx's math markup in the HTML before MathJax runs.
MATH_SOURCE = re.compile(r'class="math notranslate nohighlight"')
# A load from the network in the page's own markup.
NETWORK_LOAD = re.compile(
    r'<(?:script[^>]*\bsrc|link[^>]*\bhref)="(?:https?:)?//[^"]*"')
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "chrome")


def find_chromium(given=None):
    """The Chromium executable: `given`, or the first one on PATH."""
    if given:
        return given if shutil.which(given) else None
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def chromium_command(chromium, profile):
    """Headless Chromium with every network load failing: all traffic goes
    to a proxy on a closed port, loopback included (``<-loopback>``), so
    only ``file://`` URLs load."""
    return [
        chromium, "--headless", "--no-sandbox", "--disable-gpu",
        "--disable-dev-shm-usage", "--no-first-run", "--hide-scrollbars",
        f"--user-data-dir={profile}",
        "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
        "--virtual-time-budget=20000",
    ]


def render(chromium, page, *, screenshot=None):
    """The DOM of `page` after its scripts ran; with `screenshot`, also a
    1280x2000 PNG of it there."""
    # A profile of its own per call: concurrent Chromium processes may not
    # share one.
    with tempfile.TemporaryDirectory() as profile:
        command = chromium_command(chromium, profile)
        if screenshot is None:
            command.append("--dump-dom")
        else:
            command += [f"--screenshot={screenshot}", "--window-size=1280,2000"]
        result = subprocess.run([*command, page.resolve().as_uri()],
                                capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise RuntimeError(f"chromium failed on {page} "
                           f"(exit {result.returncode}): {result.stderr[-2000:]}")
    return result.stdout


class VisibleText(html.parser.HTMLParser):
    """The text a reader sees: outside scripts, styles and code blocks, and
    outside MathJax's output (whose assistive MathML is not TeX anyway)."""

    HIDDEN = frozenset({"script", "style", "pre", "textarea", "mjx-container"})

    def __init__(self):
        super().__init__()
        self.depth, self.parts = 0, []

    def handle_starttag(self, tag, attrs):
        if tag in self.HIDDEN:
            self.depth += 1

    def handle_endtag(self, tag):
        if tag in self.HIDDEN and self.depth:
            self.depth -= 1

    def handle_data(self, data):
        if not self.depth:
            self.parts.append(data)


def visible_text(dom):
    parser = VisibleText()
    parser.feed(dom)
    return "".join(parser.parts)


def check_math(page, source, dom):
    """Failures of the formulas of one page (an empty list if typeset)."""
    expected = len(MATH_SOURCE.findall(source))
    typeset = dom.count("<mjx-container")
    failures = []
    if typeset < expected:
        failures.append(f"{page}: {expected} formulas in the HTML but "
                        f"{typeset} typeset by MathJax (mjx-container)")
    raw = re.findall(r"\\[(\[].{0,40}", visible_text(dom))
    if raw:
        failures.append(f"{page}: raw TeX left in the text: {raw[0]!r}")
    return failures


def check_methods(page, fullname, dom, method="transform"):
    """A failure if the class page of `fullname` does not document
    `method`."""
    if f'id="{fullname}.{method}"' not in dom:
        return [f"{page}: the class page of {fullname} does not list "
                f"{method!r}"]
    return []


def class_pages(build):
    """``{fullname: page}`` for the map classes and the scikit-learn
    adapters, with a failure for each missing page."""
    generated = build / "generated"
    pages, failures = {}, []
    for name in MAP_CLASSES:
        page = generated / f"kernelmaps.{name}.html"
        if page.exists():
            pages[f"kernelmaps.{name}"] = page
        else:
            failures.append(f"{page}: missing (no class page for {name})")
    adapters = 0
    for page in sorted(generated.glob("kernelmaps.sklearn.*.html")):
        fullname = page.name[: -len(".html")]
        if '<dl class="py class">' in page.read_text(encoding="utf-8"):
            pages[fullname] = page
            adapters += 1
    if not adapters:
        failures.append(f"{generated}: no class page of kernelmaps.sklearn")
    return pages, failures


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build", type=Path, help="the HTML build directory")
    parser.add_argument("--screenshots", type=Path,
                        help="directory for PNG screenshots of a few pages")
    parser.add_argument("--chromium", help="the Chromium executable")
    parser.add_argument("--jobs", type=int, default=2,
                        help="Chromium processes at once (default 2)")
    args = parser.parse_args(argv)

    build = args.build
    if not (build / "index.html").exists():
        print(f"check_rendered: {build} is not an HTML build (no index.html)")
        return 1
    chromium = find_chromium(args.chromium)
    if chromium is None:
        print("check_rendered: no Chromium found (tried "
              f"{args.chromium or ', '.join(CHROMIUM_NAMES)})")
        return 2

    pages = sorted(p for p in build.rglob("*.html")
                   if "_static" not in p.parts and "_sources" not in p.parts)
    sources = {p: p.read_text(encoding="utf-8") for p in pages}
    failures = []
    for page, source in sources.items():
        for match in NETWORK_LOAD.findall(source):
            failures.append(f"{page}: loads from the network: {match}")

    math_pages = [p for p in pages if MATH_SOURCE.search(sources[p])]
    classes, missing = class_pages(build)
    failures += missing
    to_render = sorted(set(math_pages) | set(classes.values()))
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        doms = dict(zip(to_render, pool.map(lambda p: render(chromium, p),
                                            to_render), strict=True))

    n_formulas = 0
    for page in math_pages:
        failures += check_math(page.relative_to(build), sources[page], doms[page])
        n_formulas += len(MATH_SOURCE.findall(sources[page]))
    for fullname, page in classes.items():
        failures += check_methods(page.relative_to(build), fullname, doms[page])

    shots = []
    if args.screenshots is not None:
        args.screenshots.mkdir(parents=True, exist_ok=True)
        guide = [p for p in math_pages if "user_guide" in p.parts]
        candidates = [
            build / "generated" / "kernelmaps.Chi2DirectMap.html",
            build / "generated" / "kernelmaps.sklearn.SetKernel.html",
            max(guide, key=lambda p: len(MATH_SOURCE.findall(sources[p])),
                default=None),
            build / "auto_examples" / "index.html",
        ]
        for page in candidates:
            if page is None or not page.exists():
                failures.append(f"screenshot: page {page} missing")
                continue
            name = "_".join(page.relative_to(build).with_suffix(".png").parts)
            render(chromium, page, screenshot=args.screenshots / name)
            shots.append(args.screenshots / name)

    print(f"check_rendered: {len(pages)} pages, {len(math_pages)} with "
          f"{n_formulas} formulas, {len(classes)} class pages checked "
          f"offline in {chromium}")
    for shot in shots:
        print(f"  screenshot {shot}")
    if failures:
        print(f"check_rendered: FAILED ({len(failures)} problems)")
        for failure in failures:
            print(f"  {failure}")
        return 1
    print("check_rendered: OK (formulas typeset offline, transform listed on "
          "every map and adapter page, no network loads)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
