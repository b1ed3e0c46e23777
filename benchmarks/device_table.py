"""The GPU table of issue 52: kernelmaps on PyTorch tensors of a device
against the PyTorch a user writes instead, on the same tensors.

    python -P benchmarks/device_table.py            # on CUDA (the GPU machine)
    python -P benchmarks/device_table.py --small    # a smoke run on the CPU

Each row times ours and the hand-written code interleaved (the median of
`--repeat` runs after two warm-ups, the device synchronised around each)
and prints their ratio, with the machine and the device above the table:

* the mean map Gram of 400 sets of 200 points, d = 512 (rbf, gamma = 1 /
  d, float64), without and with a gradient (the backward pass of its sum),
  against ``exp(-gamma cdist^2)`` of the pooled points and the means of its
  blocks;
* the squared MMD loss of 2,000 against 2,000 points, d = 64, and the
  squared SW_2 loss on 100 directions, with their backward passes;
* ``mmd_test`` (permutation, 1,000 resamples) at n = m = 5,000, d = 512,
  against a hand-written permutation test (the whole kernel matrix, the
  permutations drawn on the device), and at n = m = 100,000, d = 64 alone
  (its matrix of 8 N^2 = 320 GB does not fit the device: ours runs on
  blocks), with the device memory it peaked at.

Targets: the Grams within 1.5x of the hand-written PyTorch; the test at
n = m = 100,000 in seconds.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import kernelmaps as km

sys.path.insert(0, str(Path(__file__).parent))
from benchmarks.common import machine


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", action="store_true",
                        help="small sizes on the CPU (a smoke run)")
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    import torch

    device = "cpu" if options.small or not torch.cuda.is_available() else "cuda"
    small = options.small or device == "cpu"
    rows = Table(torch, device, options.repeat)
    print(machine())
    print(f"device: {torch.cuda.get_device_name() if device == 'cuda' else 'cpu'}"
          f", PyTorch {torch.__version__}, kernelmaps {km.__version__}")
    gram(rows, *((20, 30, 16) if small else (400, 200, 512)))
    losses(rows, 300 if small else 2000)
    tests(rows, small)
    rows.show()


class Table:
    """The rows timed on `device`: (case, ours, hand) in seconds."""

    def __init__(self, torch, device, repeat):
        self.torch, self.device, self.repeat = torch, device, repeat
        self.rows = []

    def tensor(self, a, grad=False):
        return self.torch.asarray(a, device=self.device).requires_grad_(grad)

    def seconds(self, function):
        if self.device == "cuda":
            self.torch.cuda.synchronize()
        start = time.perf_counter()
        function()
        if self.device == "cuda":
            self.torch.cuda.synchronize()
        return time.perf_counter() - start

    def add(self, case, ours, hand=None, repeat=None):
        """Time `ours` and `hand` (None: ours alone) interleaved."""
        repeat = repeat or self.repeat
        for _ in range(2 if repeat > 1 else 0):
            ours()
            if hand is not None:
                hand()
        times = [], []
        for _ in range(repeat):
            times[0].append(self.seconds(ours))
            if hand is not None:
                times[1].append(self.seconds(hand))
        a = float(np.median(times[0]))
        b = float(np.median(times[1])) if hand is not None else None
        self.rows.append((case, a, b))
        print(f"  {case}: {a:.4g} s" + ("" if b is None else f" / {b:.4g} s"),
              flush=True)

    def show(self):
        print("\n| case | kernelmaps (s) | hand-written PyTorch (s) | ratio |")
        print("|---|---|---|---|")
        for case, a, b in self.rows:
            ratio = "" if b is None else f"{a / b:.2f}"
            hand = "" if b is None else f"{b:.4g}"
            print(f"| {case} | {a:.4g} | {hand} | {ratio} |")


def hand_gram(torch, sets, gamma):
    """The mean map Gram matrix a user writes in PyTorch."""
    n, m, d = sets.shape
    points = sets.reshape(-1, d)
    K = torch.exp(-gamma * torch.cdist(points, points) ** 2)
    return K.reshape(n, m, n, m).mean(dim=(1, 3))


def gram(rows, n, m, d):
    torch = rows.torch
    sets = np.random.default_rng(0).standard_normal((n, m, d))
    gamma = 1.0 / d
    plain = rows.tensor(sets)
    rows.add(f"Gram of {n} sets x {m} points, d = {d}",
             lambda: km.sum_match_kernel(plain, gamma=gamma),
             lambda: hand_gram(torch, plain, gamma))

    def ours():
        S = rows.tensor(sets, grad=True)
        km.sum_match_kernel(S, gamma=gamma).sum().backward()

    def hand():
        S = rows.tensor(sets, grad=True)
        hand_gram(torch, S, gamma).sum().backward()

    rows.add("  the same, with backward", ours, hand)


def losses(rows, n):
    torch = rows.torch
    rng = np.random.default_rng(1)
    X, Y = rng.standard_normal((1, n, 64)), rng.standard_normal((1, n, 64)) + 0.1
    gamma, Yt = 1.0 / 64, rows.tensor(Y)

    def mmd_ours():
        A = rows.tensor(X, grad=True)
        km.mmd(A, Yt, gamma=gamma, squared=True).sum().backward()

    def mmd_hand():
        A = rows.tensor(X, grad=True)

        def mean(a, b):
            return torch.exp(-gamma * torch.cdist(a, b) ** 2).mean()

        (mean(A[0], A[0]) + mean(Yt[0], Yt[0]) - 2 * mean(A[0], Yt[0])).backward()

    rows.add(f"MMD^2 loss, {n} vs {n} points, d = 64, with backward",
             mmd_ours, mmd_hand)
    directions = rng.standard_normal((100, 64))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    W = rows.tensor(directions.T)

    def sw_ours():
        A = rows.tensor(X, grad=True)
        D = km.sliced_wasserstein(A, Yt, projections=directions)
        (D**2).sum().backward()

    def sw_hand():
        A = rows.tensor(X, grad=True)
        a = torch.sort(A[0] @ W, dim=0).values
        b = torch.sort(Yt[0] @ W, dim=0).values
        ((a - b) ** 2).mean().backward()

    rows.add(f"SW_2^2 loss, {n} vs {n} points, d = 64, L = 100, with backward",
             sw_ours, sw_hand)


def hand_permutation_test(torch, X, Y, gamma, B, generator):
    """The permutation test a user writes: the whole kernel matrix, the
    biased MMD^2 of each permutation from indicator vectors."""
    Z = torch.cat([X, Y])
    N, n = Z.shape[0], X.shape[0]
    K = torch.exp(-gamma * torch.cdist(Z, Z) ** 2)
    order = torch.argsort(torch.rand(B, N, generator=generator,
                                     device=Z.device), dim=1)
    S = torch.zeros(B + 1, N, dtype=Z.dtype, device=Z.device)
    S[0, :n] = 1
    S[1:].scatter_(1, order[:, :n], 1.0)
    T = S / n - (1 - S) / (N - n)
    statistics = ((T @ K) * T).sum(dim=1)
    return float(((statistics[1:] >= statistics[0]).sum() + 1) / (B + 1))


def tests(rows, small):
    torch = rows.torch
    rng = np.random.default_rng(3)
    n, d = (500, 32) if small else (5000, 512)
    X = rows.tensor(rng.standard_normal((n, d)), grad=True)
    Y = rows.tensor(rng.standard_normal((n, d)) + 0.02)
    gamma = 1.0 / d
    generator = torch.Generator(device=rows.device).manual_seed(0)
    rows.add(f"mmd_test permutation, n = m = {n}, d = {d}, 1,000 resamples",
             lambda: km.mmd_test(X, Y, gamma=gamma, n_resamples=1000, rng=0),
             lambda: hand_permutation_test(torch, X.detach(), Y, gamma, 1000,
                                           generator), repeat=3)
    n = 2000 if small else 100_000
    X = rows.tensor(rng.standard_normal((n, 64)), grad=True)
    Y = rows.tensor(rng.standard_normal((n, 64)) + 0.01)
    if rows.device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    rows.add(f"mmd_test permutation, n = m = {n}, d = 64, 1,000 resamples",
             lambda: km.mmd_test(X, Y, n_resamples=1000, rng=0), repeat=1)
    if rows.device == "cuda":
        peak = torch.cuda.max_memory_allocated() / 2**30
        total = torch.cuda.mem_get_info()[1]
        print(f"  peak device memory {peak:.1f} GiB of {total / 2**30:.0f} GiB "
              f"(the kernel matrix would take {8 * (2 * n) ** 2 / 2**30:.0f} GiB)")


if __name__ == "__main__":
    main()
