#!/usr/bin/env python3
# Optuna TPE (and exact random search) as baselines for the guided tune on the hard surfaces
# that `benches/guided.rs` exports (HardSurface::export): how many of the 20 surfaces a peer's
# Optuna run reaches within 5% of the optimum by trial k = 5..20, as the fair comparison of
# the shared reference's tuning-baselines.md asks.
#
#   GUIDED_EXPORT=target/guided-surfaces cargo bench --bench guided   # writes hard-seed-N.csv
#   scripts/bench/tpe-guided.sh [DIR] [--repeats R] [--out FILE] [--jobs J]
#
# (the .sh makes a venv with optuna==5.1.0 and numpy at ~/.cache/sgtune/optuna-venv; or run
# this file with any Python 3.11 that has them). DIR defaults to target/guided-surfaces, FILE
# to DIR/tpe.md. Defaults: 5 Optuna seeds per surface, 20 trials each, one process (seconds);
# docs/benchmarks.md's figures are `--repeats 100 --jobs 2` (about 25 s on two cores).
#
# The model, one trial = one launch: a `failed` point fails; otherwise the measured throughput
# is the true score x (1 + 0.03 N(0,1)), the TTFT and TPOT ratios likewise with their own noise,
# and the quality verdict as exported. The start (second comment line `# start i,j,k,l,m,n`) is
# enqueued as trial 1, as the guided tune's start is its first launch. A surface is "reached" at
# the first trial that launched a truly eligible point (status ok, true ratios <= 1, quality 1)
# whose true score is >= 95% of the best eligible score. Variants (all TPESampler defaults,
# multivariate, 10 start-up trials unless said):
#   c-TPE             constraints_func: ttft-1, tpot-1, +1/-1 for quality; failed launch: FAIL
#   c-TPE, 3 start-up the same with n_startup_trials=3
#   penalty 0         measured SLO or quality failure: value 0; failed launch: FAIL
#   FAIL              every infeasible trial (failed, SLO or quality): FAIL
#   random            exact random search without replacement: 1 - C(n-m,k)/C(n,k) per surface
# Note: Optuna counts only COMPLETE (and PRUNED) trials toward n_startup_trials, so FAILed
# trials lengthen the random start-up phase.
from __future__ import annotations

import argparse
import csv
import math
import os
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import optuna
from optuna.trial import TrialState

KNOBS = [
    "mem_fraction_static",
    "kv_cache_dtype",
    "hicache_size",
    "max_running_requests",
    "cuda_graph_max_bs",
    "page_size",
]
HEADER = KNOBS + ["status", "score", "ttft_ratio", "tpot_ratio", "quality"]
SEEDS = range(1, 21)
TRIALS = 20
BUDGETS = range(5, TRIALS + 1)
CV = 0.03
TOLERANCE = 0.05
VARIANTS = ["c-TPE", "c-TPE, 3 start-up", "penalty 0", "FAIL"]


class Surface:
    """One exported hard surface: the grid's truths, the start, the points within 5%."""

    def __init__(self, path: str, seed: int):
        self.seed = seed
        with open(path, newline="") as f:
            first = f.readline()
            second = f.readline()
            if not first.startswith("# seed"):
                sys.exit(f"{path}: the first line is not `# seed N ...`: {first.strip()!r}")
            if not second.startswith("# start "):
                sys.exit(
                    f"{path}: no `# start i,j,k,l,m,n` line after the `# seed` line: the start "
                    "(trial 1) must come from the export; re-export with a benches/guided.rs "
                    "that writes it (GUIDED_EXPORT=DIR cargo bench --bench guided)"
                )
            try:
                self.start = tuple(int(x) for x in second[len("# start ") :].split(","))
            except ValueError:
                sys.exit(f"{path}: bad start line {second.strip()!r}")
            rows = list(csv.reader(f))
        if not rows or rows[0] != HEADER:
            sys.exit(f"{path}: unexpected header {rows[0] if rows else None!r}")
        # point (6 indices) -> None (failed) or (score, ttft_ratio, tpot_ratio, quality ok)
        self.points: dict[tuple[int, ...], tuple[float, float, float, bool] | None] = {}
        for r in rows[1:]:
            if not r:
                continue
            p = tuple(int(x) for x in r[:6])
            if r[6] == "failed":
                self.points[p] = None
            elif r[6] == "ok":
                self.points[p] = (float(r[7]), float(r[8]), float(r[9]), r[10] == "1")
            else:
                sys.exit(f"{path}: unknown status {r[6]!r}")
        self.counts = [max(p[i] for p in self.points) + 1 for i in range(6)]
        if len(self.points) != math.prod(self.counts):
            sys.exit(f"{path}: {len(self.points)} points, not the full grid {self.counts}")
        if len(self.start) != 6 or self.start not in self.points:
            sys.exit(f"{path}: the start {self.start} is not a grid point")
        eligible = {p: t[0] for p, t in self.points.items() if t and t[1] <= 1 and t[2] <= 1 and t[3]}
        if not eligible:
            sys.exit(f"{path}: no eligible point")
        self.optimum = max(eligible.values())
        self.good = {p for p, s in eligible.items() if s >= (1 - TOLERANCE) * self.optimum}

    def random_reach(self, k: int) -> float:
        """The exact chance that k draws without replacement hit a point within 5%."""
        n, m = len(self.points), len(self.good)
        return 1.0 - math.comb(n - m, k) / math.comb(n, k)


def run_one(surface: Surface, variant: str, repeat: int) -> int | None:
    """One Optuna study of TRIALS launches; the trial (1-based) that reached, or None."""
    seed = 1000 * surface.seed + repeat
    # The same noise stream for every variant of a (surface, repeat): the i-th launch's noise.
    noise = np.random.default_rng([surface.seed, repeat])
    constrained = variant.startswith("c-TPE")
    kwargs: dict = {"seed": seed, "multivariate": True}
    if variant == "c-TPE, 3 start-up":
        kwargs["n_startup_trials"] = 3
    if constrained:
        kwargs["constraints_func"] = lambda t: t.user_attrs["constraints"]
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(**kwargs))
    study.enqueue_trial(dict(zip(KNOBS, surface.start)))
    choices = [list(range(c)) for c in surface.counts]
    for i in range(1, TRIALS + 1):
        trial = study.ask()
        p = tuple(trial.suggest_categorical(k, c) for k, c in zip(KNOBS, choices))
        truth = surface.points[p]
        if p in surface.good:
            return i  # the figures use only the first reach
        e = noise.standard_normal(3)
        if truth is None:
            study.tell(trial, state=TrialState.FAIL)
            continue
        score, ttft, tpot, quality = truth
        value = score * (1 + CV * e[0])
        ttft_m = ttft * (1 + CV * e[1])
        tpot_m = tpot * (1 + CV * e[2])
        feasible = ttft_m <= 1 and tpot_m <= 1 and quality
        if constrained:
            trial.set_user_attr("constraints", [ttft_m - 1, tpot_m - 1, -1.0 if quality else 1.0])
            study.tell(trial, value)
        elif variant == "penalty 0":
            study.tell(trial, value if feasible else 0.0)
        elif feasible:
            study.tell(trial, value)
        else:
            study.tell(trial, state=TrialState.FAIL)
    return None


def quiet() -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    # constraints_func is deprecated since Optuna 5.0 (FutureWarning; Trial.set_constraint is
    # the new way, read the same by TPE), and some arguments are experimental.
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)


def run_surface(args: tuple[Surface, int]) -> tuple[int, dict[str, list[int | None]]]:
    surface, repeats = args
    quiet()
    return surface.seed, {
        v: [run_one(surface, v, r) for r in range(repeats)] for v in VARIANTS
    }


def median_reach(reaches: list[int | None]) -> str:
    """The median trial to reach (the upper one for an even count, as benches/guided.rs)."""
    v = sorted(r if r is not None else math.inf for r in reaches)
    m = v[len(v) // 2]
    return "never" if m == math.inf else str(m)


def main() -> None:
    ap = argparse.ArgumentParser(
        description="Optuna TPE and random search vs the guided tune on the exported hard surfaces"
    )
    ap.add_argument("dir", nargs="?", default="target/guided-surfaces")
    ap.add_argument("--repeats", type=int, default=5, help="Optuna seeds per surface (default 5)")
    ap.add_argument("--out", help="markdown output (default DIR/tpe.md)")
    ap.add_argument("--jobs", type=int, default=1, help="processes (default 1)")
    args = ap.parse_args()
    quiet()
    t0 = time.monotonic()
    surfaces = []
    for s in SEEDS:
        path = os.path.join(args.dir, f"hard-seed-{s}.csv")
        if not os.path.exists(path):
            sys.exit(f"{path} missing: export with GUIDED_EXPORT={args.dir} cargo bench --bench guided")
        surfaces.append(Surface(path, s))

    work = [(s, args.repeats) for s in surfaces]
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as ex:
            results = dict(ex.map(run_surface, work))
    else:
        results = dict(map(run_surface, work))

    n = len(surfaces)
    r = args.repeats
    lines = [
        f"Optuna {optuna.__version__} TPESampler (multivariate, n_startup_trials 10 unless said) "
        f"vs exact random search on the {n} hard surfaces of benches/guided.rs "
        f"({len(surfaces[0].points)} points; noise cv {CV}; start enqueued as trial 1): "
        f"surfaces where a launched point is truly eligible and within {TOLERANCE:.0%} of the "
        f"optimum by trial k, mean over {r} Optuna seed(s) per surface; random: expected count.",
        "",
        "| k | " + " | ".join(VARIANTS) + " | random |",
        "| ---: | " + " | ".join("---:" for _ in VARIANTS) + " | ---: |",
    ]
    for k in BUDGETS:
        cells = []
        for v in VARIANTS:
            hits = sum(1 for s in results.values() for x in s[v] if x is not None and x <= k)
            cells.append(f"{hits / r:.1f}/{n}")
        rnd = sum(s.random_reach(k) for s in surfaces)
        lines.append(f"| {k} | " + " | ".join(cells) + f" | {rnd:.1f}/{n} |")
    lines.append("")
    meds = []
    for v in VARIANTS:
        all_runs = [x for s in results.values() for x in s[v]]
        meds.append(f"{v} {median_reach(all_runs)}")
    # Random: the smallest k where the pooled chance of having reached is at least one half.
    k, cdf = 0, 0.0
    while cdf < 0.5 and k < len(surfaces[0].points):
        k += 1
        cdf = sum(s.random_reach(k) for s in surfaces) / n
    meds.append(f"random {k}")
    lines.append(
        f"Median trials to reach (over {n} surfaces x {r} seeds, `never` past {TRIALS}): "
        + "; ".join(meds)
        + "."
    )
    lines.append(
        "Points within 5% per surface: "
        + ", ".join(f"{s.seed}: {len(s.good)}" for s in surfaces)
        + f"; start within 5% on {sum(s.start in s.good for s in surfaces)}/{n}."
    )
    text = "\n".join(lines) + "\n"
    print(text, end="")
    out = args.out or os.path.join(args.dir, "tpe.md")
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out, "w") as f:
        f.write(text)
    print(f"written to {out} in {time.monotonic() - t0:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
