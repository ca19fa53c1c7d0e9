"""How much of an expert-parallel dispatch or combine crosses a switch system's scale-out network.

Two kinds of all-to-all kernel serve expert parallelism across servers (DeepEP's two modes):

- per copy (DeepEP's low-latency kernels, pure RDMA): every routed copy of a token travels from its GPU to the
  expert's GPU over the network, so a token routed to two experts on one remote server crosses twice;
- per server (DeepEP's normal kernels; DeepSeek-V3 technical report §3.2.2): a token crosses the network once to
  each server that hosts any of its experts (to the GPU of the same in-server index there), then NVLink forwards it
  to the GPUs that hold its experts; the combine reduces a token's expert outputs inside the server over NVLink
  and returns one vector over the network.

Under `auto` (the default) a decode step runs the per-copy kernels and a prefill or training batch the per-server
ones, as SGLang's DeepEP `auto` mode picks them (LMSYS blog, May 2025: low-latency dispatch for decode, normal
dispatch for prefill). Per server, the network carries the expected number of remote servers a token reaches
instead of its remote copies. With E experts spread evenly over N GPUs in servers of s, e = E·s/N experts a
server, and top-k routing uniform over the experts, a token reaches a given server with probability
1 − C(E − e, k)/C(E, k) and sends k·e/E copies there, so the network's bytes scale by

    share = (1 − C(E − e, k)/C(E, k)) / (k·e/E)        (≤ 1; 1 when k = 1 or every server holds one expert)

(e.g. E 256, k 8, 32 GPUs in 4 servers: e 64, share 0.904/2 = 0.45). Under a skewed expert popularity the same
uniform share is charged (docs/cost-model.md). NVLink's forwarding inside the receiving server is not charged: it
runs at the scale-up bandwidth (9× the NIC's share on an H100 server) and is pipelined with the network transfer.
A mesh of wafers has no such kernel: its copies cross wafer boundaries hop by hop, one each.

Whose NIC. Per copy, every GPU sends and receives its copies through its own NIC (DeepEP's low-latency kernels:
one NIC per GPU, IBGDA from the sender's NIC to the receiver's), so the busiest GPU's crossing bytes at a 1/s share
of the server's network bind as well as the server's total: under a skewed expert popularity a hot GPU's NIC
saturates while its server's other NICs idle (`device_nics`). Per server, a token crosses to the GPU of the same
in-server index as its sender, so the senders' index, not the experts' popularity, spreads the bytes over the
NICs and the server's pool is the limit. Under uniform routing with E a multiple of N the two are equal.
"""

from __future__ import annotations

import numpy as np

from wsemoe.cost.fabric import topology

MODES = ("auto", "per_copy", "per_server")


def per_server(mode: str, workload_mode: str) -> bool:
    """Whether the per-server kernels run: `auto` picks them for prefill and training batches, not for decode."""
    if mode not in MODES:
        raise ValueError(f"scale_out_dispatch must be one of {MODES}, got {mode!r}")
    return mode == "per_server" or (mode == "auto" and workload_mode != "decode")


def device_nics(hw, mode: str, workload_mode: str) -> bool:
    """Whether a dispatch or combine goes through each GPU's own NIC (per copy on a switch of several scale-up
    domains), so the busiest GPU's share of the network binds, not only its server's."""
    return hw.topology == "switch" and getattr(hw, "scale_up_size", None) is not None \
        and not per_server(mode, workload_mode)


def miss_probability(experts, per_server_experts, k) -> np.ndarray:
    """C(E − e, k)/C(E, k): the chance that none of a token's k distinct experts, drawn uniformly from E, is among
    the e of one server (arrays broadcast)."""
    E, e, k = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (experts, per_server_experts, k)))
    out = np.ones(E.shape)
    for i in range(int(np.max(k, initial=0))):
        term = np.clip((E - e - i) / np.maximum(E - i, 1.0), 0.0, 1.0)
        out = out * np.where(i < k, term, 1.0)
    return out


def crossing_share(hw, m, mapping_mode: str, workload_mode: str, nodes) -> np.ndarray:
    """Share of the per-copy scale-out bytes that cross the network (1 where every copy crosses)."""
    nodes = np.asarray(nodes, dtype=float)
    size = getattr(hw, "scale_up_size", None)
    if hw.topology != "switch" or size is None or not per_server(mapping_mode, workload_mode):
        return np.ones(nodes.shape)
    E, k = np.asarray(m.num_experts, dtype=float), np.asarray(m.num_experts_per_tok, dtype=float)
    e = E * np.minimum(np.asarray(size, dtype=float), nodes) / nodes
    copies = k * e / E
    reached = 1.0 - miss_probability(E, e, k)
    share = np.minimum(reached / np.where(copies > 0, copies, 1.0), 1.0)
    return np.where((copies > 0) & (nodes > size), share, 1.0)   # one server: nothing crosses to dedupe


def system_share(hw, m, mapping_mode: str, workload_mode: str) -> np.ndarray:
    """`crossing_share` over the whole system's devices (the expert-parallel group every shipped layout uses)."""
    return crossing_share(hw, m, mapping_mode, workload_mode, topology.system_nodes(hw))
