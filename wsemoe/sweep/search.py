"""Search a design space too big to enumerate: NSGA-II over the grid's factors, generation by generation.

A design point is one value position per factor (the index arithmetic of `space.Grid`), so the
decision variables are those positions, integers in [0, size). Numeric factors are ordered
(B = 1, 2, 3, ...; powers of two), so simulated binary crossover and polynomial mutation act on
their positions and round. Categorical factors (strategy, presets, mode, ...) have no order:
a child takes one parent's value (uniform crossover) and mutation draws any value of the axis
with equal chance, so a category is never averaged or nudged towards a "neighbour". Each
generation is evaluated by the same vectorized engine as a grid sweep. No point is evaluated
twice: offspring already evaluated are eliminated and bred again, so `evaluations` counts
distinct points, and a search that cannot breed new points stops early. Infeasible points are
ranked by their worst constraint value g (constraint domination).
"""

from __future__ import annotations

import numpy as np

from wsemoe.config.schema import Search
from wsemoe.sweep.space import Grid

MIN_POPULATION, MAX_DEFAULT_POPULATION = 100, 2_000
NOT_FINITE_VIOLATION = 1.0e30  # a feasible point whose objective is NaN or infinite cannot be ranked


def population_size(search: Search) -> int:
    """Points per generation: as given, else about 100 generations' worth of the budget (pymoo's
    bookkeeping costs per generation; the front was found as well with 100 as with 400 generations)."""
    if search.population is not None:
        return search.population
    return int(min(MAX_DEFAULT_POPULATION, max(MIN_POPULATION, search.evaluations // 100)))


def _draw(random_state, sizes: np.ndarray, n: int) -> np.ndarray:
    """n rows of uniform positions in [0, size) for each size."""
    return np.floor(random_state.random((n, len(sizes))) * sizes).astype(np.int64)


def _niche_tables(grid: Grid, groups) -> list:
    """[(factor, code of its group-axis values at each position)] for the factors holding a group axis."""
    import pandas as pd

    out = []
    for i, f in enumerate(grid.factors):
        paths = [p for p in f.paths if p in groups]
        if paths:
            out.append((i, pd.factorize(pd.Series([repr(tuple(f.values[p][j] for p in paths)) for j in range(f.size)]))[0]))
    return out


class Variation:
    """NSGA-II's breeding on grid positions, vectorized over a whole generation.

    Binary tournaments by the crowded comparison (smaller constraint violation, then lower rank,
    then larger crowding distance); pymoo's simulated binary crossover and polynomial mutation on
    ordered positions, rounded; uniform crossover and uniform redraw on categories. A child equal
    to its parent after rounding takes one step on one variable. Children already evaluated or
    repeated are dropped and more are bred; when 200 children per wanted point still cannot fill the
    generation, random immigrants (uniform unevaluated points) do, so the budget buys new points
    instead of endless retries.
    """

    CROSSOVER, SBX_ETA, PM_ETA, MAX_BATCH = 0.9, 15.0, 20.0, 1 << 16
    BREED_PER_CHILD = 200  # children bred per new point wanted, at most (a 0.5% novelty rate), then immigrants
    ROUNDS = 8  # rounds of random draws for immigrants

    def __init__(self, grid: Grid, groups=()):
        self.grid = grid
        self.niches = _niche_tables(grid, groups)
        self.sizes = np.asarray(grid.shape, dtype=np.int64)
        self.categorical = np.asarray([not f.numeric for f in grid.factors], dtype=bool)
        self.xl, self.xu = np.zeros(len(self.sizes)), self.sizes - 1.0
        self.seen = np.zeros(0, dtype=np.int64)  # sorted grid indices of every evaluated point
        self.parents = None  # (positions, violation, rank, crowding) of the current population

    def is_seen(self, keys: np.ndarray) -> np.ndarray:
        if not len(self.seen):
            return np.zeros(len(keys), dtype=bool)
        pos = np.minimum(np.searchsorted(self.seen, keys), len(self.seen) - 1)
        return self.seen[pos] == keys

    def niche(self, X: np.ndarray) -> np.ndarray:
        """The Pareto group of each row of positions (equal values of the group axes: equal ids)."""
        X = np.asarray(X, dtype=np.int64)
        ids = np.zeros(len(X), dtype=np.int64)
        for i, lut in self.niches:
            ids = ids * (int(lut.max()) + 1) + lut[X[:, i]]
        return ids

    def key(self, X: np.ndarray) -> np.ndarray:
        return self.grid.index_of(list(np.asarray(X, dtype=np.int64).T))

    def breed(self, X, cv, rank, crowding, n: int, rng) -> np.ndarray:
        """n new, distinct positions: bred from the population, the rest (when breeding keeps landing
        on evaluated points: the population sits in an exhausted neighbourhood) drawn uniformly from
        unevaluated points. Fewer only when the space has no more points to give."""
        out, keys, rate, bred = [], np.zeros(0, dtype=np.int64), 1.0, 0
        while len(keys) < n and bred < self.BREED_PER_CHILD * n:
            need = n - len(keys)
            # late in a search most children were seen already: breed as many as the last round's
            # share of new ones says it takes
            m = int(min(self.MAX_BATCH, self.BREED_PER_CHILD * n - bred, max(64, 1.25 * need / max(rate, 1e-4))))
            m += m % 2
            parents = self._tournament(cv, rank, crowding, m, rng)
            before = len(keys)
            keys = self._keep(self._mutate(self._crossover(X[parents[: m // 2]], X[parents[m // 2:]], rng), rng),
                              need, keys, out)
            rate, bred = max(len(keys) - before, 1e-9) / m, bred + m
        for _ in range(self.ROUNDS):  # random immigrants
            need = n - len(keys)
            if need <= 0 or len(self.seen) + len(keys) >= self.grid.size:
                break
            keys = self._keep(_draw(rng, self.sizes, min(self.MAX_BATCH, 4 * need)), need, keys, out)
        return np.concatenate(out) if out else np.zeros((0, len(self.sizes)), dtype=np.int64)

    def _keep(self, child: np.ndarray, need: int, keys: np.ndarray, out: list) -> np.ndarray:
        """Append to `out` up to `need` children never evaluated nor kept before; the kept keys."""
        k = self.key(child)
        _, first = np.unique(k, return_index=True)
        first = np.sort(first)
        fresh = first[~self.is_seen(k[first]) & ~np.isin(k[first], keys)][:need]
        out.append(child[fresh])
        return np.concatenate([keys, k[fresh]])

    @staticmethod
    def _tournament(cv, rank, crowding, m: int, rng) -> np.ndarray:
        a, b = (np.floor(rng.random((2, m)) * len(cv)).astype(np.int64))
        coin = rng.random(m) < 0.5
        infeasible = (cv[a] > 0) | (cv[b] > 0)
        a_wins = np.where(infeasible, (cv[a] < cv[b]) | ((cv[a] == cv[b]) & coin),
                          (rank[a] < rank[b]) | ((rank[a] == rank[b]) & (
                              (crowding[a] > crowding[b]) | ((crowding[a] == crowding[b]) & coin))))
        return np.where(a_wins, a, b)

    def _crossover(self, p1: np.ndarray, p2: np.ndarray, rng) -> np.ndarray:
        from pymoo.operators.crossover.sbx import cross_sbx

        n = len(p1)
        col = np.ones((n, 1))
        Q = np.rint(cross_sbx(np.stack([p1, p2]).astype(float), self.xl, self.xu, self.SBX_ETA * col, 0.5 * col,
                              0.5 * col, random_state=rng)).astype(np.int64)
        swap = rng.random((n, int(self.categorical.sum()))) < 0.5
        a, b = p1[:, self.categorical], p2[:, self.categorical]
        Q[0][:, self.categorical], Q[1][:, self.categorical] = np.where(swap, b, a), np.where(swap, a, b)
        cross = rng.random(n) < self.CROSSOVER  # the other pairs pass on copies (then mutate)
        Q[:, ~cross] = np.stack([p1, p2])[:, ~cross]
        return np.clip(np.concatenate([Q[0], Q[1]]), 0, self.sizes - 1)

    def _mutate(self, X: np.ndarray, rng) -> np.ndarray:
        from pymoo.operators.mutation.pm import mut_pm

        n, d = X.shape
        Xp = np.rint(mut_pm(X.astype(float), self.xl, self.xu, np.full(n, self.PM_ETA), np.full(n, 1.0 / d),
                            False, random_state=rng)).astype(np.int64)
        cats = np.flatnonzero(self.categorical)
        redraw = rng.random((n, len(cats))) < 1.0 / d
        Xp[:, cats] = np.where(redraw, _draw(rng, self.sizes[cats], n), X[:, cats])
        same = np.flatnonzero(np.all(Xp == X, axis=1))
        var = np.floor(rng.random(len(same)) * d).astype(np.int64)
        step = np.where(rng.random(len(same)) < 0.5, -1, 1)
        size, at = self.sizes[var], Xp[same, var]
        moved = np.where((at + step < 0) | (at + step >= size), at - step, at + step)  # reflect at the ends
        other = (at + 1 + np.floor(rng.random(len(same)) * np.maximum(size - 1, 1)).astype(np.int64)) % size
        Xp[same, var] = np.where(self.categorical[var], other, moved)
        return np.clip(Xp, 0, self.sizes - 1)


class Driver:
    """NSGA-II in ask-and-tell form: `ask()` gives the grid indices of the next generation (None when
    done), `tell(F, violation)` gives back their minimization objectives and worst g."""

    def __init__(self, search: Search, grid: Grid, n_obj: int, groups=()):
        from pymoo.algorithms.moo.nsga2 import NSGA2
        from pymoo.core.termination import NoTermination
        from pymoo.operators.sampling.rnd import IntegerRandomSampling

        from wsemoe.sweep import nsga  # pymoo takes a second to import: only searches pay for it

        self.variation = Variation(grid, groups)
        self.grid, self.budget = grid, min(search.evaluations, grid.size)
        self.population = population_size(search)
        self.problem = nsga.Positions(self.variation, n_obj)
        self.algorithm = NSGA2(pop_size=self.population, sampling=IntegerRandomSampling(),
                               mating=nsga.Breeding(self.variation), survival=nsga.CrowdedSurvival(self.variation),
                               eliminate_duplicates=nsga.Distinct(self.variation))
        self.algorithm.setup(self.problem, termination=NoTermination(), seed=search.seed, verbose=False)
        self.evaluated, self.generations, self.stopped = 0, 0, None
        self._pending = None

    def ask(self) -> np.ndarray | None:
        """Grid indices of the next generation's new points, or None (budget spent, or nothing new)."""
        if self.evaluated >= self.budget:
            self.stopped = "budget"
            return None
        pop = self.algorithm.ask()
        if pop is None or len(pop) == 0:
            self.stopped = "no new points"
            return None
        pop = pop[: self.budget - self.evaluated]
        self._pending = pop
        return self.variation.key(pop.get("X"))

    def tell(self, F: np.ndarray, violation: np.ndarray) -> None:
        """Objectives (minimization form) and worst g of the points `ask` gave, in its order."""
        from pymoo.core.evaluator import Evaluator
        from pymoo.problems.static import StaticProblem

        pop, self._pending = self._pending, None
        F = np.asarray(F, dtype=float)
        g = np.nan_to_num(np.asarray(violation, dtype=float), nan=NOT_FINITE_VIOLATION)
        bad = ~np.all(np.isfinite(F), axis=1)
        g = np.where(bad & (g <= 0), NOT_FINITE_VIOLATION, g)
        F = np.where(np.isfinite(F), F, 0.0)
        Evaluator().eval(StaticProblem(self.problem, F=F, G=g[:, None]), pop)
        self.algorithm.tell(infills=pop)
        self.variation.seen = np.union1d(self.variation.seen, self.variation.key(pop.get("X")))
        self.evaluated += len(pop)
        self.generations += 1

    def info(self) -> dict:
        """What the manifest records about the search."""
        from importlib import metadata

        return {"algorithm": "nsga2", "library": f"pymoo {metadata.version('pymoo')}", "population": self.population,
                "generations": self.generations, "evaluated": self.evaluated, "budget": self.budget,
                "space_points": self.grid.size, "stopped": self.stopped, "enumerated": False}
