import re
import subprocess
import sys

from kernelmaps.__main__ import main

ROW = re.compile(r"^  (?P<name>.+?)\s+(?P<time>[\d.]+)s\s+(?:(?P<speedup>[\d.]+)x)?"
                 r"\s*(?:(?P<max>\S+e[-+]\d+)\s+(?P<mean>\S+e[-+]\d+))?\s+"
                 r"(?P<score>-?[\d.]+)%?$")


def demo_rows(capsys):
    assert main(["--quick", "--workers", "2", "--no-progress"]) == 0
    rows = {}
    for line in capsys.readouterr().out.splitlines():
        match = ROW.match(line)
        if match:
            rows[match["name"]] = match.groupdict()
    return rows


def test_demo_quick_table(capsys):
    rows = demo_rows(capsys)
    exact = [name for name in rows if "kernel ridge" in name]
    maps = [name for name in rows if "+ linear ridge" in name]
    assert len(exact) == 4 and len(maps) == 5, rows
    for name in maps:  # every map row has a speed-up and a kernel error
        assert rows[name]["speedup"] is not None, name
        assert float(rows[name]["max"]) >= float(rows[name]["mean"]) > 0, name
    for name in exact:
        assert rows[name]["speedup"] is None and rows[name]["max"] is None, name
    # The direct chi2 map is nearly exact; RDF's error shrinks with t.
    assert float(rows["Chi2DirectMap, 5 terms + linear ridge"]["max"]) < 1e-2
    assert (float(rows["RDF, t = 4000 + linear ridge"]["mean"])
            < float(rows["RDF, t = 1000 + linear ridge"]["mean"]))
    # Histogram classes that differ in spread: kernels beat linear on raw.
    raw = float(rows["linear ridge on the histograms"]["score"])
    assert float(rows["additive chi2 kernel + kernel ridge"]["score"]) > raw + 10
    assert -1 < float(rows["MMD kernel + kernel ridge"]["score"]) <= 1


def test_demo_entry_point(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "kernelmaps", "--quick"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "kernelmaps" in result.stdout
    assert "kernel ridge" in result.stdout
