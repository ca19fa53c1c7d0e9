"""Time of a communication phase from its steps' per-unit peaks, vectorized over design points.

A phase is a sequence of steps (structure.Step). Scaled by σ bytes per unit, step k takes

    volume_k  = max(σ·L0_k / BW0, σ·L1_k / BW1, σ·I_k / BW_port, σ·E_k / BW_port)
    latency_k = rounds_k · max_p(a_kp · t0 + b_kp · t1)

with L0/L1 its busiest on-wafer and wafer-crossing links (a switch: none and the busiest scale-out NIC),
I/E its busiest injection and ejection ports and (a, b) its Pareto-maximal (on-wafer, crossing) hop
pairs. The phase takes Σ_k (volume_k + latency_k): steps run one after another. Every quantity is
linear in σ, so scaling unit peaks is exact.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from wsemoe.cost.fabric import topology

TERMS = ("link", "cross", "inject", "eject")  # volume terms of a step, in tie-break order


class Timed(NamedTuple):
    """A phase's volume (s), latency (s) and the binding label per point."""

    volume: np.ndarray
    latency: np.ndarray
    bound: np.ndarray


def _padded(built, name: str) -> dict:
    """Per-structure step arrays of one phase, padded to a common step and profile count: {field: (S, K[, P])}."""
    steps = [s.phases[name].steps for s in built]
    k = max((len(x) for x in steps), default=0)
    p = max((len(st.profile) for x in steps for st in x), default=0)
    out = {f: np.zeros((len(built), k)) for f in ("max_link", "max_cross", "max_inject", "max_eject", "rounds")}
    out["a"], out["b"] = np.zeros((len(built), k, p)), np.zeros((len(built), k, p))
    for i, x in enumerate(steps):
        for j, st in enumerate(x):
            for f in ("max_link", "max_cross", "max_inject", "max_eject", "rounds"):
                out[f][i, j] = getattr(st, f)
            out["a"][i, j, :len(st.profile)] = st.profile[:, 0]
            out["b"][i, j, :len(st.profile)] = st.profile[:, 1]
    return out


def step_times(hw, built, inv: np.ndarray, shape: tuple, name: str, scale) -> tuple[list, np.ndarray, np.ndarray]:
    """(volume terms, volume, latency) of every step of phase `name` at every point: arrays of shape
    `shape` + (steps,), the terms in TERMS order (`inv` maps points to `built`)."""
    arr = {f: v[inv].reshape(tuple(shape) + v.shape[1:]) for f, v in _padded(built, name).items()}
    bw0, bw1 = topology.class_bandwidths(hw)
    t0, t1 = topology.class_latencies(hw)
    col = lambda x: np.asarray(x, dtype=float)[..., None]  # noqa: E731  (per point, over steps)
    sigma = col(scale)
    terms = [sigma * arr["max_link"] / col(bw0), sigma * arr["max_cross"] / col(bw1),
             sigma * arr["max_inject"] / col(hw.port_bw_bytes_per_s), sigma * arr["max_eject"] / col(hw.port_bw_bytes_per_s)]
    terms = np.broadcast_arrays(*terms)
    reach = (arr["a"] * col(t0)[..., None] + arr["b"] * col(t1)[..., None]).max(axis=-1, initial=0.0)
    return terms, np.maximum.reduce(terms), arr["rounds"] * reach


def phase(hw, built, inv: np.ndarray, shape: tuple, name: str, scale) -> Timed:
    """Volume, latency and bound of phase `name` at every point (`inv` maps points to `built`, shape `shape`)."""
    terms, step_volume, step_latency = step_times(hw, built, inv, shape, name, scale)
    volume, latency = np.broadcast_arrays(step_volume.sum(axis=-1), step_latency.sum(axis=-1))
    return Timed(volume, latency, _bound(hw, terms, step_volume, volume, latency))


def _bound(hw, terms, step_volume, volume, latency) -> np.ndarray:
    """The binding label: latency when it exceeds the volume, else the term of the step with the most volume."""
    cross = "scale-out" if hw.topology == "switch" else "wafer-link"
    labels = np.array(["link", cross, "inject", "eject", "latency", "none"], dtype=object)
    if step_volume.shape[-1] == 0:
        code = np.where(latency > 0, 4, 5)
    else:
        k = step_volume.argmax(axis=-1)[..., None]
        at = [np.take_along_axis(t, k, axis=-1)[..., 0] for t in terms]
        worst = np.maximum.reduce(at)
        term = np.select([at[i] >= worst for i in range(4)], [0, 1, 2, 3])
        code = np.where(volume <= 0, np.where(latency > 0, 4, 5), np.where(latency > volume, 4, term))
    return labels[code]
