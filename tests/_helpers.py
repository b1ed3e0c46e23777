"""Data generators shared by the test modules, and the extraction of the
code blocks of .rst pages (tests/test_readme.py, tests/test_user_guide.py).

Each data generator makes exactly the random draws, in the same order, that the
test modules made with their own copies, so the test data (and so every
tolerance and expected value) is unchanged. Import with
``from ._helpers import ...``; test modules never import each other.
"""

import ast
import contextlib
import importlib.util
import os
import re
import textwrap

import numpy as np
import scipy.sparse

# ---------------------------------------------------------------- histograms


def dirichlet_histograms(n, d, seed, *, alpha, cutoff):
    """`n` L1-normalised Dirichlet(`alpha`) histograms of `d` bins, with
    zeros: values below `cutoff` are dropped before normalising."""
    rng = np.random.default_rng(seed)
    hists = rng.dirichlet(np.full(d, alpha), size=n)
    hists[hists < cutoff] = 0.0
    return hists / hists.sum(axis=1, keepdims=True)


def gamma_histograms(n, d, seed):
    """`n` L1-normalised histograms of `d` bins with Gamma(0.5) counts, no
    zeros."""
    X = np.random.default_rng(seed).gamma(0.5, size=(n, d))
    return X / X.sum(axis=1, keepdims=True)


def sparse_histograms(rng, n, d, density=0.4, dtype=np.float64):
    """Unnormalised uniform(0, 1) histograms from `rng`, a fraction `density`
    of the bins non-zero; the first row is all zeros (an empty histogram)."""
    A = rng.random((n, d)) * (rng.random((n, d)) < density)
    A[0] = 0.0  # an empty histogram
    return A.astype(dtype)


# Pixel values 0..16 with the frequencies of scikit-learn's digits (49 %
# zeros, many 16s): 64-bin histograms like the L1-normalised digits.
DIGIT_LEVELS = np.array([0.489, 0.036, 0.029, 0.026, 0.028, 0.024, 0.022, 0.023,
                         0.03, 0.022, 0.024, 0.025, 0.032, 0.031, 0.031, 0.037,
                         0.091])


def digits_like(n, seed=0):
    """`n` L1-normalised 64-bin histograms of pixel values drawn with the
    frequencies of scikit-learn's digits (`DIGIT_LEVELS`)."""
    rng = np.random.default_rng(seed)
    X = rng.choice(17, size=(n, 64), p=DIGIT_LEVELS / DIGIT_LEVELS.sum())
    X = X.astype(np.float64)
    return X / X.sum(axis=1, keepdims=True)


def with_value(value, sparse=False):
    """A 3 x 4 matrix of ones with `value` at [1, 2], as CSR if `sparse`."""
    A = np.ones((3, 4))
    A[1, 2] = value
    return scipy.sparse.csr_matrix(A) if sparse else A


def strided_csr():
    """A 2 x 4 CSR matrix whose data array is a strided view (not
    C-contiguous)."""
    data2 = np.arange(1.0, 13.0)
    indices = np.array([0, 1, 2, 0, 2, 3])
    indptr = np.array([0, 3, 6])
    M = scipy.sparse.csr_matrix((data2[::2], indices, indptr), shape=(2, 4))
    assert not M.data.flags.c_contiguous
    return M


# ---------------------------------------------------------------- ragged sets


def random_sets(rng, n_sets, d, dtype, *, low=1, high=50, shift=0.0):
    """`n_sets` sets of standard normal `d`-dimensional points plus `shift`,
    as `dtype`, from `rng`; each size uniform in low..high (inclusive)."""
    return [
        (rng.normal(size=(rng.integers(low, high + 1), d)) + shift).astype(dtype)
        for _ in range(n_sets)
    ]


def sets_of_sizes(sizes, d, dtype, seed):
    """Sets of standard normal `d`-dimensional points, as `dtype`, of the
    given `sizes`."""
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(n, d)).astype(dtype) for n in sizes]


def sets_with_random_means(n_sets, seed):
    """`n_sets` sets of 2-D normal points, each around its own standard
    normal mean; sizes uniform in 1..19, all drawn first."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 20, size=n_sets)
    return [rng.normal(loc=rng.normal(size=2), size=(s, 2)) for s in sizes]


def sets(seed=0, n_sets=3, d=2, scale=1.0):
    """`n_sets` sets of standard normal `d`-dimensional points times
    `scale`, each of 3 to 5 points."""
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(int(rng.integers(3, 6)), d)) * scale
            for _ in range(n_sets)]


def sets_and_histograms():
    """The data of the engine's hardening tests: 4 sets of 4-D standard
    normal points (3, 17, 9 and 30 points), then 7 Dirichlet(1) histograms
    of 12 bins, from seed 42."""
    rng = np.random.default_rng(42)
    points = [rng.normal(size=(n, 4)) for n in (3, 17, 9, 30)]
    return points, rng.dirichlet(np.ones(12), size=7)


# ------------------------------------------------ code blocks of .rst pages

def rst_code_blocks(text):
    """The code a reader of the reStructuredText `text` would run, in order:
    a list of ``(kind, code, line)`` with `kind` ``"python"`` (to execute)
    or ``"doctest"`` (``>>>`` examples, to check with their output), the
    code dedented, and the 1-based line of its first line.

    Taken: ``.. code-block::`` (and ``code``, ``sourcecode``) directives in
    Python or pycon, literal blocks after ``::`` whose text parses as
    Python, and doctest blocks; a block whose first line starts with
    ``>>>`` is a doctest whatever introduced it.
    """
    lines = text.split("\n")
    blocks, i = [], 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        directive = re.match(
            r"\s*\.\. (?:code-block|code|sourcecode)::\s*(\S*)\s*$", line)
        if directive:
            body, start, i = _indented_body(lines, i + 1, indent)
            if directive.group(1) in ("python", "py", "python3", "pycon", ""):
                _add_block(blocks, body, start, literal=False)
        elif stripped.startswith(">>>"):
            start = i
            while i < len(lines) and lines[i].strip():
                i += 1
            _add_block(blocks, lines[start:i], start, literal=False)
        elif stripped.endswith("::") and not stripped.startswith(".."):
            body, start, i = _indented_body(lines, i + 1, indent)
            _add_block(blocks, body, start, literal=True)
        else:
            i += 1
    return blocks


def _indented_body(lines, i, indent):
    """The lines indented deeper than `indent` from line `i` on (a
    directive's options skipped), their first line's index, and the index
    of the line after them."""
    while i < len(lines) and re.match(r"\s+:[\w-]+:", lines[i]):
        i += 1  # directive options (:caption:, :linenos:, ...)
    while i < len(lines) and not lines[i].strip():
        i += 1
    start = i
    while i < len(lines) and (not lines[i].strip()
                              or len(lines[i]) - len(lines[i].lstrip()) > indent):
        i += 1
    return lines[start:i], start, i


def _add_block(blocks, body, start, *, literal):
    code = textwrap.dedent("\n".join(body)).strip("\n") + "\n"
    if not code.strip():
        return
    if code.lstrip().startswith(">>>"):
        blocks.append(("doctest", code, start + 1))
        return
    if literal:  # a literal block is code only if it is Python
        try:
            ast.parse(code)
        except SyntaxError:
            return
    blocks.append(("python", code, start + 1))


def missing_packages(code, packages=("sklearn", "dask", "matplotlib", "torch", "jax")):
    """The optional packages that `code` imports (directly, or through
    ``kernelmaps.sklearn``) and that are not installed."""
    needs = {p for p in packages
             if re.search(rf"^\s*(?:>>> )?(?:from|import) {p}\b", code,
                          flags=re.MULTILINE)}
    if re.search(r"\bkernelmaps\.sklearn\b", code):
        needs.add("sklearn")
    if needs & {"torch", "jax"}:  # (kernelmaps takes them through it)
        needs.add("array_api_compat")
    return sorted(p for p in needs if importlib.util.find_spec(p) is None)


# -- arrays of other libraries (the test_array_api*.py modules) -------------

def import_torch():
    """PyTorch, or the test skipped."""
    import pytest

    return pytest.importorskip("torch")


def import_jnp():
    """jax.numpy with float64 enabled, or the test skipped."""
    import pytest

    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    return jnp


def import_strict():
    """array-api-strict, or the test skipped."""
    import pytest

    return pytest.importorskip("array_api_strict")


# The device of the "torch_grad" arrays below, which PyTorch computes
# there: $KERNELMAPS_TEST_DEVICE ("cuda" on a GPU machine), else the CPU.
TEST_DEVICE = os.environ.get("KERNELMAPS_TEST_DEVICE", "cpu")

# (name, the library's array of a NumPy array, its values back in NumPy)
LIBRARIES = {
    "torch": (lambda a: import_torch().asarray(a),
              lambda a: a.detach().numpy()),
    "torch_grad": (lambda a: import_torch().asarray(
                       a, device=TEST_DEVICE).requires_grad_(),
                   lambda a: a.detach().cpu().numpy()),
    "jax": (lambda a: import_jnp().asarray(a), np.asarray),
    "strict": (lambda a: import_strict().asarray(a), lambda a: np.asarray(a)),
}


# The libraries that compute the arrays themselves (`ArrayLibrary.native`):
# a NumPy array as a tensor that asks for a gradient, or as an
# array-api-strict array
NATIVE = {name: LIBRARIES[name][0] for name in ("torch_grad", "strict")}


def native_labels(library, labels):
    """Integer `labels` as an array of the `NATIVE` `library` (on its
    device), without a gradient."""
    if library == "torch_grad":
        return import_torch().asarray(labels, device=TEST_DEVICE)
    return NATIVE[library](labels)


def assert_same_test(result, expected, rtol=1e-12):
    """Two `MMDTestResult`s of one test (NumPy's `expected`): the same
    p-value, decision, method, kernel and scale; the statistic(s) and the
    null distribution equal to `rtol` of the null distribution's scale
    (differences of kernel sums: their rounding is relative to that scale,
    not to each value, which may be near 0)."""
    from numpy.testing import assert_allclose

    assert type(result) is type(expected)
    assert result.pvalue == expected.pvalue
    assert result.reject == expected.reject
    assert result.method == expected.method
    assert np.all(np.asarray(result.kernel) == np.asarray(expected.kernel))
    assert np.all(np.asarray(result.gamma) == np.asarray(expected.gamma))
    assert np.shape(result.null_distribution) == np.shape(expected.null_distribution)
    scale = np.abs(expected.null_distribution).max()
    for name in ("statistic", "null_distribution"):
        assert_allclose(getattr(result, name), getattr(expected, name),
                        rtol=rtol, atol=rtol * scale)


def two_samples(n, m, dtype=np.float64, d=3, seed=0, shift=0.3):
    """Samples of n and m standard normal points in d dimensions, the
    second shifted by `shift` (a two-sample test's alternative)."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, d)).astype(dtype),
            (rng.standard_normal((m, d)) + shift).astype(dtype))


def point_sets(dtype, seed=0, sizes=(4, 7, 5, 6), shift=0.0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((n, 3)) + shift).astype(dtype) for n in sizes]


@contextlib.contextmanager
def host_copies(native_only=False):
    """Record the number of values of every array that
    `ArrayLibrary.to_numpy` brings to the host within the block: a list,
    filled as it runs (what a fit on the device may read of its data).
    `native_only`: only the arrays of a library that computes (not those
    that the compiled engine takes, on the CPU: views)."""
    from kernelmaps._libraries import ArrayLibrary

    sizes, to_numpy = [], ArrayLibrary.to_numpy

    def recorded(self, a):
        values = to_numpy(self, a)
        if self.native or not native_only:
            sizes.append(0 if values is None else values.size)
        return values

    ArrayLibrary.to_numpy = recorded
    try:
        yield sizes
    finally:
        ArrayLibrary.to_numpy = to_numpy
