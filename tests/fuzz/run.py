"""Run the kernelmaps fuzz suite against the installed package.

    python -P tests/fuzz/run.py --quick            # a few hundred cases, < 60 s
    python -P tests/fuzz/run.py --full             # every mutation, > 5000 cases
    python -P tests/fuzz/run.py --full --only sum_match --report fuzz.json
    python -P tests/fuzz/run.py --case 'mmd|X|nan|0'   # one case, in detail
    python -P tests/fuzz/run.py --list             # the cases, without running

Prints a table of the outcomes per entry point and category, then the
failures grouped by entry point and symptom, each with its case id and,
when the arguments can be written out, a one-line Python reproducer.
Exits with status 1 if any case failed (a case passes when it is ``ok`` or
``error-ok``; see README.rst in this directory).
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fuzz_harness


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="the quick subset (default)")
    mode.add_argument("--full", action="store_true", help="every mutation")
    mode.add_argument("--case", action="append", help="run these case ids only")
    parser.add_argument("--only", help="entry points whose name contains this")
    parser.add_argument("--seed", type=int, default=0, help="seed of the inputs")
    parser.add_argument(
        "--workers", type=int, default=2, help="worker processes (<= 2)"
    )
    parser.add_argument("--report", help="write every result to this JSON file")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument(
        "--max-groups",
        type=int,
        default=None,
        help="print at most this many failure groups",
    )
    args = parser.parse_args(argv)
    name = "full" if args.full else "quick"
    cases = args.case or fuzz_harness.enumerate_cases(name, args.only, args.seed)
    if args.list:
        print("\n".join(cases))
        return 0
    start = time.monotonic()
    last = [start]

    def progress(done, total, r):
        now = time.monotonic()
        if now - last[0] > 10 or done == total:
            last[0] = now
            print(
                f"  {done}/{total} cases, {now - start:.0f} s",
                file=sys.stderr,
                flush=True,
            )

    report = fuzz_harness.run(
        name if not args.case else "cases",
        seed=args.seed,
        n_workers=max(1, min(args.workers, 2)),
        progress=progress,
        cases=cases,
    )
    print(report.table())
    if report.failures:
        print("\nFailures (grouped by entry point, category and symptom):")
        print(report.failure_text(args.max_groups))
    if args.case:
        for r in report.results:
            print(json.dumps(r, indent=2))
    if args.report:
        with open(args.report, "w") as f:
            json.dump(report.to_json(), f, indent=1)
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
