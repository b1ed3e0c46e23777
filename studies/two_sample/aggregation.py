"""The price of aggregation: the power of `mmd_test(method="aggregated")`
against its own best single member, beside the authors' MMDAgg and with
other collection sizes (issue 20's criterion "aggregated >= best single -
0.05").

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
        python studies/two_sample/aggregation.py shift 100 --reps 200 \
        [--per-kernel 5] [--kernel rbf] [--mmdagg FILE]

The alternatives are those of two_sample_study.py. Each single member (its
`kernel` and `gamma` from the aggregated result) runs alone as a wild
bootstrap test with 999 resamples; `--mmdagg` also runs the authors'
NumPy MMDAgg (github.com/antoninschrab/mmdagg, its module mmdagg.np, not part
of this project) on the same data, with its defaults.
"""

import argparse
import importlib.util
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import study

import kernelmaps as km
from kernelmaps import _spec as _families


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("alternative", choices=study.ALTERNATIVES)
    parser.add_argument("n", type=int, help="points per sample")
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--per-kernel", type=int, default=10,
                        help="bandwidths per kernel (the default is 10)")
    parser.add_argument("--kernel", default=None, help="rbf or laplacian only")
    parser.add_argument("--mmdagg", help="file of the authors' module mmdagg.np")
    parser.add_argument("--seed", type=int, default=99)
    args = parser.parse_args(argv)
    # the collection's size is a private constant: set here for the study
    _families.N_BANDWIDTHS = args.per_kernel
    reference = None
    if args.mmdagg:
        spec = importlib.util.spec_from_file_location("mmdagg_np", args.mmdagg)
        reference = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(reference)
    print(study.machine())
    aggregated = authors = 0
    singles = None
    start = time.perf_counter()
    for rep in range(args.reps):
        X, Y = study.alternative(args.alternative, args.n,
                                 np.random.default_rng([args.seed, rep]))
        res = km.mmd_test(X, Y, method="aggregated", kernel=args.kernel,
                          rng=rep, workers=1)
        aggregated += res.reject
        members = [km.mmd_test(X, Y, method="wild_bootstrap", kernel=k,
                               gamma=g, n_resamples=999, rng=rep,
                               workers=1).reject
                   for k, g in zip(res.kernel, res.gamma, strict=True)]
        singles = np.add(members, 0 if singles is None else singles)
        if reference is not None:
            authors += reference.mmdagg(X, Y, seed=rep)
    R = args.reps
    best = singles.max() / R
    line = (f"{args.alternative} n = m = {args.n}, R = {R}, "
            f"{args.per_kernel} bandwidths per kernel, kernel={args.kernel}: "
            f"aggregated {aggregated / R:.3f}, best single {best:.3f} "
            f"(gap {aggregated / R - best:+.3f})")
    if reference is not None:
        line += f", authors' MMDAgg {authors / R:.3f}"
    print(f"{line}; {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
