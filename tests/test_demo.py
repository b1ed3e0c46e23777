import subprocess
import sys

from kernelmaps.__main__ import main


def test_demo_runs_quick(capsys):
    assert main(["--quick", "--workers", "2"]) == 0
    out = capsys.readouterr().out
    assert "numpy, blocked" in out
    assert "1-nearest-neighbour accuracy" in out
    assert "kNN Renyi divergence" in out
    assert "random distribution features (RDF)" in out
    assert "project_psd (clip)" in out
    assert "Chi2DirectMap (fitted)" in out
    assert "AnchorMap, 50 anchors" in out
    for line in out.splitlines():
        if "max |diff|" in line and "vs numpy" in line:
            assert float(line.rsplit(" ", 1)[1]) < 1e-10
        if "kernelmaps" in line and "numpy" in line and "max |diff|" in line:
            assert float(line.rsplit(" ", 1)[1]) < 1e-10
        if "cKDTree + NumPy" in line:
            assert float(line.rsplit(" ", 1)[1]) < 1e-10


def test_demo_entry_point(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "kernelmaps", "--quick"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "kernelmaps" in result.stdout
