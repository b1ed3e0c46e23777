"""The fuzz worker: a long-lived process that runs cases and classifies them.

Started by the parent (`fuzz_harness`) as ``python -P fuzz_worker.py``; it
reads one JSON request per line on stdin (``{"id": ..., "seed": ...}``)
and writes one JSON result per line on the file descriptor that was its
stdout (anything kernelmaps prints goes to stderr instead). The parent
detects crashes (this process dies) and hangs (no answer in time).

Classification of a case, here:

- the call raised: ValueError/TypeError naming the mutated argument is
  ``error-ok``, not naming it ``error-unnamed``; any other exception
  (including a warning, promoted to an error as in the project's pytest
  settings) is ``error-other``. A valid input that is rejected is ``wrong``.
- the call returned: NaN or inf anywhere in the output is ``nonfinite``;
  an invalid input that was accepted is ``wrong``; otherwise the entry's
  check (shape, dtype, the reference, exact symmetry, a second run with
  another thread count giving the same bits) decides ``ok`` or ``wrong``.
- either way, an input array (or sparse matrix component) whose values,
  dtype, shape or writeable flag changed makes the case ``mutated``.
"""

import contextlib
import copy
import faulthandler
import hashlib
import inspect
import json
import os
import re
import resource
import signal
import sys
import tempfile
import time
import traceback
import warnings
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import fuzz_entries as fe  # noqa: E402
import numpy as np  # noqa: E402
import scipy.sparse  # noqa: E402
from fuzz_inputs import INVALID, VALID, Ctx, S, grid  # noqa: E402

PARTNER = {"Y": "X", "means2": "means", "covs2": "covs", "diag_Y": "diag_X"}
TOGETHER = {"means2": "covs2", "covs2": "means2"}


def case_seed(entry, variant, seed):
    return zlib.crc32(f"{seed}:{entry}:{variant}".encode())


def parse_case(case_id):
    entry, arg, label, variant = case_id.split("|")
    return entry, arg, label, int(variant)


# ------------------------------------------------------------ fingerprints


def _hash_array(a):
    h = hashlib.sha1()
    if a.dtype == object:
        h.update(repr(a.tolist()).encode())
    elif a.dtype.kind in "Mm":
        h.update(np.ascontiguousarray(a).view("i8").tobytes())
    else:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def fingerprint(x, depth=0):
    """A comparable summary of `x`: values, dtype, shape and writeable flag
    of every array in it (sparse components, Bags, nested lists)."""
    if depth > 6:
        return ("deep",)
    if isinstance(x, np.ndarray):
        return (
            "ndarray",
            x.dtype.str,
            x.shape,
            bool(x.flags.writeable),
            _hash_array(x),
        )
    if scipy.sparse.issparse(x):
        parts = []
        for name in ("data", "indices", "indptr", "row", "col", "coords", "offsets"):
            val = getattr(x, name, None)
            if isinstance(val, np.ndarray):
                parts.append((name, fingerprint(val, depth + 1)))
            elif isinstance(val, tuple):
                parts.append((name, tuple(fingerprint(v, depth + 1) for v in val)))
        if x.format in ("lil", "dok"):
            parts.append(("dense", fingerprint(x.toarray(), depth + 1)))
        return ("sparse", x.format, x.shape, tuple(parts))
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, tuple(fingerprint(i, depth + 1) for i in x))
    if isinstance(x, dict):
        return ("dict", tuple((k, fingerprint(v, depth + 1)) for k, v in x.items()))
    if hasattr(x, "points") and hasattr(x, "offsets"):
        return (
            "bags",
            fingerprint(x.points, depth + 1),
            fingerprint(x.offsets, depth + 1),
        )
    if inspect.isgenerator(x) or callable(x):
        return ("opaque", id(x))
    if isinstance(x, (np.generic, int, float, complex, str, bytes, bool, type(None))):
        return ("scalar", repr(x))
    d = getattr(x, "__dict__", None)
    if d is not None:
        return (
            "obj",
            type(x).__name__,
            tuple(
                (k, fingerprint(v, depth + 1))
                for k, v in sorted(d.items())
                # (not a fitted map's copies of its state on a device, made
                # by its first transform of another library's arrays)
                if not k.startswith("__") and k != "_on_device_"
            ),
        )
    return ("other", type(x).__name__)


def describe_change(before, after):
    for (k, b), (_, a) in zip(before, after):
        if a != b:
            if b[0] == "ndarray" and a[0] == "ndarray":
                what = [
                    w
                    for w, i in (
                        ("dtype", 1),
                        ("shape", 2),
                        ("writeable flag", 3),
                        ("values", 4),
                    )
                    if a[i] != b[i]
                ]
                return f"argument {k}: its {', '.join(what)} changed"
            return f"argument {k} changed (in {_first_diff(b, a)})"
    return "an argument changed"


def _first_diff(b, a, path=""):
    if isinstance(b, tuple) and isinstance(a, tuple) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(b, a)):
            if x != y:
                label = x if isinstance(x, str) and i == 0 else i
                return _first_diff(x, y, f"{path}/{label}")
    return path or "its value"


# ---------------------------------------------------------------- outputs


# Attributes where +inf is a documented value: the threshold of a single
# test of the aggregated two-sample test that cannot reject.
_POS_INF_OK = {("MMDTestResult", "thresholds")}


def nonfinite(x, depth=0):
    """Where a NaN or inf is in `x` (None if nowhere)."""
    if depth > 5:
        return None
    if isinstance(x, np.ndarray):
        if x.dtype.kind in "fc" and x.size and not np.isfinite(x).all():
            bad = int((~np.isfinite(x)).sum())
            return (
                f"{bad} of {x.size} values non-finite (first at "
                f"{np.unravel_index(np.argmax(~np.isfinite(x)), x.shape)})"
            )
        return None
    if scipy.sparse.issparse(x):
        return nonfinite(x.data, depth + 1)
    if isinstance(x, (float, np.floating)):
        return None if np.isfinite(x) else f"value {x}"
    if isinstance(x, (list, tuple)):
        for i in x:
            r = nonfinite(i, depth + 1)
            if r:
                return r
        return None
    d = getattr(x, "__dict__", None)
    if d is not None and type(x).__module__.startswith("kernelmaps"):
        for k, v in d.items():
            if (type(x).__name__, k) in _POS_INF_OK and isinstance(v, np.ndarray):
                v = v[v != np.inf]
            if isinstance(v, np.ndarray) or (
                hasattr(v, "__dict__") and not isinstance(v, type)
            ):
                r = nonfinite(v, depth + 1)
                if r:
                    return f"attribute {k}: {r}"
    return None


def short_repr(values, limit=400):
    parts = []
    for k, v in values.items():
        if k.startswith("_"):
            continue
        if isinstance(v, np.ndarray):
            r = f"ndarray{v.shape} {v.dtype}"
            if not v.flags.c_contiguous:
                r += " non-C-contiguous"
            if not v.flags.writeable:
                r += " read-only"
            if isinstance(v, np.memmap):
                r += " memmap"
        elif scipy.sparse.issparse(v):
            r = f"{type(v).__name__}{v.shape} {v.dtype} nnz={v.nnz}"
        elif isinstance(v, list) and v and all(isinstance(i, np.ndarray) for i in v):
            shapes = ", ".join(str(i.shape) for i in v[:4])
            r = f"[{len(v)} arrays: {shapes} {v[0].dtype}]"
        else:
            r = repr(v)
            if len(r) > 80:
                r = r[:77] + "..."
        parts.append(f"{k}={r}")
    s = ", ".join(parts)
    return s if len(s) <= limit else s[: limit - 3] + "..."


_ID = r"[A-Za-z0-9_]"


def names_argument(message, names):
    """Whether `message` names one of `names` (case-insensitive, as a whole
    identifier: ``X`` matches "X[0] contains" but not "max")."""
    for n in names:
        if re.search(rf"(?<!{_ID}){re.escape(n)}(?!{_ID})", message, re.IGNORECASE):
            return True
    return False


# --------------------------------------------------------------- the case


class Setup(Exception):
    pass


def _default_for(entry, arg, base, ctx):
    """The value a mutation starts from when the baseline omits `arg`."""
    if arg in PARTNER and PARTNER[arg] in base:
        return base[PARTNER[arg]]
    if arg == "y" and "chunks" in base:
        rows = [len(b) for b in base["chunks"].value]
        ys = [grid(ctx.rng, (n,)) for n in rows]
        return S(ys, "[" + ", ".join(repr(y.tolist()) for y in ys) + "]")
    if arg == "positions" and "sets" in base:
        ps = [np.full((len(s), 2), 0.5) for s in base["sets"].value]
        return S(ps, "[" + ", ".join(f"np.full(({len(p)}, 2), 0.5)" for p in ps) + "]")
    return S(None, "None")


def prepare(case_id, seed, km, sk, tmpdir):
    name, arg, label, variant = parse_case(case_id)
    entry = fe.ENTRIES[name]
    ctx = Ctx(
        np.random.default_rng(case_seed(name, variant, seed)), variant, tmpdir, km, sk
    )
    try:
        base = entry.build(ctx)
    except Exception as e:
        raise Setup(f"baseline: {type(e).__name__}: {e}") from e
    expect = VALID
    if arg != "-":
        found = [
            (fn, ex)
            for a, lab, fn, ex in fe.iter_mutations(entry)
            if a == arg and lab == label
        ]
        if not found:
            raise Setup(f"no mutation {arg}={label} for {name}")
        fn, expect = found[0]
        start = base.get(arg) or _default_for(entry, arg, base, ctx)
        try:
            base[arg] = fn(start, ctx)
        except Exception as e:
            raise Setup(f"mutation: {type(e).__name__}: {e}") from e
        other = TOGETHER.get(arg)
        if other and other not in base:
            base[other] = base[PARTNER[other]]
        if arg == "positions" and "levels" not in base:
            base["levels"] = S(1, "1")
        if entry.fixup is not None:
            entry.fixup(arg, base, ctx)
    values = {k: s.value for k, s in base.items()}
    fe.add_probes(entry, values, ctx)
    ctx.self_plain = base["self"].plain if "self" in base else None
    return entry, arg, label, expect, base, values, ctx


def _is_random_state(x):
    return isinstance(
        x,
        (
            np.random.Generator,
            np.random.BitGenerator,
            np.random.RandomState,
            np.random.SeedSequence,
        ),
    )


def _snapshot(x):
    if isinstance(x, np.memmap):
        return np.array(x)
    if inspect.isgenerator(x):
        return x
    try:
        return copy.deepcopy(x)
    except Exception:
        return x


def _reproducer(entry, base):
    srcs = {k: s.src for k, s in base.items()}
    if any(v is None for v in srcs.values()):
        return None
    try:
        body = entry.src(srcs)
    except Exception:
        return None
    if "<" in body or len(body) > 1500:
        return None
    sklearn = ", kernelmaps.sklearn" if entry.group == "sklearn" else ""
    return f"import numpy as np, scipy.sparse, kernelmaps as km{sklearn}; {body}"


def _first_line(e):
    msg = str(e).strip().splitlines()
    return f"{type(e).__name__}: {msg[0] if msg else ''}"[:300]


def _where(tb):
    """The innermost frame of the traceback in kernelmaps."""
    frames = [f for f in traceback.extract_tb(tb) if "kernelmaps" in f.filename]
    if not frames:
        return ""
    f = frames[-1]
    path = f.filename.split("site-packages/")[-1]
    return f" [{path}:{f.lineno} in {f.name}]"


def _digest(x):
    """Hash of the numeric content (dtype, shape, bytes) of a result."""
    h = hashlib.sha1()

    def walk(y):
        if isinstance(y, np.ndarray):
            h.update(f"{y.dtype.str}{y.shape}".encode())
            padded = y.dtype.kind in "fc" and y.dtype.itemsize > 8  # long double
            h.update(
                repr(y.tolist()).encode()
                if y.dtype == object or padded
                else np.ascontiguousarray(y).tobytes()
            )
        elif scipy.sparse.issparse(y):
            c = y.tocsr()
            for a in (c.data, c.indices, c.indptr):
                walk(a)
        elif isinstance(y, (tuple, list)):
            for i in y:
                walk(i)
        else:
            h.update(repr(y).encode())

    walk(x)
    return h.hexdigest()


def _rerun_values(entry, values, rerun):
    """The arguments of the second run: a fresh copy, with another thread
    count when the entry takes `workers`."""
    v = dict(rerun)
    if "workers" in entry.argmap:
        w = values.get("workers")
        v["workers"] = 2 if w == 1 else 1
    return v


def _can_rerun(entry, values):
    if not entry.rerun:
        return False
    for k, v in values.items():
        if inspect.isgenerator(v):
            return False
        if k == "rng" and v is None:
            return False
    return not (
        "rng" in entry.argmap
        and "rng" not in values
        and "rng" not in {a.name for a in entry.args if a.positional}
    )


# The set kernels and the kNN search take their dot products from BLAS
# from PAIR_GEMM_DIM / KNN_GEMM_DIM features on; the fuzz sets have 1 to 3.
# Some cases run them through that path (its certification, its centring,
# its exact fallback) all the same, as their reproducers say (half the
# cases, by their ids).
_PRODUCTS_FROM_ANY_WIDTH = (
    "import kernelmaps._engine.pair_sums as ps, kernelmaps._engine.knn as kn; "
    "ps.PAIR_GEMM_DIM = dict.fromkeys(ps.PAIR_GEMM_DIM, 1); "
    "kn.KNN_GEMM_DIM = dict.fromkeys(kn.KNN_GEMM_DIM, 1); "
)


def _products_path(on):
    from kernelmaps._engine import knn, pair_sums

    for module, name in ((pair_sums, "PAIR_GEMM_DIM"), (knn, "KNN_GEMM_DIM")):
        default = _products_path.defaults.setdefault(
            name, dict(getattr(module, name)))
        setattr(module, name, dict.fromkeys(default, 1) if on else dict(default))


_products_path.defaults = {}


def run_case(req, km, sk, tmpdir, proto):
    case_id = req["id"]
    out = {"id": case_id}
    print(f"== case {case_id}", file=sys.stderr, flush=True)
    try:
        entry, arg, label, expect, base, values, ctx = prepare(
            case_id, req.get("seed", 0), km, sk, tmpdir
        )
    except Setup as e:
        out.update(category="error-other", detail=f"setup failed: {e}")
        return out
    products = zlib.crc32(case_id.encode()) % 2 == 1
    _products_path(products)
    out["isolate"] = entry.isolate
    out["args"] = short_repr(values)
    out["repro"] = _reproducer(entry, base)
    if products and out["repro"] is not None:
        out["repro"] = _PRODUCTS_FROM_ANY_WIDTH + out["repro"]
    out["expect"] = expect
    names = entry.argmap[arg].names() if arg in entry.argmap else (arg,)
    public = {k: v for k, v in values.items() if not k.startswith("_")}
    before = [(k, fingerprint(v)) for k, v in public.items()]
    plain = {k: (s.plain if k != "self" else s.value) for k, s in base.items()}
    plain = {k: _snapshot(v) for k, v in plain.items()}
    for k in values:
        if k.startswith("_"):
            plain[k] = values[k]
    # The second run gets the same arrays (same memory layout; they are
    # checked unchanged first) and fresh copies of random generators.
    rerun = {k: (_snapshot(v) if _is_random_state(v) else v) for k, v in values.items()}
    if req.get("interrupt"):
        proto.write(json.dumps({"id": case_id, "event": "started"}) + "\n")
        proto.flush()
    exc = tb = None
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            warnings.filterwarnings("ignore", message="mypy_extensions.TypedDict")
            # a valid result, which says that it carries no information
            # (a kernel scale far off the data's, mutated): checked as any
            warnings.filterwarnings("ignore", category=km.DegenerateWarning)
            # the documented warnings of valid calls: a map fitted on
            # weighted sets given sets without weights (the case's other
            # data), more landmarks than objects (every object taken)
            warnings.filterwarnings("ignore", "X has no point weights, but",
                                    UserWarning)
            warnings.filterwarnings("ignore", "n_components=.* landmarks, but X "
                                    "has only", UserWarning)
            result = entry.call(km, values)
    except KeyboardInterrupt:
        out.update(
            category="interrupted",
            detail="KeyboardInterrupt",
            elapsed=time.perf_counter() - t0,
        )
        return out
    except BaseException as e:
        if isinstance(e, SystemExit):
            raise
        exc, tb = e, e.__traceback__
        result = None
    out["elapsed"] = time.perf_counter() - t0
    after = [(k, fingerprint(v)) for k, v in public.items()]
    if after != before:
        out.update(category="mutated", detail=describe_change(before, after))
        # what the outcome would be otherwise (reported beside)
        also = _classify(
            entry, arg, label, expect, names, exc, tb, result, ctx, plain, None
        )
        if also["category"] not in ("ok", "error-ok"):
            out["also"] = also
        return out
    out.update(
        _classify(
            entry,
            arg,
            label,
            expect,
            names,
            exc,
            tb,
            result,
            ctx,
            plain,
            (values, rerun),
        )
    )
    return out


def _classify(
    entry, arg, label, expect, names, exc, tb, result, ctx, plain, rerun_args
):
    """Category and detail of a call's outcome (not counting mutation)."""
    out = {}
    if exc is not None:
        detail = _first_line(exc) + _where(tb)
        if isinstance(exc, (ValueError, TypeError, entry.ok_errors)):
            if arg == "-":
                cat, detail = "wrong", "rejected the valid baseline: " + detail
            elif expect == VALID:
                cat, detail = "wrong", "rejected a valid input: " + detail
            elif names_argument(str(exc), names):
                cat = "error-ok"
            else:
                cat = "error-unnamed"
        elif isinstance(exc, ImportError) and arg == "progress" and "tqdm" in str(exc):
            cat = "error-ok"  # progress=True without tqdm: the documented error
        else:
            cat = "error-other"
        out.update(category=cat, detail=detail)
        return out
    bad = nonfinite(result)
    if bad:
        out.update(category="nonfinite", detail=bad)
        return out
    if expect == INVALID:
        out.update(
            category="wrong",
            detail=f"accepted an invalid input ({arg}={label}) and returned a "
            f"finite value",
        )
        return out
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            entry.check(ctx, plain, result)
    except fe.Wrong as w:
        out.update(category="wrong", detail=str(w))
        return out
    except Exception as e:
        out.update(
            category="wrong",
            detail=f"output failed the check: {_first_line(e)}"
            f" ({traceback.extract_tb(e.__traceback__)[-1].lineno})",
        )
        return out
    if rerun_args is not None and _can_rerun(entry, rerun_args[0]):
        values, rerun = rerun_args
        v2 = _rerun_values(entry, values, rerun)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                again = entry.call(ctx.km, v2)
        except Exception as e:
            out.update(
                category="wrong",
                detail=f"second run (workers={v2.get('workers')}) "
                f"raised {_first_line(e)}",
            )
            return out
        if _digest(_result_arrays(again)) != _digest(_result_arrays(result)):
            w = v2.get("workers", "same")
            out.update(
                category="wrong",
                detail=f"not deterministic: a second run (workers={w}) gave "
                f"different bits",
            )
            return out
    out["category"] = "ok"
    return out


def _result_arrays(x):
    """The numeric content of a result (maps: their array attributes)."""
    if isinstance(x, tuple):
        return tuple(_result_arrays(i) for i in x)
    if isinstance(x, (np.ndarray, float)) or scipy.sparse.issparse(x):
        return x
    d = getattr(x, "__dict__", {})
    # "workers" is left out: it is the parameter the second run changes (an
    # estimator keeps it as given, e.g. np.array(2)), not a computed array.
    return tuple(
        (k, v)
        for k, v in sorted(d.items())
        if isinstance(v, np.ndarray) and not k.startswith("__") and k != "workers"
    )


# ----------------------------------------------------------------- main


_in_call = False


def _on_sigint(signum, frame):
    if _in_call:
        raise KeyboardInterrupt


def main():
    global _in_call
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    faulthandler.enable()
    limit = int(os.environ.get("KM_FUZZ_MEMORY_LIMIT", 0))
    if limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    signal.signal(signal.SIGINT, _on_sigint)
    warnings.filterwarnings("ignore", message="mypy_extensions.TypedDict")
    import kernelmaps as km

    try:
        import kernelmaps.sklearn as sk
    except ImportError:  # scikit-learn is optional: its cases are not sent
        sk = None

    tmpdir = tempfile.mkdtemp(prefix="km-fuzz-")
    proto.write(json.dumps({"ready": True, "pid": os.getpid()}) + "\n")
    try:
        for line in sys.stdin:
            req = json.loads(line)
            if req.get("interrupt"):
                import fuzz_interrupts

                print(f"== case {req['id']}", file=sys.stderr, flush=True)
                _in_call = True
                try:
                    out = fuzz_interrupts.run(req, km, proto)
                finally:
                    _in_call = False
            else:
                out = run_case(req, km, sk, tmpdir, proto)
            for f in os.listdir(tmpdir):
                with contextlib.suppress(OSError):
                    os.remove(os.path.join(tmpdir, f))
            proto.write(json.dumps(out) + "\n")
            proto.flush()
    finally:
        for f in os.listdir(tmpdir):
            os.remove(os.path.join(tmpdir, f))
        os.rmdir(tmpdir)


if __name__ == "__main__":
    main()
