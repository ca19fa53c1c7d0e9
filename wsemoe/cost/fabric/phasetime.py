"""Time of a communication phase from its steps' per-unit peaks, vectorized over design points.

A phase is a sequence of steps (peaks.Step). Scaled by σ bytes per unit, step k takes

    volume_k  = max(σ·L0_k / BW0, σ·L1_k / BW1, σ·I_k / BW_port, σ·E_k / BW_port)
    latency_k = rounds_k · max_p(a_kp · t0 + b_kp · t1)

with L0/L1 its busiest on-wafer and wafer-crossing links (a switch: none and the busiest domain's scale-out
traffic; where every device sends through its own NIC, per-copy kernels, L1 is at least s · the busiest device's
crossing bytes, s devices sharing the domain's BW1),
I/E its busiest injection and ejection ports and (a, b) its Pareto-maximal (on-wafer, crossing) hop
pairs. The phase takes Σ_k (volume_k + latency_k) + the fixed software latency of one call: steps run one
after another. Every quantity is
linear in σ, so scaling unit peaks is exact.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from wsemoe.cost.fabric import topology

TERMS = ("link", "cross", "inject", "eject")  # volume terms of a step, in tie-break order


class Timed(NamedTuple):
    """A phase's volume (s), latency (s, its fixed software latency included), the binding label and the fixed
    software latency alone, per point."""

    volume: np.ndarray
    latency: np.ndarray
    bound: np.ndarray
    fixed: np.ndarray


def _padded(built, name: str) -> dict:
    """Per-structure step arrays of one phase, padded to a common step and profile count: {field: (S, K[, P])}."""
    steps = [s.phases[name].steps for s in built]
    k = max((len(x) for x in steps), default=0)
    p = max((len(st.profile) for x in steps for st in x), default=0)
    fields = ("max_link", "max_cross", "max_inject", "max_eject", "rounds", "max_cross_device")
    out = {f: np.zeros((len(built), k)) for f in fields}
    out["a"], out["b"] = np.zeros((len(built), k, p)), np.zeros((len(built), k, p))
    for i, x in enumerate(steps):
        for j, st in enumerate(x):
            for f in fields:
                out[f][i, j] = getattr(st, f)
            out["a"][i, j, :len(st.profile)] = st.profile[:, 0]
            out["b"][i, j, :len(st.profile)] = st.profile[:, 1]
    return out


class Steps(NamedTuple):
    """Every step of a phase at every point: arrays of shape `shape` + (steps,)."""

    terms: list          # volume terms in TERMS order (s)
    volume: np.ndarray   # the largest of them (s)
    latency: np.ndarray  # rounds × longest path (s)
    moves: np.ndarray    # whether the phase moves any data between nodes (shape `shape`)


def step_times(hw, built, inv: np.ndarray, shape: tuple, name: str, scale, cross_share=1.0,
               device_nics=False, ports=(1.0, 1.0), links=(1.0, 1.0, 1.0)) -> Steps:
    """Volume terms, volume and latency of every step of phase `name` at every point (`inv` maps points to
    `built`), and whether the phase moves data at all. `cross_share` scales the bytes on the crossing class (a
    switch's scale-out network: the share of copies that cross it, fabric/scaleout.py). `device_nics`: every
    device's network bytes go through its own NIC, a domain's bandwidth over its devices (per-copy kernels,
    fabric/scaleout.py), so the busiest device's NIC binds too, not only the domain's pool of NICs. `ports`:
    (injection, ejection) factors per point on the busiest ports' bytes (the busiest port's copies over a
    step's random routing against the hottest port's expected bytes: routing.busiest_carrier, fabric/spread.py).
    `links`: (on-wafer link, crossing link or a domain's NICs, a device's own NIC) factors per point on the busiest
    ones' bytes (the same rule; a third factor left out is the second's)."""
    arr = {f: v[inv].reshape(tuple(shape) + v.shape[1:]) for f, v in _padded(built, name).items()}
    bw0, bw1 = topology.class_bandwidths(hw)
    t0, t1 = topology.class_latencies(hw)
    col = lambda x: np.asarray(x, dtype=float)[..., None]  # noqa: E731  (per point, over steps)
    sigma = col(scale)
    # per-device NICs: the busiest device's crossing bytes at 1/size of the domain's bandwidth
    size = getattr(hw, "scale_up_size", None)
    on, off, dev = (col(f) for f in (*links, links[-1])[:3])
    device = np.where(col(device_nics), col(1.0 if size is None else size) * dev * arr["max_cross_device"], 0.0)
    cross = np.maximum(col(cross_share) * off * arr["max_cross"], device)
    inject, eject = (col(f) for f in ports)
    terms = [sigma * on * arr["max_link"] / col(bw0), sigma * cross / col(bw1),
             sigma * inject * arr["max_inject"] / col(hw.port_bw_bytes_per_s),
             sigma * eject * arr["max_eject"] / col(hw.port_bw_bytes_per_s)]
    terms = np.broadcast_arrays(*terms)
    reach = (arr["a"] * col(t0)[..., None] + arr["b"] * col(t1)[..., None]).max(axis=-1, initial=0.0)
    moves = (arr["max_link"] + arr["max_cross"] + arr["max_inject"] + arr["max_eject"]).sum(axis=-1) > 0
    return Steps(terms, np.maximum.reduce(terms), arr["rounds"] * reach, moves)


def phase(hw, built, inv: np.ndarray, shape: tuple, name: str, scale, fixed=0.0, cross_share=1.0,
          device_nics=False, ports=(1.0, 1.0), links=(1.0, 1.0, 1.0)) -> Timed:
    """Volume, latency and bound of phase `name` at every point (`inv` maps points to `built`, shape `shape`).

    `fixed` is the software latency of one call of the phase (s), charged where the phase moves data between
    nodes: a collective with no member to talk to (TP 1) launches nothing. `cross_share`, `device_nics`, `ports`,
    `links`: as `step_times`."""
    st = step_times(hw, built, inv, shape, name, scale, cross_share, device_nics, ports, links)
    fixed = np.where(st.moves, fixed, 0.0)
    volume, latency, fixed = np.broadcast_arrays(st.volume.sum(axis=-1), st.latency.sum(axis=-1) + fixed, fixed)
    return Timed(volume, latency, _bound(hw, st.terms, st.volume, volume, latency), fixed)


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
