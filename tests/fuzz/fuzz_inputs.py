"""Generated inputs of the fuzz suite: small valid baselines and the
mutations of every kind of argument.

A value travels as an `S`: the value passed to kernelmaps, the Python
source that rebuilds it (for the one-line reproducers; None when it has
none, e.g. a memory-mapped file) and the plain form the references use
(e.g. a list for a one-shot generator of sets).

Every mutation has an expectation: "valid" (the call must succeed and be
right), "invalid" (it must raise a ValueError or TypeError naming the
argument) or "either" (both are acceptable; a returned value is still
checked). This module imports NumPy and SciPy only, so the parent process
can enumerate cases without importing kernelmaps.
"""

import math
import os
import re
from fractions import Fraction

import numpy as np
import scipy.sparse

VALID, INVALID, EITHER = "valid", "invalid", "either"


class _Omit:
    def __repr__(self):
        return "<omitted>"


OMIT = _Omit()  # an argument left out (its default applies)


class S:
    """A value, its source and its plain form for the references."""

    __slots__ = ("plain", "src", "value")

    def __init__(self, value, src, plain=None):
        self.value = value
        self.src = src
        self.plain = value if plain is None else plain

    def __repr__(self):
        return f"S({self.src})"


class Ctx:
    """What a builder sees: the case's random generator, its variant (which
    baseline options), a scratch directory for memory-mapped files, and
    kernelmaps (None in the parent)."""

    def __init__(self, rng, variant, tmpdir=None, km=None, sk=None):
        self.rng, self.variant, self.tmpdir = rng, variant, tmpdir
        self.km, self.sk = km, sk
        self._files = 0

    def pick(self, options, salt=0):
        return options[(self.variant + salt) % len(options)]

    def tmpfile(self):
        self._files += 1
        return os.path.join(self.tmpdir, f"mm{os.getpid()}_{self._files}.dat")


# ------------------------------------------------------------ literals


_SPECIAL = re.compile(r"(?<![\w.'\"])(-?)(nan|inf)(?![\w'\"])")


def _fix(text):
    return _SPECIAL.sub(lambda m: f"{m.group(1)}np.{m.group(2)}", text)


def lit(a):
    """Source of a NumPy array (any dtype) as a literal."""
    a = np.asarray(a)
    if a.dtype.kind in "Mm":
        return f"np.array({a.astype('i8').tolist()!r}, dtype={a.dtype.str!r})"
    if a.dtype == object:
        return f"np.array({_fix(repr(a.tolist()))}, dtype=object)"
    body = _fix(repr(a.tolist()))
    if a.dtype == np.float64 and a.size:
        return f"np.array({body})"
    return f"np.array({body}, dtype={a.dtype.str!r})"


def arr(a):
    a = np.asarray(a)
    return S(a, lit(a))


def pysrc(v):
    """Source of a plain Python/NumPy scalar or container value."""
    if isinstance(v, float):
        return _fix(repr(v))
    if isinstance(v, np.ndarray):
        return lit(v)
    if isinstance(v, np.generic):
        return f"np.{type(v).__name__}({_fix(repr(v.item()))})"
    return _fix(repr(v))


def grid(rng, shape, lo=-96, hi=96):
    """Random multiples of 1/64 in [lo/64, hi/64]: exact in float16..64 and
    short to print."""
    return rng.integers(lo, hi + 1, size=shape) / 64.0


# ----------------------------------------------------------- baselines


def g_sets(ctx, n_sets=3, lo=2, hi=4, d=None):
    d = ctx.pick([2, 3, 1], 1) if d is None else d
    sets = [
        grid(ctx.rng, (int(ctx.rng.integers(lo, hi + 1)), d)) for _ in range(n_sets)
    ]
    return S(sets, "[" + ", ".join(lit(s) for s in sets) + "]")


def g_hist(ctx, n=4, d=5):
    X = grid(ctx.rng, (n, d), 0, 64)
    X[ctx.rng.random((n, d)) < 0.3] = 0.0
    X[:, 0] = np.maximum(X[:, 0], 1 / 64)  # no all-zero row in the baseline
    return arr(X)


def g_points(ctx, n=6, d=2):
    return arr(grid(ctx.rng, (n, d)))


def g_kmat(ctx, n=4):
    A = grid(ctx.rng, (n, n), -64, 64)
    return arr((A + A.T) / 2)


# ------------------------------------------------------------ mutations


class Mut:
    """One mutation of one argument: `fn(S, ctx) -> S`."""

    __slots__ = ("expect", "fn", "label")

    def __init__(self, label, fn, expect):
        self.label, self.fn, self.expect = label, fn, expect


def const(value, src=None, plain=None):
    src = pysrc(value) if src is None else src
    return lambda v, ctx: S(value, src, plain)


def _plain_array(v):
    return np.array(v.plain, dtype=np.float64)


def _edit(edit, src_edit=None):
    """A mutation computing a new float64 array from the baseline array."""

    def fn(v, ctx):
        a = edit(_plain_array(v))
        return arr(a)

    return fn


def _set_flat(value, pick="first"):
    def edit(a):
        a = a.copy()
        flat = a.reshape(-1)
        if flat.size:
            idx = np.flatnonzero(flat > 0)
            i = idx[0] if (pick == "positive" and idx.size) else min(1, flat.size - 1)
            flat[i] = value
        return a

    return edit


def _scaled(s):
    def edit(a):
        m = np.abs(a).max() if a.size else 0
        if not m:
            return a
        if s < 1e-307:  # subnormal: multiples of the smallest one
            return np.round(a / m * 64) * s
        with np.errstate(over="ignore"):
            return a / m * s

    return edit


def _wrap(fmt, fn_value, plain=None):
    """A mutation applying `fn_value` to the value, with source `fmt`."""

    def fn(v, ctx):
        src = None if v.src is None else fmt.format(v.src)
        value = fn_value(v.value)
        return S(value, src, v.plain if plain is None else plain(v))

    return fn


def _dtype(dt, how="float"):
    def fn(v, ctx):
        a = _plain_array(v)
        if how == "int":
            base = np.round(a * 8)
            if np.dtype(dt).kind == "u":
                base = np.abs(base)
            return arr(base.astype(dt))
        if how == "bool":
            return arr(a != 0)
        if how == "obj":
            return arr(a.astype(object))
        if how == "objnone":
            o = a.astype(object)
            if o.size:
                o.reshape(-1)[0] = None
            return S(o, lit(o))
        if how == "str":
            return S(a.astype(str), f"{lit(a)}.astype(str)")
        if how == "bytes":
            return S(a.astype("S"), f"{lit(a)}.astype('S')")
        if how == "time":
            t = np.round(a * 8).astype("i8").astype(dt)
            return arr(t)
        return arr(a.astype(dt))

    return fn


def _memmap(v, ctx):
    a = np.ascontiguousarray(_plain_array(v))
    path = ctx.tmpfile()
    m = np.memmap(path, dtype=a.dtype, mode="w+", shape=a.shape if a.size else (1,))
    if a.size:
        m[...] = a
        m.flush()
    else:
        m = np.zeros(a.shape)
    return S(m, None, a)


def _unaligned(v, ctx):
    a = np.ascontiguousarray(_plain_array(v))
    buf = bytearray(b"\0") + bytearray(a.tobytes())
    u = np.frombuffer(buf, dtype=np.float64, offset=1).reshape(a.shape)
    src = (
        f"np.frombuffer(bytearray(b'\\0') + bytearray({lit(a)}.tobytes()), "
        f"offset=1).reshape({a.shape})"
    )
    return S(u, src, a)


def _strided(v, ctx):
    a = _plain_array(v)
    if a.ndim == 2:
        big = np.repeat(np.repeat(a, 2, axis=0), 3, axis=1)
        return S(
            big[::2, ::3],
            f"np.repeat(np.repeat({lit(a)}, 2, axis=0), 3, axis=1)[::2, ::3]",
            a,
        )
    big = np.repeat(a, 2, axis=0)
    return S(big[::2], f"np.repeat({lit(a)}, 2, axis=0)[::2]", a)


def _reversed(v, ctx):
    a = _plain_array(v)
    r = np.ascontiguousarray(a[::-1])[::-1]
    return S(r, f"np.ascontiguousarray({lit(a)}[::-1])[::-1]", a)


def _readonly(v, ctx):
    a = _plain_array(v)
    b = a.copy()
    b.flags.writeable = False
    return S(b, f"(lambda a: (a.setflags(write=False), a)[1])({lit(a)})", a)


def _broadcast(v, ctx):
    a = _plain_array(v)
    if a.ndim < 2 or not a.size:
        return S(a, lit(a))
    b = np.broadcast_to(a[0], a.shape)
    return S(b, f"np.broadcast_to({lit(a[0])}, {a.shape})", b.copy())


def _tolist(kind):
    def fn(v, ctx):
        a = _plain_array(v)
        if kind == "list":
            return S(a.tolist(), _fix(repr(a.tolist())), a)
        if kind == "tuple":
            t = (
                tuple(tuple(r) for r in a.tolist())
                if a.ndim == 2
                else tuple(a.tolist())
            )
            return S(t, _fix(repr(t)), a)
        rows = list(a)
        return S(rows, "[" + ", ".join(lit(r) for r in rows) + "]", a)

    return fn


# sparse --------------------------------------------------------------

SPARSE_FORMATS = ["csr", "csc", "coo", "lil", "dok", "bsr", "dia"]


def _csr_parts(a):
    c = scipy.sparse.csr_matrix(a)
    return c.data, c.indices, c.indptr


def _csr_src(data, indices, indptr, shape, cls="csr_matrix"):
    return (
        f"scipy.sparse.{cls}(({lit(data)}, {lit(indices)}, {lit(indptr)}), "
        f"shape={tuple(int(s) for s in shape)})"
    )


def _sparse_fmt(fmt, array=False):
    cls = f"{fmt}_{'array' if array else 'matrix'}"

    def fn(v, ctx):
        a = _plain_array(v)
        if a.ndim != 2:
            return S(a, lit(a))
        m = getattr(scipy.sparse, cls)(a)
        return S(m, f"scipy.sparse.{cls}({lit(a)})", m)

    return fn


def _sparse_odd(kind):
    def fn(v, ctx):
        a = _plain_array(v)
        if a.ndim != 2:
            return S(a, lit(a))
        n, d = a.shape
        if kind == "explicit-zeros":
            indptr = np.arange(n + 1) * d
            indices = np.tile(np.arange(d), n)
            data = a.reshape(-1).copy()
        else:
            data, indices, indptr = _csr_parts(a)
        if kind == "duplicates":
            reps = np.repeat(np.diff(indptr), 1)
            data = np.repeat(data / 2, 2)
            indices = np.repeat(indices, 2)
            indptr = np.concatenate([[0], np.cumsum(2 * reps)])
        if kind == "unsorted":
            data, indices = data.copy(), indices.copy()
            for r in range(n):
                sl = slice(indptr[r], indptr[r + 1])
                data[sl], indices[sl] = data[sl][::-1], indices[sl][::-1]
        if kind == "int64-indices":
            indices, indptr = indices.astype(np.int64), indptr.astype(np.int64)
        if kind == "noncontig-data":
            big = np.repeat(data, 2)
            m = scipy.sparse.csr_matrix((big[::2], indices, indptr), shape=(n, d))
            src = (
                f"scipy.sparse.csr_matrix((np.repeat({lit(data)}, 2)[::2], "
                f"{lit(indices)}, {lit(indptr)}), shape=({n}, {d}))"
            )
            return S(m, src, m.copy())
        if kind == "coo-duplicates":
            r, c = np.nonzero(a)
            vals = a[r, c]
            row, col = np.repeat(r, 2), np.repeat(c, 2)
            m = scipy.sparse.coo_matrix(
                (np.repeat(vals / 2, 2), (row, col)), shape=(n, d)
            )
            src = (
                f"scipy.sparse.coo_matrix(({lit(np.repeat(vals / 2, 2))}, "
                f"({lit(row)}, {lit(col)})), shape=({n}, {d}))"
            )
            return S(m, src, m.copy())
        m = scipy.sparse.csr_matrix((data, indices, indptr), shape=(n, d))
        if kind == "unsorted":
            m.has_sorted_indices = False
        return S(m, _csr_src(data, indices, indptr, (n, d)), m.copy())

    return fn


def _sparse_edit(edit):
    def fn(v, ctx):
        a = edit(_plain_array(v))
        if a.ndim != 2:
            return S(a, lit(a))
        m = scipy.sparse.csr_matrix(a)
        return S(m, f"scipy.sparse.csr_matrix({lit(a)})", m)

    return fn


def _sparse_dtype(dt):
    def fn(v, ctx):
        a = _plain_array(v)
        if a.ndim != 2:
            return S(a, lit(a))
        a = np.round(a * 8).astype(dt) if np.dtype(dt).kind in "iu" else a.astype(dt)
        m = scipy.sparse.csr_matrix(a)
        return S(m, f"scipy.sparse.csr_matrix({lit(a)})", m)

    return fn


# array mutation tables -------------------------------------------------


SCALES = [
    ("scale-5e-324", 5e-324),
    ("scale-1e-300", 1e-300),
    ("scale-1e-150", 1e-150),
    ("scale-1e150", 1e150),
    ("scale-1e300", 1e300),
    ("scale-1e308", 1e308),
]

INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def dtype_mutations():
    out = [Mut(f"dtype-{dt}", _dtype(dt, "int"), VALID) for dt in INT_DTYPES]
    out += [
        # 0/1 values: may make the data degenerate (all points equal, ...)
        Mut("dtype-bool", _dtype(None, "bool"), EITHER),
        Mut("dtype-float16", _dtype(np.float16), VALID),
        Mut("dtype-float32", _dtype(np.float32), VALID),
        Mut("dtype-longdouble", _dtype(np.longdouble), VALID),
        Mut("dtype->f8", _dtype(">f8"), VALID),
        Mut("dtype->f4", _dtype(">f4"), VALID),
        Mut("dtype-complex128", _dtype(np.complex128), INVALID),
        Mut("dtype-complex64", _dtype(np.complex64), INVALID),
        Mut("dtype-object-floats", _dtype(None, "obj"), EITHER),
        Mut("dtype-object-None", _dtype(None, "objnone"), INVALID),
        Mut("dtype-str", _dtype(None, "str"), INVALID),
        Mut("dtype-bytes", _dtype(None, "bytes"), INVALID),
        Mut("dtype-datetime64", _dtype("M8[s]", "time"), INVALID),
        Mut("dtype-timedelta64", _dtype("m8[s]", "time"), INVALID),
    ]
    return out


def layout_mutations():
    return [
        Mut("fortran", _wrap("np.asfortranarray({})", np.asfortranarray), VALID),
        Mut("strided", _strided, VALID),
        Mut("negative-strides", _reversed, VALID),
        Mut("read-only", _readonly, VALID),
        Mut("memmap", _memmap, VALID),
        Mut("unaligned", _unaligned, VALID),
        # every row the same (a 0 stride cannot hold different rows)
        Mut("broadcast-0-stride", _broadcast, EITHER),
        Mut("list", _tolist("list"), VALID),
        Mut("tuple", _tolist("tuple"), VALID),
        Mut("list-of-rows", _tolist("rows"), VALID),
    ]


def sparse_mutations(expect, nonneg):
    out = []
    for fmt in SPARSE_FORMATS:
        out.append(Mut(f"sparse-{fmt}_matrix", _sparse_fmt(fmt), expect))
        out.append(Mut(f"sparse-{fmt}_array", _sparse_fmt(fmt, True), expect))
    for kind in [
        "explicit-zeros",
        "duplicates",
        "unsorted",
        "int64-indices",
        "noncontig-data",
        "coo-duplicates",
    ]:
        out.append(Mut(f"sparse-{kind}", _sparse_odd(kind), expect))
    out += [
        Mut("sparse-float32", _sparse_dtype(np.float32), expect),
        Mut("sparse-int64", _sparse_dtype(np.int64), expect),
        Mut("sparse-nan", _sparse_edit(_set_flat(np.nan, "positive")), INVALID),
        Mut("sparse-inf", _sparse_edit(_set_flat(np.inf, "positive")), INVALID),
        Mut("sparse-all-zero", _sparse_edit(lambda a: a * 0), EITHER),
        Mut("sparse-0-rows", _sparse_edit(lambda a: a[:0]), INVALID),
    ]
    if nonneg:
        out.append(
            Mut("sparse-negative", _sparse_edit(_set_flat(-0.5, "positive")), INVALID)
        )
    return out


def array2d_mutations(
    *, nonneg=False, sparse=None, one_row=EITHER, zeros=EITHER, scales=EITHER
):
    """Mutations of a 2-D numeric array argument. `sparse`: expectation of
    sparse input (None: not tried)."""
    out = [
        Mut("nan", _edit(_set_flat(np.nan)), INVALID),
        Mut("inf", _edit(_set_flat(np.inf)), INVALID),
        Mut("-inf", _edit(_set_flat(-np.inf)), INVALID),
        Mut("negative-zero", _edit(lambda a: np.where(a == 0, -0.0, a)), VALID),
        Mut("all-zero", _edit(lambda a: a * 0), zeros),
        Mut("constant", _edit(lambda a: np.ones_like(a) * 0.5), EITHER),
        Mut("empty-rows", _edit(lambda a: a[:0]), INVALID),
        Mut("empty-cols", _edit(lambda a: a[:, :0]), INVALID),
        Mut("one-row", _edit(lambda a: a[:1]), one_row),
        Mut("ndim-1", _edit(lambda a: a[0]), INVALID),
        Mut("ndim-3", _edit(lambda a: a[None]), INVALID),
        Mut("ndim-0", const(np.float64(0.5)), INVALID),
        Mut("python-float", const(0.5), INVALID),
        Mut("None", const(None), INVALID),
        Mut("string", const("X"), INVALID),
        Mut(
            "ragged-list",
            lambda v, ctx: S([[0.5, 0.25], [0.5]], "[[0.5, 0.25], [0.5]]"),
            INVALID,
        ),
    ]
    if nonneg:
        out.append(Mut("negative", _edit(_set_flat(-0.5, "positive")), INVALID))
        out.append(Mut("tiny-negative", _edit(_set_flat(-5e-324, "positive")), INVALID))
    out += [Mut(label, _edit(_scaled(s)), scales) for label, s in SCALES]
    out += dtype_mutations() + layout_mutations()
    if sparse is not None:
        out += sparse_mutations(sparse, nonneg)
    return out


def vector_mutations(*, nonneg=False):
    """Mutations of a 1-D numeric array argument."""
    out = [
        Mut("nan", _edit(_set_flat(np.nan)), INVALID),
        Mut("inf", _edit(_set_flat(np.inf)), INVALID),
        Mut("all-zero", _edit(lambda a: a * 0), EITHER),
        Mut("empty", _edit(lambda a: a[:0]), INVALID),
        Mut("one-longer", _edit(lambda a: np.append(a, 0.5)), INVALID),
        Mut("one-shorter", _edit(lambda a: a[:-1]), INVALID),
        Mut("ndim-2", _edit(lambda a: a[None]), INVALID),
        Mut("ndim-0", const(np.float64(0.5)), INVALID),
        Mut("None", const(None), EITHER),
        Mut("string", const("d"), INVALID),
        Mut("dtype-int64", _dtype("int64", "int"), VALID),
        Mut("dtype-float32", _dtype(np.float32), VALID),
        Mut("dtype-complex128", _dtype(np.complex128), INVALID),
        Mut("dtype-str", _dtype(None, "str"), INVALID),
        Mut("dtype-object-None", _dtype(None, "objnone"), INVALID),
        Mut("read-only", _readonly, VALID),
        Mut("strided", _strided, VALID),
        Mut("memmap", _memmap, VALID),
        Mut("list", _tolist("list"), VALID),
        Mut("sparse-csr_matrix", _sparse_fmt("csr"), EITHER),
    ]
    out += [Mut(label, _edit(_scaled(s)), EITHER) for label, s in SCALES]
    if nonneg:
        out.append(Mut("negative", _edit(_set_flat(-0.5, "positive")), INVALID))
    return out


# sets ------------------------------------------------------------------


def _per_set(mut):
    """Apply an array mutation to every set of a list of sets."""

    def fn(v, ctx):
        parts = [mut.fn(S(s, lit(s)), ctx) for s in v.plain]
        srcs = [p.src for p in parts]
        src = None if any(s is None for s in srcs) else "[" + ", ".join(srcs) + "]"
        return S([p.value for p in parts], src, [p.plain for p in parts])

    return fn


def _one_set(edit):
    """Edit the last set of the list (float64)."""

    def fn(v, ctx):
        sets = [np.array(s, dtype=np.float64) for s in v.plain]
        sets[-1] = edit(sets[-1])
        return S(sets, "[" + ", ".join(lit(s) for s in sets) + "]")

    return fn


def _sets_edit(edit):
    def fn(v, ctx):
        sets = edit([np.array(s, dtype=np.float64) for s in v.plain])
        return S(sets, "[" + ", ".join(lit(s) for s in sets) + "]")

    return fn


def _as_bags(v, ctx):
    sets = [np.array(s, dtype=np.float64) for s in v.plain]
    bags = ctx.km.Bags.from_list(sets)
    return S(bags, f"km.Bags.from_list({v.src})", sets)


def _as_weighted_bags(zero_set=False, integer=False):
    """The sets as a `Bags` with random non-negative point weights, about a
    third of them 0 (never all of a set's); with `zero_set`, the last set's
    weights all 0 (a set of total weight 0: refused); with `integer`, whole
    numbers 0 to 3."""

    def fn(v, ctx):
        sets = [np.array(s, dtype=np.float64) for s in v.plain]
        weights = []
        for s in sets:
            n = len(s)
            w = (ctx.rng.integers(0, 4, n).astype(np.float64) if integer
                 else np.round(ctx.rng.uniform(0.0, 4.0, n), 3))
            w[ctx.rng.random(n) < 0.3] = 0.0
            if n and not (w > 0).any():
                w[int(ctx.rng.integers(n))] = 1.5
            weights.append(w)
        if zero_set and weights:
            weights[-1] = np.zeros(len(sets[-1]))
        bags = ctx.km.Bags.from_list(sets, weights=weights)
        src = (f"km.Bags.from_list({v.src}, weights=["
               + ", ".join(lit(w) for w in weights) + "])")
        return S(bags, src, bags)  # (the references read the weights)

    return fn


def weighted_mutations(expect=VALID):
    """Weighted `Bags` of the sets (`_as_weighted_bags`): `expect` for the
    functions that take weights (VALID; EITHER where a path may refuse
    them), INVALID for those that refuse them; a set of total weight 0
    is always INVALID."""
    return [
        Mut("weighted-Bags", _as_weighted_bags(), expect),
        Mut("weighted-Bags-integer", _as_weighted_bags(integer=True), expect),
        Mut("weighted-Bags-zero-set", _as_weighted_bags(zero_set=True), INVALID),
    ]


def _as_3d(v, ctx):
    sets = [np.array(s, dtype=np.float64) for s in v.plain]
    n = min(len(s) for s in sets)
    a = np.stack([s[:n] for s in sets])
    return S(a, lit(a), list(a))


def _as_generator(v, ctx):
    sets = [np.array(s, dtype=np.float64) for s in v.plain]
    return S((s for s in sets), f"(s for s in {v.src})", sets)


def _as_object_array(v, ctx):
    sets = [np.array(s, dtype=np.float64) for s in v.plain]
    o = np.empty(len(sets), dtype=object)
    o[:] = sets
    src = (
        f"(lambda o: (o.__setitem__(slice(None), {v.src}), o)[1])"
        f"(np.empty({len(sets)}, dtype=object))"
    )
    return S(o, src, sets)


def _mixed32(v, ctx):
    sets = [
        np.array(s, dtype=np.float32 if i % 2 else np.float64)
        for i, s in enumerate(v.plain)
    ]
    return S(sets, "[" + ", ".join(lit(s) for s in sets) + "]")


def _far_apart(offset):
    def edit(sets):
        return [s + offset * i for i, s in enumerate(sets)]

    return edit


def _set_scaled(s):
    def edit(sets):
        m = max(np.abs(x).max() for x in sets) or 1.0
        if s < 1e-307:
            return [np.round(x / m * 64) * s for x in sets]
        return [x / m * s for x in sets]

    return edit


def set_mutations(*, min_points=1, one_point=EITHER, is_y=False, weighted=None):
    """Mutations of a collection-of-sets argument; with `weighted` (an
    expectation), the `weighted_mutations` too."""
    out = [
        Mut("nan", _one_set(_set_flat(np.nan)), INVALID),
        Mut("inf", _one_set(_set_flat(np.inf)), INVALID),
        Mut("-inf", _one_set(_set_flat(-np.inf)), INVALID),
        Mut("empty-set", _one_set(lambda a: a[:0]), INVALID),
        Mut("one-point-sets", _sets_edit(lambda ss: [s[:1] for s in ss]), one_point),
        Mut("one-set", _sets_edit(lambda ss: ss[:1]), EITHER),
        Mut(
            "duplicate-points",
            _sets_edit(lambda ss: [np.repeat(s[:1], len(s), 0) for s in ss]),
            EITHER,
        ),
        Mut("identical-sets", _sets_edit(lambda ss: [ss[0]] * len(ss)), EITHER),
        Mut("mismatched-d", _one_set(lambda a: np.hstack([a, a[:, :1]])), INVALID),
        Mut("zero-d", _sets_edit(lambda ss: [s[:, :0] for s in ss]), INVALID),
        Mut("set-ndim-1", _one_set(lambda a: a[0]), INVALID),
        Mut("set-ndim-3", _one_set(lambda a: a[None]), INVALID),
        Mut("empty-list", const([], "[]"), INVALID),
        Mut(
            "bare-2d-array",
            lambda v, ctx: arr(np.array(v.plain[0], dtype=float)),
            INVALID,
        ),
        Mut("3d-array", _as_3d, VALID),
        Mut("Bags", _as_bags, VALID),
        Mut(
            "tuple", lambda v, ctx: S(tuple(v.value), f"tuple({v.src})", v.plain), VALID
        ),
        Mut("generator", _as_generator, EITHER),
        Mut("object-array", _as_object_array, VALID),
        Mut(
            "nested-lists",
            lambda v, ctx: S(
                [np.asarray(s).tolist() for s in v.plain],
                _fix(repr([np.asarray(s).tolist() for s in v.plain])),
                v.plain,
            ),
            VALID,
        ),
        Mut("mixed-float32-float64", _mixed32, VALID),
        Mut("far-apart-1e3", _sets_edit(_far_apart(1e3)), VALID),
        Mut("far-apart-1e6", _sets_edit(_far_apart(1e6)), VALID),
        Mut("offset-1e8", _sets_edit(lambda ss: [s + 1e8 for s in ss]), VALID),
        Mut(
            "ragged-set",
            const([[[0.5, 0.25], [0.5]]], "[[[0.5, 0.25], [0.5]]]"),
            INVALID,
        ),
        Mut(
            "sparse-set",
            lambda v, ctx: S(
                [scipy.sparse.csr_matrix(np.array(s, float)) for s in v.plain],
                "["
                + ", ".join(
                    f"scipy.sparse.csr_matrix({lit(np.array(s, float))})"
                    for s in v.plain
                )
                + "]",
                v.plain,
            ),
            EITHER,
        ),
        Mut("None", const(None), EITHER if is_y else INVALID),
        Mut("string", const("sets"), INVALID),
        Mut("python-float", const(0.5), INVALID),
        Mut("dict", const({"a": 1}), INVALID),
    ]
    out += [Mut(label, _sets_edit(_set_scaled(s)), EITHER) for label, s in SCALES]
    for m in dtype_mutations() + layout_mutations():
        if m.label in ("list",):
            continue
        out.append(Mut(m.label, _per_set(m), m.expect))
    if weighted is not None:
        out += weighted_mutations(weighted)
    if is_y:
        out.append(
            Mut(
                "d-differs-from-X",
                _sets_edit(lambda ss: [np.hstack([s, s[:, :1]]) for s in ss]),
                INVALID,
            )
        )
    return out


# ------------------------------------------------------------- parameters


class P:
    """A scalar parameter's constraints, to judge each candidate value."""

    def __init__(
        self,
        kind,
        *,
        low=None,
        high=None,
        low_incl=True,
        none_ok=False,
        choices=(),
        huge=True,
        extra=(),
        judge=None,
        fields=None,
        base=None,
    ):
        self.kind, self.low, self.high, self.low_incl = kind, low, high, low_incl
        self.none_ok, self.choices, self.huge = none_ok, choices, huge
        self.extra, self.judge = extra, judge
        # kind "dict" (keyword arguments, e.g. kernel_params): the `P` of
        # each name it may hold, and the items every candidate keeps
        self.fields, self.base = fields or {}, base or {}


def _is_num(v):
    return isinstance(
        v, (int, float, np.integer, np.floating, Fraction)
    ) and not isinstance(v, (bool, np.bool_))


def _judge_number(p, v):
    if v is None:
        return VALID if p.none_ok else INVALID
    if isinstance(v, (bool, np.bool_)):
        return INVALID
    if isinstance(v, np.ndarray):
        return EITHER if v.ndim == 0 and v.dtype.kind in "iuf" else INVALID
    if not _is_num(v):
        return INVALID
    try:
        f = float(v)
    except OverflowError:
        return EITHER
    if not math.isfinite(f):
        return INVALID
    if p.kind == "int" and not float(v).is_integer():
        return INVALID
    if p.low is not None and (f < p.low or (f == p.low and not p.low_incl)):
        return INVALID
    if p.high is not None and f > p.high:
        return INVALID
    if p.kind == "int" and isinstance(v, (float, np.floating)):
        return EITHER
    if abs(f) >= 2**31 or (f != 0 and (abs(f) > 1e300 or abs(f) < 1e-300)):
        return EITHER
    return VALID


INT_CANDIDATES = [
    ("-1", -1),
    ("0", 0),
    ("1", 1),
    ("2", 2),
    ("3.0", 3.0),
    ("3.5", 3.5),
    ("nan", math.nan),
    ("inf", math.inf),
    ("True", True),
    ("None", None),
    ("'2'", "2"),
    ("[2]", [2]),
    ("np.int64(2)", np.int64(2)),
    ("np.uint8(2)", np.uint8(2)),
    ("np.array(2)", np.array(2)),
    ("np.float64(2.0)", np.float64(2.0)),
    ("2**31", 2**31),
    ("10**12", 10**12),
    ("2**63", 2**63),
    ("10**400", 10**400),
    ("-2**31", -(2**31)),
    ("2+0j", 2 + 0j),
]
REAL_CANDIDATES = [
    ("-1.0", -1.0),
    ("0.0", 0.0),
    ("-0.0", -0.0),
    ("5e-324", 5e-324),
    ("1e-300", 1e-300),
    ("1e-150", 1e-150),
    ("0.5", 0.5),
    ("1", 1),
    ("3", 3),
    ("1e150", 1e150),
    ("1e300", 1e300),
    ("1.7976931348623157e308", 1.7976931348623157e308),
    ("nan", math.nan),
    ("inf", math.inf),
    ("-inf", -math.inf),
    ("True", True),
    ("None", None),
    ("'0.5'", "0.5"),
    ("[0.5]", [0.5]),
    ("np.float32(0.5)", np.float32(0.5)),
    ("np.float64(0.5)", np.float64(0.5)),
    ("np.array(0.5)", np.array(0.5)),
    ("np.int64(2)", np.int64(2)),
    ("10**400", 10**400),
    ("1+0j", 1 + 0j),
    ("np.longdouble(0.5)", np.longdouble(0.5)),
    ("Fraction(1, 2)", Fraction(1, 2)),
]
BOOL_CANDIDATES = [
    ("True", True),
    ("False", False),
    ("np.True_", np.True_),
    ("0", 0),
    ("1", 1),
    ("2", 2),
    ("'True'", "True"),
    ("None", None),
    ("np.array(True)", np.array(True)),
    ("[True]", [True]),
]
WORKER_CANDIDATES = [
    ("None", None),
    ("1", 1),
    ("2", 2),
    ("-1", -1),
    ("-2", -2),
    ("-3", -3),
    ("0", 0),
    ("3.5", 3.5),
    ("2.0", 2.0),
    ("True", True),
    ("'2'", "2"),
    ("np.int64(2)", np.int64(2)),
    ("np.array(2)", np.array(2)),
    ("2**31", 2**31),
    ("10**6", 10**6),
    ("2**63", 2**63),
    ("-2**31", -(2**31)),
    ("[2]", [2]),
]
PROGRESS_CANDIDATES = [
    ("True", True),
    ("False", False),
    ("1", 1),
    ("'yes'", "yes"),
    ("None", None),
]



def _available_cpus():
    """The CPUs kernelmaps counts for `workers` (its
    ``_parallel.available_cpus``, read here without importing it): this
    process's affinity mask (``taskset``), capped by a cgroup CPU quota;
    not ``os.cpu_count()``, the machine's."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    quota = None
    try:
        with open("/sys/fs/cgroup/cpu.max") as f:
            limit, period = f.read().split()[:2]
        quota = None if limit == "max" else int(limit) / int(period)
    except (OSError, ValueError):
        try:
            with open("/sys/fs/cgroup/cpu/cpu.cfs_quota_us") as f:
                limit = int(f.read())
            with open("/sys/fs/cgroup/cpu/cpu.cfs_period_us") as f:
                period = int(f.read())
            quota = limit / period if limit > 0 and period > 0 else None
        except (OSError, ValueError):
            pass
    return max(1, n if quota is None else min(n, math.ceil(quota)))


N_CORES = _available_cpus()


def _rng_candidates():
    return [
        ("None", lambda: None, "None", VALID),
        ("0", lambda: 0, "0", VALID),
        ("42", lambda: 42, "42", VALID),
        ("2**63", lambda: 2**63, "2**63", VALID),
        ("10**30", lambda: 10**30, "10**30", VALID),
        ("-1", lambda: -1, "-1", INVALID),
        ("1.5", lambda: 1.5, "1.5", INVALID),
        ("'seed'", lambda: "seed", "'seed'", INVALID),
        ("[1, 2]", lambda: [1, 2], "[1, 2]", VALID),
        (
            "default_rng(0)",
            lambda: np.random.default_rng(0),
            "np.random.default_rng(0)",
            VALID,
        ),
        (
            "SeedSequence(1)",
            lambda: np.random.SeedSequence(1),
            "np.random.SeedSequence(1)",
            VALID,
        ),
        ("PCG64(3)", lambda: np.random.PCG64(3), "np.random.PCG64(3)", VALID),
        (
            "RandomState(0)",
            lambda: np.random.RandomState(0),
            "np.random.RandomState(0)",
            EITHER,
        ),
        ("True", lambda: True, "True", EITHER),
        ("np.array(5)", lambda: np.array(5), "np.array(5)", EITHER),
    ]


_LABEL_SRC = {
    "nan": "np.nan",
    "inf": "np.inf",
    "-inf": "-np.inf",
    "Fraction(1, 2)": "__import__('fractions').Fraction(1, 2)",
}


def param_mutations(p):
    """(label, make value, source, expectation) for a parameter."""
    out = []
    if p.kind in ("int", "real"):
        cands = INT_CANDIDATES if p.kind == "int" else REAL_CANDIDATES
        for label, v in cands:
            if not p.huge and label in ("2**31", "10**12", "2**63", "10**400"):
                continue
            expect = (p.judge or _judge_number)(p, v)
            out.append((label, (lambda v=v: v), _LABEL_SRC.get(label, label), expect))
    elif p.kind == "bool":
        for label, v in BOOL_CANDIDATES:
            if isinstance(v, (bool, np.bool_)):
                e = VALID
            elif v is None:
                e = VALID if p.none_ok else INVALID
            elif isinstance(v, (int, np.ndarray)) and not isinstance(v, bool):
                e = EITHER if (np.ndim(v) == 0 and v in (0, 1)) else INVALID
            else:
                e = INVALID
            out.append((label, (lambda v=v: v), label, e))
    elif p.kind == "choice":
        for c in p.choices:
            if isinstance(c, str):
                out.append((repr(c), (lambda c=c: c), repr(c), VALID))
        first = next(c for c in p.choices if isinstance(c, str))
        out += [
            (
                repr(first.upper()),
                lambda: first.upper(),
                repr(first.upper()),
                VALID if first.upper() in p.choices else INVALID,
            ),
            ("''", lambda: "", "''", INVALID),
            ("'unknown'", lambda: "unknown", "'unknown'", INVALID),
            ("None", lambda: None, "None", VALID if p.none_ok else INVALID),
            ("1", lambda: 1, "1", INVALID),
            (f"[{first!r}]", lambda: [first], f"[{first!r}]", INVALID),
            (f"b{first!r}", lambda: first.encode(), f"b{first!r}", INVALID),
            (
                f"np.str_({first!r})",
                lambda: np.str_(first),
                f"np.str_({first!r})",
                VALID,
            ),
        ]
    elif p.kind == "workers":
        for label, v in WORKER_CANDIDATES:
            if v is None:
                e = VALID
            elif isinstance(v, (bool, str, list)) or (
                isinstance(v, float) and not v.is_integer()
            ):
                e = INVALID
            elif isinstance(v, (float, np.ndarray)):
                e = EITHER
            else:
                v2 = int(v)
                e = (
                    INVALID
                    if (v2 == 0 or v2 < -N_CORES)
                    else (EITHER if v2 > 4096 else VALID)
                )
            out.append((label, (lambda v=v: v), label, e))
    elif p.kind == "rng":
        out += _rng_candidates()
    elif p.kind == "progress":
        for label, v in PROGRESS_CANDIDATES:
            e = VALID if isinstance(v, bool) else (EITHER if v == 1 else INVALID)
            out.append((label, (lambda v=v: v), label, e))
    elif p.kind == "dict":
        out += _dict_mutations(p)
    out += list(p.extra)
    return out


def _dict_mutations(p):
    """A dict of keyword arguments (``kernel_params``): None and {} (the
    defaults; either, beside the items of `p.base` a case needs), things
    that are not dicts, a name no kernel takes, and every candidate of each
    field, as ``{name: value}`` beside `p.base`."""
    base = p.base

    def src(items):
        return "{" + ", ".join([*(f"{k!r}: {v!r}" for k, v in base.items()),
                                *items]) + "}"

    default = EITHER if base else VALID
    out = [
        ("None", lambda: None, "None", default),
        ("{}", dict, "{}", default),
        ("base", lambda: dict(base), src([]), VALID),
        ("{'nope': 1}", lambda: {**base, "nope": 1}, src(["'nope': 1"]), INVALID),
        ("[('k', 2)]", lambda: [("k", 2)], "[('k', 2)]", INVALID),
        ("'k=2'", lambda: "k=2", "'k=2'", INVALID),
        ("1", lambda: 1, "1", INVALID),
    ]
    for name, field in p.fields.items():
        for label, make, text, expect in param_mutations(field):
            out.append((
                f"{{{name!r}: {label}}}",
                lambda make=make, name=name: {**base, name: make()},
                src([f"{name!r}: {text}"]),
                expect,
            ))
    return out
