"""The demo, ``python -m kernelmaps``: its table, its conclusions and its
progress bar."""

import contextlib
import io
import os
import re
import subprocess
import sys

import pytest

import kernelmaps.__main__ as demo
from kernelmaps.__main__ import main

ROW = re.compile(r"^  (?P<label>[A-Z])\s{4}(?P<name>.+?)\s+(?P<time>[\d.]+)s"
                 r"(?:\s+(?P<speedup>[\d.]+)x vs (?P<baseline>[A-Z]))?"
                 r"(?:\s+(?P<max>\S+e[-+]\d+)\s+(?P<mean>\S+e[-+]\d+))?\s+"
                 r"(?P<score>-?[\d.]+)%?$")
CONCLUSION = re.compile(r"^- (?P<label>[A-Z]) \((?P<name>.+?)\): "
                        r"(?:(?P<ratio>[\d.]+)x (?P<word>faster|slower)|"
                        r"(?P<same>about as fast)) (?:than|as) "
                        r"(?P<baseline>[A-Z]) ")


def parse(out):
    """Rows of the table by label, and the conclusion lines by label."""
    rows, conclusions = {}, {}
    for line in out.splitlines():
        if match := ROW.match(line):
            rows[match["label"]] = match.groupdict()
        elif match := CONCLUSION.match(line):
            conclusions[match["label"]] = match.groupdict()
    return rows, conclusions


@pytest.fixture(scope="module")
def quick_run():
    """Output of one --quick run (module scope: the tests below read it)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--quick", "--workers", "2", "--no-progress"]) == 0
    return out.getvalue()


def test_demo_quick_table(quick_run):
    rows, _ = parse(quick_run)
    by_name = {row["name"]: row for row in rows.values()}
    exact = [row for row in rows.values() if "kernel ridge" in row["name"]]
    maps = [row for row in rows.values() if "+ linear ridge" in row["name"]]
    assert len(exact) == 4 and len(maps) == 5, rows
    assert list(rows) == list("ABCDEFGHIJ")  # every row printed, in order
    assert len(rows) == demo.Demo.STEPS  # the progress bar ends at 100 %
    for row in maps:  # every map row names its exact row, and has an error
        assert row["speedup"] is not None, row
        assert float(row["max"]) >= float(row["mean"]) > 0, row
    for row in exact:
        assert row["speedup"] is None and row["max"] is None, row
    # The direct chi2 map is nearly exact; RDF's error shrinks with t.
    assert float(by_name["Chi2DirectMap, 5 terms + linear ridge"]["max"]) < 1e-2
    assert (float(by_name["RDF, t = 4000 + linear ridge"]["mean"])
            < float(by_name["RDF, t = 1000 + linear ridge"]["mean"]))
    # Histogram classes that differ in spread: kernels beat linear on raw.
    raw = float(by_name["linear ridge on the histograms"]["score"])
    assert float(by_name["additive chi2 kernel + kernel ridge"]["score"]) > raw + 10
    assert -1 < float(by_name["MMD kernel + kernel ridge"]["score"]) <= 1


def test_demo_speedups_name_the_exact_row(quick_run):
    """Each map's speed-up is against the exact kernel it approximates, named
    by its row label, in the same section and above the map's row."""
    rows, _ = parse(quick_run)
    expected = {"RDF, t = 1000": "mean map kernel",
                "RDF, t = 4000": "mean map kernel",
                "ExpChi2Features, t = 2000": "exp-chi2 kernel",
                "Chi2DirectMap, 5 terms": "additive chi2 kernel",
                "DRDF, t = 500, 2000": "MMD kernel"}
    for row in rows.values():
        if row["speedup"] is None:
            continue
        baseline = rows[row["baseline"]]
        assert baseline["label"] < row["label"], row
        assert baseline["speedup"] is None, baseline  # an exact row
        assert baseline["name"].startswith(
            expected[row["name"].split(" + ")[0]]), (row, baseline)
        # The ratio of the printed times (rounded to 1 ms), where they are
        # long enough for the rounding not to matter.
        if float(row["time"]) >= 0.02 and float(baseline["time"]) >= 0.02:
            assert float(row["speedup"]) == pytest.approx(
                float(baseline["time"]) / float(row["time"]), rel=0.1)
    assert "speed-up: time of the exact-kernel row named after 'vs'" in quick_run


def test_demo_conclusions_follow_the_numbers(quick_run):
    """'faster' only where the printed speed-up is at least 1, with the same
    number (or its inverse, 'slower', below 1; 'about as fast' within 5 %),
    for every map row."""
    rows, conclusions = parse(quick_run)
    assert set(conclusions) == {label for label, row in rows.items()
                                if row["speedup"] is not None}
    for label, line in conclusions.items():
        row = rows[label]
        assert line["baseline"] == row["baseline"], line
        speedup = float(row["speedup"])
        if line["word"] == "faster":
            assert speedup >= 1 and float(line["ratio"]) == pytest.approx(
                speedup, abs=0.051), (row, line)
        elif line["word"] == "slower":
            assert speedup < 1 and float(line["ratio"]) == pytest.approx(
                1 / speedup, rel=0.06), (row, line)
        else:
            assert 0.95 <= speedup <= 1.05, (row, line)


def test_demo_conclusions_say_slower_below_one():
    """The sentences come from the numbers: a map slower than its exact row
    is called slower, one within 5 % of its time about as fast, and the
    score difference keeps its sign."""
    table = demo.Demo(workers=1, seed=0)
    accuracy = demo.Score("accuracy", None)
    exact = table.row("exact kernel + kernel ridge", 0.5, accuracy, 0.9)
    table.row("slow map + linear ridge", 2.0, accuracy, 0.8, exact)
    table.row("fast map + linear ridge", 0.1, accuracy, 0.95, exact)
    table.row("close map + linear ridge", 0.49, accuracy, 0.90851, exact)
    lines = table.conclusions()
    assert lines == [
        "B (slow map): 4.0x slower than A (exact kernel); accuracy 80.0% vs "
        "90.0% (-10.0 points)",
        "C (fast map): 5.0x faster than A (exact kernel); accuracy 95.0% vs "
        "90.0% (+5.0 points)",
        "D (close map): about as fast as A (exact kernel); accuracy 90.9% vs "
        "90.0% (+0.9 points)",
    ]
    # Differences of the printed values (not of the unrounded ones, which
    # would give +0.1 and -0.001 here), with no "-0.0".
    assert (accuracy.compare(0.90949, 0.90851)
            == "accuracy 90.9% vs 90.9% (+0.0 points)")
    assert (demo.Score("r2", None).compare(0.9575, 0.95849)
            == "R^2 0.958 vs 0.958 (+0.000)")


def test_demo_quick_says_smoke_run(quick_run, monkeypatch, capsys):
    assert "smoke run" in quick_run.splitlines()[0]
    assert demo.QUICK_NOTE in quick_run
    # A full run (at the quick sizes, for time) does not carry the note.
    monkeypatch.setitem(demo.SIZES, "full", demo.SIZES["quick"])
    assert main(["--workers", "1", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "smoke" not in out and "What this run shows:" in out


def _screen(text):
    """What a terminal shows of `text`: each carriage return goes back to the
    start of the line, and later characters overwrite earlier ones."""
    lines = []
    for line in text.split("\n"):
        shown = ""
        for part in line.split("\r"):
            shown = part + shown[len(part):]
        lines.append(shown.rstrip())
    return lines


def test_demo_progress_bar_leaves_the_table_whole(tmp_path):
    """With the bar on (stdout and stderr on one terminal), no bar is left
    between the lines of the table: the table from its header to its
    footnote is exactly the rows of a run without bar."""
    pytest.importorskip("tqdm")
    env = dict(os.environ, PYTHONUNBUFFERED="1")

    def run(*args):
        result = subprocess.run(
            [sys.executable, "-m", "kernelmaps", "--quick", "--workers", "1",
             *args], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, timeout=300, check=False)
        # Bytes, decoded here: text mode would turn each "\r" into "\n".
        output = result.stdout.decode()
        assert result.returncode == 0, output
        return output

    def table(lines):
        start = next(i for i, line in enumerate(lines) if "  row  method" in line)
        end = next(i for i, line in enumerate(lines) if line.startswith("speed-up:"))
        return lines[start:end]

    with_bar = run()
    assert "pipeline" in with_bar  # the bar was drawn...
    shown = table(_screen(with_bar))
    assert not any("pipeline" in line for line in shown), shown  # ...and gone
    plain = table(_screen(run("--no-progress")))
    # times and speed-ups vary (a speed-up may print as "3x" or "2.95x")
    strip = re.compile(r"\s*(\d+(\.\d+)?[sx]\b|\S+e[-+]\d+)")
    assert [strip.sub("#", line) for line in shown] == [
        strip.sub("#", line) for line in plain]
