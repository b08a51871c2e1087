#!/usr/bin/env python3
# Optuna TPE (and exact random search) as baselines for the guided tune on the worlds that
# `benches/trade.rs` exports (World::export, issue 42): per family (a)-(f), how many of the 20
# worlds a peer's Optuna run reaches within 5% of the optimum by trial k = 5..20, as the fair
# comparison of the shared reference's tuning-baselines.md asks. A sibling of tpe-guided.py,
# with the same variants; the grids here have 5 knobs of their own per family and a noise per
# point.
#
#   TRADE_EXPORT=target/trade-worlds cargo bench --bench trade   # writes <family>-seed-N.csv
#   scripts/bench/tpe-trade.sh [DIR] [--repeats R] [--out FILE] [--jobs J]
#
# (the .sh makes a venv with optuna==5.1.0 and numpy at ~/.cache/sgtune/optuna-venv). DIR
# defaults to target/trade-worlds, FILE to DIR/tpe.md. Defaults: 5 Optuna seeds per world,
# 20 trials each, one process.
#
# The model, one trial = one launch, as the bench's: a `failed` point fails; otherwise the
# measured throughput is the true score x (1 + cv N(0,1)) with the point's own cv (column
# `cv`: 3%, in family (c) 3% at small batches to 12% at large), the TTFT and TPOT ratios
# likewise, each x exp(p99_sigma N(0,1)) (heavy-tailed p99s: family (c)), and with probability
# `outliers` (family (c): 5%) the launch is an outlier: score x U(0.6, 0.8), ratios x 1.5. The
# quality verdict as exported. The start (`# start ...`) is enqueued as trial 1. A world is
# "reached" at the first trial that launched a truly eligible point within 5% of the best
# eligible score. Variants (TPESampler defaults, multivariate, 10 start-up trials unless said):
#   c-TPE             constraints_func: ttft-1, tpot-1, +1/-1 for quality; failed launch: FAIL
#   c-TPE, 3 start-up the same with n_startup_trials=3
#   penalty 0         measured SLO or quality failure: value 0; failed launch: FAIL
#   FAIL              every infeasible trial (failed, SLO or quality): FAIL
#   random            exact random search without replacement: 1 - C(n-m,k)/C(n,k) per world
from __future__ import annotations

import argparse
import csv
import math
import os
import re
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import optuna
from optuna.trial import TrialState

FAMILIES = ["a", "b", "c", "d", "e", "f"]
NAMES = {
    "a": "(a) trade",
    "b": "(b) unmask",
    "c": "(c) noise",
    "d": "(d) wrong verdicts",
    "e": "(e) best in the middle",
    "f": "(f) hicache",
}
TAIL = ["status", "score", "ttft_ratio", "tpot_ratio", "quality", "cv"]
SEEDS = range(1, 21)
TRIALS = 20
BUDGETS = range(5, TRIALS + 1)
TOLERANCE = 0.05
VARIANTS = ["c-TPE", "c-TPE, 3 start-up", "penalty 0", "FAIL"]


class World:
    """One exported world: the grid's truths, the start, the points within 5%."""

    def __init__(self, path: str, family: str, seed: int):
        self.family, self.seed = family, seed
        with open(path, newline="") as f:
            first = f.readline()
            second = f.readline()
            m = re.match(r"# seed (\d+) family (\w) tolerance \S+ outliers (\S+) p99_sigma (\S+);", first)
            if not m:
                sys.exit(f"{path}: the first line is not `# seed N family F ...`: {first.strip()!r}")
            self.outliers = float(m.group(3))
            self.sigma = float(m.group(4))
            if not second.startswith("# start "):
                sys.exit(f"{path}: no `# start ...` line")
            self.start = tuple(int(x) for x in second[len("# start ") :].split(","))
            rows = list(csv.reader(f))
        header = rows[0]
        if header[-len(TAIL) :] != TAIL:
            sys.exit(f"{path}: unexpected header {header!r}")
        self.knobs = header[: -len(TAIL)]
        nk = len(self.knobs)
        # point -> None (failed) or (score, ttft_ratio, tpot_ratio, quality ok, cv)
        self.points: dict[tuple[int, ...], tuple[float, float, float, bool, float] | None] = {}
        for r in rows[1:]:
            if not r:
                continue
            p = tuple(int(x) for x in r[:nk])
            if r[nk] == "failed":
                self.points[p] = None
            else:
                self.points[p] = (
                    float(r[nk + 1]),
                    float(r[nk + 2]),
                    float(r[nk + 3]),
                    r[nk + 4] == "1",
                    float(r[nk + 5]),
                )
        self.counts = [max(p[i] for p in self.points) + 1 for i in range(nk)]
        if len(self.points) != math.prod(self.counts) or self.start not in self.points:
            sys.exit(f"{path}: not a full grid, or the start is not in it")
        eligible = {p: t[0] for p, t in self.points.items() if t and t[1] <= 1 and t[2] <= 1 and t[3]}
        if not eligible:
            sys.exit(f"{path}: no eligible point")
        self.optimum = max(eligible.values())
        self.good = {p for p, s in eligible.items() if s >= (1 - TOLERANCE) * self.optimum}

    def random_reach(self, k: int) -> float:
        n, m = len(self.points), len(self.good)
        return 1.0 - math.comb(n - m, k) / math.comb(n, k)


def run_one(w: World, variant: str, repeat: int) -> int | None:
    """One Optuna study of TRIALS launches; the trial (1-based) that reached, or None."""
    seed = 1000 * w.seed + repeat
    noise = np.random.default_rng([ord(w.family), w.seed, repeat])
    constrained = variant.startswith("c-TPE")
    kwargs: dict = {"seed": seed, "multivariate": True}
    if variant == "c-TPE, 3 start-up":
        kwargs["n_startup_trials"] = 3
    if constrained:
        kwargs["constraints_func"] = lambda t: t.user_attrs["constraints"]
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(**kwargs))
    study.enqueue_trial(dict(zip(w.knobs, w.start)))
    choices = [list(range(c)) for c in w.counts]
    for i in range(1, TRIALS + 1):
        trial = study.ask()
        p = tuple(trial.suggest_categorical(k, c) for k, c in zip(w.knobs, choices))
        truth = w.points[p]
        if p in w.good:
            return i
        e = noise.standard_normal(5)
        out = noise.random(2)
        if truth is None:
            study.tell(trial, state=TrialState.FAIL)
            continue
        score, ttft, tpot, quality, cv = truth
        slow = 0.6 + 0.2 * out[1] if out[0] < w.outliers else 1.0
        p99 = 1.5 if slow < 1.0 else 1.0
        value = score * max(0.3, 1 + cv * e[0]) * slow
        ttft_m = ttft * max(0.5, 1 + cv * e[1]) * math.exp(w.sigma * e[3]) * p99
        tpot_m = tpot * max(0.5, 1 + cv * e[2]) * math.exp(w.sigma * e[4]) * p99
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
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)


def run_world(args: tuple[World, int]) -> tuple[tuple[str, int], dict[str, list[int | None]]]:
    w, repeats = args
    quiet()
    return (w.family, w.seed), {v: [run_one(w, v, r) for r in range(repeats)] for v in VARIANTS}


def main() -> None:
    ap = argparse.ArgumentParser(description="Optuna TPE and random search on benches/trade.rs's worlds")
    ap.add_argument("dir", nargs="?", default="target/trade-worlds")
    ap.add_argument("--repeats", type=int, default=5, help="Optuna seeds per world (default 5)")
    ap.add_argument("--out", help="markdown output (default DIR/tpe.md)")
    ap.add_argument("--jobs", type=int, default=1, help="processes (default 1)")
    args = ap.parse_args()
    quiet()
    t0 = time.monotonic()
    worlds: dict[str, list[World]] = {}
    for fam in FAMILIES:
        for s in SEEDS:
            path = os.path.join(args.dir, f"{fam}-seed-{s}.csv")
            if not os.path.exists(path):
                sys.exit(f"{path} missing: export with TRADE_EXPORT={args.dir} cargo bench --bench trade")
            worlds.setdefault(fam, []).append(World(path, fam, s))
    work = [(w, args.repeats) for fam in FAMILIES for w in worlds[fam]]
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as ex:
            results = dict(ex.map(run_world, work, chunksize=4))
    else:
        results = dict(map(run_world, work))
    r = args.repeats
    lines = [
        f"Optuna {optuna.__version__} TPESampler (multivariate, n_startup_trials 10 unless said) "
        f"vs exact random search on benches/trade.rs's worlds (20 a family; start enqueued as "
        f"trial 1): worlds where a launched point is truly eligible and within {TOLERANCE:.0%} of "
        f"the optimum by trial k, mean over {r} Optuna seed(s) a world; random: expected count.",
        "",
    ]
    best_rows = []
    for fam in FAMILIES:
        ws = worlds[fam]
        n = len(ws)
        lines += [
            f"### {NAMES[fam]} ({len(ws[0].points)} points)",
            "",
            "| k | " + " | ".join(VARIANTS) + " | random | best TPE |",
            "| ---: | " + " | ".join("---:" for _ in VARIANTS) + " | ---: | ---: |",
        ]
        best = []
        for k in BUDGETS:
            cells = []
            vals = []
            for v in VARIANTS:
                hits = sum(1 for w in ws for x in results[(fam, w.seed)][v] if x is not None and x <= k)
                vals.append(hits / r)
                cells.append(f"{hits / r:.1f}")
            rnd = sum(w.random_reach(k) for w in ws)
            best.append(max(vals))
            lines.append(f"| {k} | " + " | ".join(cells) + f" | {rnd:.1f} | {max(vals):.1f} |")
        lines.append("")
        lines.append(
            "Points within 5% per world: "
            + ", ".join(str(len(w.good)) for w in ws)
            + f"; start within 5% on {sum(w.start in w.good for w in ws)}/{n}."
        )
        lines.append("")
        best_rows.append(f"    // {NAMES[fam]}\n    [{', '.join(f'{b:.1f}' for b in best)}],")
    lines.append("TPE_BEST for benches/trade.rs (the best variant at each k, per family):")
    lines.append("")
    lines.append("```")
    lines += best_rows
    lines.append("```")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    out = args.out or os.path.join(args.dir, "tpe.md")
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out, "w") as f:
        f.write(text)
    print(f"written to {out} in {time.monotonic() - t0:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
