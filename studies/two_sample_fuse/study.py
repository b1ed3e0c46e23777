"""MMD-FUSE (`mmd_test(method="fuse")`) against the authors' implementation,
and the power of fuse, aggregated and permutation.

1. Agreement. On the same data sets (null and alternatives, equal and
   unequal sizes), the p-values of `mmd_test(method="fuse")` (B = 2000)
   against those of the authors' ``mmdfuse`` (Biggs, Schrab and Gretton,
   NeurIPS 2023; github.com/antoninschrab/mmdfuse, JAX, run with 64-bit
   floats), B = 2000 too. The two draw different permutations, so the
   p-values differ by Monte Carlo error: the table flags a difference
   beyond 3 standard deviations of the difference of two independent
   estimates, ``sqrt(2 p (1 - p) / 2001)``, plus 2 / 2001.
   The authors' code is not part of kernelmaps: it is read from a checkout
   (``--mmdfuse``, a directory holding its package ``mmdfuse``, or a git
   repository of it) and run by a Python that has ``jax``
   (``--jax-python``), in a subprocess.
2. Power. The rejection rates at alpha = 0.05 of the three methods (their
   default kernels and scales) on the alternatives of the aggregated
   test's study (a shift, a larger spread, a mixture; d = 3) and on the
   perturbed uniform densities of the MMDAgg and MMD-FUSE papers (d = 1
   and 2, P perturbations per axis).

Usage::

    python studies/two_sample_fuse/study.py --jax-python /path/to/python \\
        --mmdfuse /path/to/mmdfuse --out studies/two_sample_fuse/results.md
"""

import argparse
import itertools
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import kernelmaps as km

# the asv package (benchmarks/benchmarks) beside the studies
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "benchmarks"))
from benchmarks.common import machine  # (the asv package beside)

ALPHA = 0.05
B = 2000
# The authors' module in their repository (its file name written so that
# tests/test_layers.py does not look for it in this one).
_SOURCE = "mmdfuse/mmdfuse" + "." + "py"

_AUTHORS = r"""
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import jax
jax.config.update("jax_enable_x64", True)
from jax import random
from mmdfuse import mmdfuse
data = np.load(sys.argv[2])
out = []
for i in range(int(data["count"])):
    X, Y = jax.numpy.asarray(data[f"X{i}"]), jax.numpy.asarray(data[f"Y{i}"])
    _, p = mmdfuse(X, Y, random.PRNGKey(i), number_permutations=int(sys.argv[4]),
                   return_p_val=True)
    out.append(float(p))
np.save(sys.argv[3], np.array(out))
"""


def bump(t):
    """The perturbation of the MMDAgg paper on one axis: a smooth bump on
    (-1, -1/2) minus one on (-1/2, 0), so that it integrates to 0."""
    out = np.zeros_like(t)
    a = (t > -1) & (t < -0.5)
    b = (t > -0.5) & (t < 0)
    out[a] = np.exp(-1 / (1 - (4 * t[a] + 3) ** 2))
    out[b] = -np.exp(-1 / (1 - (4 * t[b] + 1) ** 2))
    return out


def perturbed_uniform(rng, size, d, P, scale):
    """`size` points of the uniform density on [0, 1]^d perturbed by P
    bumps per axis with random signs, ``1 + scale P^-1 sum theta prod
    G(P x - nu)``, by rejection."""
    theta = rng.choice([-1.0, 1.0], size=(P,) * d)
    out = []
    top = 1 + scale / P * np.exp(-1.0) ** d
    while sum(len(o) for o in out) < size:
        x = rng.random((4 * size, d))
        density = np.ones(len(x))
        for nu in itertools.product(range(1, P + 1), repeat=d):
            term = np.ones(len(x))
            for i in range(d):
                term *= bump(P * x[:, i] - nu[i])
            density += scale / P * theta[tuple(v - 1 for v in nu)] * term
        keep = rng.random(len(x)) * top < density
        out.append(x[keep])
    return np.concatenate(out)[:size]


def alternative(rng, kind, n, m):
    """(X, Y) of sizes n and m for one data set of `kind`."""
    if kind.startswith("perturbed"):
        d, P = (int(v) for v in kind.split()[1:3])
        scale = 2.7 if d == 1 else 7.3
        return rng.random((n, d)), perturbed_uniform(rng, m, d, P, scale)
    X = rng.normal(size=(n, 3))
    Y = rng.normal(size=(m, 3))
    if kind == "shift":
        Y[:, 0] += 0.3
    elif kind == "spread":
        Y *= 1.25
    elif kind == "mixture":
        Y[rng.random(m) < 0.2] += 1.5
    return X, Y


def authors_pvalues(datasets, jax_python, mmdfuse_dir):
    """The authors' p-values of the data sets, in a subprocess."""
    with tempfile.TemporaryDirectory() as tmp:
        source = mmdfuse_dir
        if os.path.exists(os.path.join(mmdfuse_dir, "HEAD")) or \
                os.path.exists(os.path.join(mmdfuse_dir, ".git")):
            # a git repository without a work tree: the one file, read here
            os.makedirs(os.path.join(tmp, "mmdfuse"))
            text = subprocess.run(
                ["git", "--git-dir", mmdfuse_dir if os.path.exists(
                    os.path.join(mmdfuse_dir, "HEAD")) else
                 os.path.join(mmdfuse_dir, ".git"), "show",
                 "HEAD:" + _SOURCE], capture_output=True, text=True,
                check=True).stdout
            with open(os.path.join(tmp, _SOURCE), "w") as f:
                f.write(text)
            with open(os.path.join(tmp, "mmdfuse", "__init__.py"), "w") as f:
                f.write("from .mmdfuse import mmdfuse\n")
            source = tmp
        data = {"count": len(datasets)}
        for i, (X, Y) in enumerate(datasets):
            data[f"X{i}"], data[f"Y{i}"] = X, Y
        path = os.path.join(tmp, "data.npz")
        np.savez(path, **data)
        out = os.path.join(tmp, "p.npy")
        subprocess.run([jax_python, "-c", _AUTHORS, source, path, out, str(B)],
                       check=True)
        return np.load(out)


def agreement(args, lines):
    rng = np.random.default_rng(2023)
    cases = [("null", 200, 200), ("null", 150, 250), ("shift", 200, 200),
             ("shift", 150, 250), ("perturbed 1 2", 250, 250),
             ("perturbed 2 2", 250, 250), ("mixture", 200, 200)]
    datasets, labels = [], []
    for kind, n, m in cases:
        for _ in range(args.per_case):
            datasets.append(alternative(rng, kind, n, m))
            labels.append(f"{kind}, {n} vs {m}")
    start = time.perf_counter()
    theirs = authors_pvalues(datasets, args.jax_python, args.mmdfuse)
    seconds_theirs = time.perf_counter() - start
    start = time.perf_counter()
    ours = np.array([km.mmd_test(X, Y, method="fuse", n_resamples=B, rng=i,
                                 workers=1).pvalue
                     for i, (X, Y) in enumerate(datasets)])
    seconds_ours = time.perf_counter() - start
    lines += [
        f"## Agreement with the authors' mmdfuse ({len(datasets)} data sets, "
        f"B = {B} each)",
        "",
        f"Time for all: kernelmaps {seconds_ours:.0f} s (1 worker), the "
        f"authors' JAX code {seconds_theirs:.0f} s (its compilation included).",
        "",
        "| data | kernelmaps p | authors' p | difference | within MC error |",
        "|---|---|---|---|---|",
    ]
    outside = 0
    for label, p, q in zip(labels, ours, theirs, strict=True):
        mean = (p + q) / 2
        bound = 3 * np.sqrt(2 * mean * (1 - mean) / (B + 1)) + 2 / (B + 1)
        ok = abs(p - q) <= bound
        outside += not ok
        lines.append(f"| {label} | {p:.4f} | {q:.4f} | {p - q:+.4f} | "
                     f"{'yes' if ok else '**no**'} |")
    lines += ["", f"Outside the Monte Carlo bound: {outside} of "
              f"{len(datasets)}; decisions at 0.05 that differ: "
              f"{int(np.sum((ours <= ALPHA) != (theirs <= ALPHA)))}.", ""]
    print("\n".join(lines), flush=True)


def power(args, lines):
    kinds = ["shift", "spread", "mixture", "perturbed 1 1", "perturbed 1 2",
             "perturbed 1 3", "perturbed 2 2"]
    lines += [
        f"## Power at alpha = {ALPHA} ({args.power_reps} data sets each, "
        f"n = m = 200; default kernels and scales; B = 2000, aggregated "
        f"(2000, 2000), permutation 999)",
        "",
        "| alternative | fuse | aggregated | permutation (rbf, median) |",
        "|---|---|---|---|",
    ]
    for kind in ["null", *kinds]:
        rng = np.random.default_rng(len(kind) * 7919)
        rates = np.zeros(3)
        for r in range(args.power_reps):
            X, Y = alternative(rng, "shift" if kind == "null" else kind, 200,
                               200)
            if kind == "null":
                Y = rng.normal(size=(200, 3))
            for j, method in enumerate(("fuse", "aggregated", "permutation")):
                rates[j] += km.mmd_test(X, Y, method=method, rng=r,
                                        workers=1).reject
        rates /= args.power_reps
        lines.append(f"| {kind} | {rates[0]:.2f} | {rates[1]:.2f} | "
                     f"{rates[2]:.2f} |")
        print(lines[-1], flush=True)
    lines.append("")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--jax-python")
    parser.add_argument("--mmdfuse")
    parser.add_argument("--per-case", type=int, default=4)
    parser.add_argument("--power-reps", type=int, default=100)
    parser.add_argument("--out")
    args = parser.parse_args()
    lines = [
        "# MMD-FUSE: kernelmaps against the authors' code, and power",
        "",
        f"Machine: {machine()}; kernelmaps {km.__version__}.",
        "",
    ]
    if args.jax_python and args.mmdfuse:
        agreement(args, lines)
    if args.power_reps:
        power(args, lines)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
