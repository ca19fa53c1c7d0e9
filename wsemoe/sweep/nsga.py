"""pymoo's NSGA-II fitted to grid positions: the problem, survival and mating the search plugs in.

Survival is NSGA-II's (pymoo's non-dominated sorting and crowding distance), ranked within each Pareto
group of the sweep (each hardware, model and scenario by default, as the results' fronts are): feasible points by
rank, the level that does not fit whole by crowding distance, then infeasible points by their violation. It works on arrays and keeps the survivors' ranks and distances for breeding, which
`search.Variation` does on whole generations: pymoo's per-individual bookkeeping would otherwise
cost more than evaluating the points.
"""

from __future__ import annotations

import numpy as np
from pymoo.core.duplicate import DuplicateElimination
from pymoo.core.infill import InfillCriterion
from pymoo.core.population import Population
from pymoo.core.problem import Problem
from pymoo.core.survival import Survival
from pymoo.operators.survival.rank_and_crowding.metrics import calc_crowding_distance
from pymoo.util.nds.non_dominated_sorting import NonDominatedSorting
from pymoo.util.randomized_argsort import randomized_argsort


class Positions(Problem):
    """One integer variable per factor: the position of its value, in [0, size); one constraint (worst g)."""

    def __init__(self, variation, n_obj: int):
        super().__init__(n_var=len(variation.sizes), n_obj=n_obj, n_ieq_constr=1, xl=variation.xl, xu=variation.xu,
                         vtype=int)


class CrowdedSurvival(Survival):
    """NSGA-II survival on arrays; the survivors' positions, violations, ranks and distances go to breeding."""

    def __init__(self, variation):
        super().__init__(filter_infeasible=False)
        self.variation, self.nds = variation, NonDominatedSorting()

    def _do(self, problem, pop, *args, n_survive=None, random_state=None, **kwargs):
        F, cv = pop.get("F").astype(float), pop.get("CV")[:, 0].astype(float)
        X = np.asarray(pop.get("X"), dtype=np.int64)
        levels, crowd = self._levels(F, cv, self.variation.niche(X), n_survive)
        rank, chosen = np.full(len(pop), np.inf), []
        for k, idx in enumerate(levels):
            cd = crowd[idx]
            rank[idx] = k
            if len(chosen) + len(idx) > n_survive:
                order = randomized_argsort(cd, order="descending", method="numpy", random_state=random_state)
                idx = idx[order[: n_survive - len(chosen)]]
            chosen.extend(idx.tolist())
            if len(chosen) >= n_survive:
                break
        infeasible = np.flatnonzero(cv > 0)
        chosen.extend(infeasible[np.argsort(cv[infeasible], kind="stable")][: n_survive - len(chosen)].tolist())
        keep = np.asarray(chosen, dtype=np.int64)
        self.variation.parents = (X[keep], cv[keep], rank[keep], crowd[keep])
        return pop[keep]

    def _levels(self, F, cv, niche, n_survive) -> tuple[list, np.ndarray]:
        """(feasible points by rank, crowding distances): points are ranked within their Pareto group (a
        front per group, as the results keep), level k holds the k-th front of every group, and crowding is
        measured within each group's front."""
        crowd, levels = np.zeros(len(F)), []
        feasible = np.flatnonzero(cv <= 0)
        for g in np.unique(niche[feasible]):
            members = feasible[niche[feasible] == g]
            for k, front in enumerate(self.nds.do(F[members], n_stop_if_ranked=n_survive)):
                idx = members[front]
                crowd[idx] = calc_crowding_distance(F[idx]) if len(idx) > 2 else np.inf
                levels += [[] for _ in range(k + 1 - len(levels))]
                levels[k].append(idx)
        return [np.concatenate(level) for level in levels], crowd

class Breeding(InfillCriterion):
    """Mating handed to `search.Variation` (tournaments, crossover, mutation, no repeats) in one call."""

    def __init__(self, variation):
        super().__init__()
        self.variation = variation

    def do(self, problem, pop, n_offsprings, random_state=None, **kwargs):
        X, cv, rank, crowd = self.variation.parents  # the survivors, in the population's order
        return Population.new("X", self.variation.breed(X, cv, rank, crowd, n_offsprings, random_state))


class Distinct(DuplicateElimination):
    """The first sample's points made distinct by grid index (later generations are bred distinct)."""

    def __init__(self, variation):
        super().__init__()
        self.variation = variation

    def _do(self, pop, other, is_duplicate):
        k = self.variation.key(pop.get("X"))
        _, first = np.unique(k, return_index=True)
        is_duplicate[:] = True
        is_duplicate[first] = False
        if other is not None:
            is_duplicate |= np.isin(k, self.variation.key(other.get("X")))
        return is_duplicate
