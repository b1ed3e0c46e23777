"""
=============================================================
Gradient flows of the MMD and the sliced-Wasserstein distance
=============================================================

The distances of kernelmaps are differentiable when their input is a PyTorch
tensor that requires a gradient, so they can serve as training losses. This
example learns in the simplest setting: the parameters are the points
themselves. A cloud of particles :math:`x_1, \\dots, x_n` starts as a
Gaussian blob, and gradient descent moves it towards a target sample
:math:`y_1, \\dots, y_m` (a ring) by lowering a distance between the two
point sets, either

* the squared maximum mean discrepancy (MMD) with a Gaussian kernel
  (:func:`kernelmaps.mmd` with ``squared=True``), or
* the squared sliced-Wasserstein distance :math:`SW_2^2`
  (:func:`kernelmaps.sliced_wasserstein`).

With a step proportional to the number of particles (see below), these
descents are explicit Euler steps of the particle versions of the MMD
gradient flow [1]_ and of the sliced-Wasserstein flow ([2]_, without its
noise; the descent of :math:`SW_2^2` on particles is that of [3]_). The two
losses pull the particles in different ways, and the pictures show it.

.. [1] M. Arbel, A. Korba, A. Salim and A. Gretton, "Maximum Mean
   Discrepancy Gradient Flow", NeurIPS 2019.
.. [2] A. Liutkus, U. Simsekli, S. Majewski, A. Durmus and F.-R. Stoter,
   "Sliced-Wasserstein Flows: Nonparametric Generative Modeling via
   Optimal Transport and Diffusions", ICML 2019.
.. [3] N. Bonneel, J. Rabin, G. Peyre and H. Pfister, "Sliced and Radon
   Wasserstein Barycenters of Measures", Journal of Mathematical Imaging
   and Vision 51(1), 2015.
"""

# %%
# The target and the starting particles
# -------------------------------------
# The target is a ring of radius 2 (300 points, radial noise 0.1); the 300
# particles start as a Gaussian blob of standard deviation 0.5 centred at
# :math:`(-3, 0)`, outside the ring. The particles are a float64 tensor with
# ``requires_grad=True``: kernelmaps then computes the distances with
# PyTorch's own operations, which autograd records. The target is a tensor
# too (without a gradient), as both sets must come from the same library.
# (PyTorch input needs the ``[array]`` extra: ``pip install
# "kernelmaps[array]"``.)
#
# The Gaussian kernel :math:`k(x, y) = \exp(-\gamma \|x - y\|^2)` of the MMD
# takes its bandwidth from the median heuristic on the target:
# :math:`1/\gamma` is the median squared distance between its points, about
# 8, so that the kernel falls to :math:`1/e` at a distance of 2.8, between
# the radius and the diameter of the ring.

import time

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.ticker import NullFormatter

import kernelmaps

rng = np.random.default_rng(0)
n = 300
angle = rng.uniform(0, 2 * np.pi, n)
radius = 2 + 0.1 * rng.standard_normal(n)
target = np.column_stack([radius * np.cos(angle), radius * np.sin(angle)])
start = 0.5 * rng.standard_normal((n, 2)) + [-3.0, 0.0]

gamma = kernelmaps.median_heuristic(target)
print(f"gamma = {gamma:.3f}")
target_tensor = torch.asarray(target)

# %%
# The two losses
# --------------
# Both functions take sequences of sets and return the matrix of distances
# between them: here one set against one, a ``(1, 1)`` tensor. The
# sliced-Wasserstein distance averages the 1-D Wasserstein distances of the
# projections of the sets on random directions; each step draws 50 fresh
# ones (``rng=step``), so that the descent is a stochastic gradient descent
# of :math:`SW_2^2` that sees every direction in turn. Fixed directions
# would only ask the 50 projections to match.


def mmd_loss(particles, step):
    return kernelmaps.mmd([particles], [target_tensor], gamma=gamma, squared=True)[0, 0]


def sliced_loss(particles, step):
    distance = kernelmaps.sliced_wasserstein(
        [particles], [target_tensor], n_projections=50, rng=step
    )
    return distance[0, 0] ** 2


# %%
# Gradient descent on the particles
# ---------------------------------
# Both losses are averages over the particles, so the gradient with respect
# to one particle carries a factor :math:`1/n`. Plain gradient descent
# (``torch.optim.SGD``) with the learning rate :math:`\tau n` moves
# every particle by :math:`\tau` times its velocity in the flow, whatever
# :math:`n`: for :math:`SW_2^2` in two dimensions that velocity is, on
# average over the directions, the displacement to the particle's match in
# the target, so :math:`\tau = 0.1` covers a tenth of it per step; the
# MMD's velocity, twice the gradient of the witness function
# :math:`\frac{1}{m}\sum_j k(x, y_j) - \frac{1}{n}\sum_{i'} k(x, x_{i'})`,
# is smaller here, and takes :math:`\tau = 1`.
#
# Every few steps the particles are measured with both distances, the same
# yardsticks for both flows: the squared MMD at the same :math:`\gamma`, and
# :math:`SW_2^2` along 200 fixed directions (``rng=1``). These measures take
# NumPy arrays, which kernelmaps computes with its compiled engine as
# always (tensors on the CPU that need no gradient go there too, without a
# copy); tensors on a GPU are computed on the GPU.

n_steps = 150
shown = [0, 10, 40, n_steps]
every = 5


def measure(points):
    """The squared MMD and SW_2^2 between `points` and the target."""
    mmd2 = kernelmaps.mmd([points], [target], gamma=gamma, squared=True)
    sw = kernelmaps.sliced_wasserstein([points], [target], n_projections=200, rng=1)
    return mmd2[0, 0], sw[0, 0] ** 2


def flow(loss_fn, tau):
    """Descend `loss_fn` from `start` with steps `tau`: the particles at the
    steps `shown`, and their measures every `every` steps."""
    particles = torch.tensor(start, requires_grad=True)
    optimizer = torch.optim.SGD([particles], lr=tau * n)
    snapshots, measures = {}, []
    for step in range(n_steps + 1):
        points = particles.detach().numpy().copy()
        if step in shown:
            snapshots[step] = points
        if step % every == 0:
            measures.append(measure(points))
        if step == n_steps:
            break
        optimizer.zero_grad()
        loss_fn(particles, step).backward()
        optimizer.step()
    return snapshots, np.array(measures)


flows = {}
for name, loss_fn, tau in [
    ("squared MMD", mmd_loss, 1.0),
    ("squared sliced Wasserstein", sliced_loss, 0.1),
]:
    tic = time.perf_counter()
    flows[name] = flow(loss_fn, tau)
    print(f"{name}: {n_steps} steps in {time.perf_counter() - tic:.1f} s")

# %%
# The particles along the two flows
# ---------------------------------
# The sliced-Wasserstein flow carries the blob onto the ring as a whole:
# every particle is pulled towards its match in the target along each
# direction, with a force that does not fade with the distance. A few
# particles stay inside the ring, near its centre: their projection is near
# the middle of the target's projection on every direction, where the ring
# has points too, so each 1-D match holds them in place and they move only
# slowly (run ten times longer, the flow takes them out and lays the
# particles onto the target points, up to rounding).
#
# The MMD flow reaches the ring too, but leaves particles behind. Its
# velocity attracts each particle to the target and repels it from the
# other particles, both through the Gaussian kernel, whose pull fades over a
# few kernel widths. At the start the blob is denser than the ring: the
# repulsion spreads it, and the particles thrown outwards, to the left and
# away from the ring, feel only a weak attraction back. Most return, slowly;
# the farthest do not: run ten times longer, this flow stalls with four
# particles far from the ring, one 11 units from its centre. The MMD is not
# convex along such displacements of the particles, and its flow can get
# stuck [1]_; the remedies include noise injection [1]_ and a wider kernel,
# which reaches farther but tells shapes apart less sharply.

fig, axes = plt.subplots(
    2, len(shown), figsize=(10, 5.6), sharex=True, sharey=True, layout="constrained"
)
for i, (name, (snapshots, _)) in enumerate(flows.items()):
    row = axes[i]
    for ax, step in zip(row, shown, strict=True):
        ax.scatter(*target.T, s=4, color="0.75")
        ax.scatter(*snapshots[step].T, s=4, color=f"C{i}")
        ax.set_title(f"step {step}")
        ax.set_aspect("equal")
    row[0].set_ylabel(name.replace("squared ", ""))
axes[0, 0].set_xlim(-7, 3.5)
axes[0, 0].set_ylim(-5.25, 5.25)
fig.suptitle("Particles (colour) descending each loss towards a ring (grey)")
plt.show()

# %%
# The two distances along the two flows
# -------------------------------------
# Each flow lowers its own loss, at different rates: the sliced-Wasserstein
# flow geometrically at first (every step covers a fixed fraction of the
# remaining transport), until the particles inside the ring hold it back;
# the MMD flow ever more slowly, as the witness function flattens when the
# particles approach the target. The cross-measures tell more. After some
# 20 steps the sliced-Wasserstein flow has a smaller MMD than the MMD flow,
# which descends the MMD itself. And the particles of the MMD flow stay at a
# large sliced-Wasserstein distance from the ring: a transport distance
# counts the stragglers by how far they are, whereas the MMD hardly sees
# them. A fraction :math:`s` of the particles far from all the others adds about
# :math:`s^2 \bar k + s / n` to the squared MMD, whatever their distance,
# with :math:`\bar k \approx 0.47` the mean kernel value within the ring;
# the 5% of stragglers at step 150 account for most of its value, about
# :math:`10^{-3}`.

fig, axes = plt.subplots(1, 2, figsize=(10, 4.4), layout="constrained")
steps = np.arange(0, n_steps + 1, every)
for ax, column, title in [
    (axes[0], 0, rf"squared MMD ($\gamma = {gamma:.2f}$)"),
    (axes[1], 1, r"$SW_2^2$ (200 fixed directions)"),
]:
    for i, (name, (_, measures)) in enumerate(flows.items()):
        ax.plot(steps, measures[:, column], color=f"C{i}", label=f"{name} flow")
    ax.set_yscale("log")
    low, high = ax.get_ylim()
    decades = 10.0 ** np.arange(np.ceil(np.log10(low)), np.floor(np.log10(high)) + 1)
    ax.set_yticks(decades, [f"$10^{{{int(np.log10(d))}}}$" for d in decades])
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("step")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
axes[0].legend()
fig.suptitle("Both distances to the ring along both flows")
plt.show()
