"""The arguments that users of SciPy, scikit-learn and POT write, answered:
a public function given ``random_state=``, ``n_jobs=`` or point weights as
an argument (``weights=``, POT's ``a``, ``b``) raises a TypeError that says
what to write instead, where Python's own says only "unexpected keyword
argument".

`takes_hints` decorates the public functions; the feature maps' classes
answer ``random_state=`` themselves (`_base.FeatureMap`).
"""

import functools
import inspect

__all__ = ["rng_message", "takes_hints"]

# Names of a seed in other libraries (scikit-learn, POT, PyTorch, JAX).
SEED_NAMES = frozenset({"random_state", "seed", "random_seed", "key"})
# Names of the threads (scikit-learn, joblib, PyTorch, ...).
THREAD_NAMES = frozenset({"n_jobs", "num_threads", "n_threads", "threads"})
# Names of point weights (POT's a and b, SciPy's u_weights and v_weights,
# scikit-learn's sample_weight).
WEIGHT_NAMES = frozenset({"weights", "a", "b", "sample_weight",
                          "x_weights", "y_weights", "X_weights", "Y_weights",
                          "weights_X", "weights_Y", "u_weights", "v_weights",
                          "point_weights"})


def rng_message(owner, value):
    """What `owner` (a function's or class's name) says to a user who gave
    the seed `value` under another name."""
    return (f"{owner} takes the seed as rng (an int or a numpy.random.Generator, "
            f"as in SciPy and NumPy): write rng={value!r}")


def takes_hints(weighted=None):
    """Decorate a public function: unknown keyword arguments that name a
    seed, the threads or point weights, and positional arguments beyond
    its own where it takes weighted sets, raise a TypeError that says what
    to write. `weighted`: how the function takes weighted sets, for the
    example the message gives: "pair" (X and Y, a matrix), "sets" (X),
    "samples" (two samples of sets), None (it does not). Calls with the
    function's own arguments pay one test."""

    def decorate(func):
        signature = inspect.signature(func)
        names = frozenset(signature.parameters)
        n_positional = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                           for p in signature.parameters.values())
        owner = func.__name__

        @functools.wraps(func)
        def hinted(*args, **kwargs):
            if (kwargs and not names.issuperset(kwargs)) or (
                    weighted and len(args) > n_positional):
                _raise_hint(owner, names, n_positional, weighted, args, kwargs)
            return func(*args, **kwargs)

        return hinted

    return decorate


def _raise_hint(owner, names, n_positional, weighted, args, kwargs):
    """The TypeError of a call to `owner` with arguments it does not take
    (or nothing, for Python's own error, where no hint applies)."""
    for key in kwargs:
        if key in names:
            continue
        if key in SEED_NAMES and "rng" in names:
            raise TypeError(rng_message(f"{owner}()", kwargs[key]))
        if key in THREAD_NAMES and "workers" in names:
            raise TypeError(
                f"{owner}() takes the threads as workers (as in SciPy; None or "
                f"-1: all cores, -2 all but one): write workers={kwargs[key]!r}")
        if key in WEIGHT_NAMES:
            raise TypeError(_weights_message(owner, f"a {key}= argument",
                                             weighted))
    extra = args[n_positional:]
    if weighted and extra and all(hasattr(a, "__len__") and not isinstance(
            a, (str, bytes)) for a in extra):  # (arrays: weights, as POT's)
        raise TypeError(_weights_message(
            owner, f"{len(extra)} more positional argument(s) than it takes "
            f"(point weights, as POT's a and b?)", weighted))


# How each kind of function takes weighted sets: a call that shows it.
_EXAMPLES = {
    "pair": ("; for two point clouds xs and xt with weights a and b (as in "
             "POT's ot.sliced_wasserstein_distance(xs, xt, a, b)): "
             "{owner}(Bags.from_list([xs], weights=[a]), "
             "Bags.from_list([xt], weights=[b]))[0, 0]"),
    "sets": ": {owner}(Bags.from_list(sets, weights=[w_0, w_1, ...]))",
    "samples": (": {owner}(Bags.from_list(sets_X, weights=weights_X), "
                "Bags.from_list(sets_Y, weights=weights_Y)) for two samples of "
                "weighted sets (the points of a sample of points carry no "
                "weights)"),
}


def _weights_message(owner, given, weighted):
    if weighted is None:
        return f"{owner}() got {given}, but it does not take point weights"
    return (
        f"{owner}() got {given}: point weights ride on the sets, as their "
        f"points do. Pack the sets with their weights, "
        f"kernelmaps.Bags.from_list(sets, weights=[w_0, w_1, ...]) (one 1-D "
        f"array of weights per set)" + _EXAMPLES[weighted].format(owner=owner))
