"""Communication per layer from the fabric model: attention all-reduce, dispatch, combine, output reduction, a
dense FFN's all-reduce, gradients (across groups, and the router's inside each group), migration.

Structural terms come from structure.build (once per unique combination); here they are scaled by the bytes
each phase moves and turned into times with numpy broadcasting (cost/fabric/phasetime.py): every step of a phase
takes max(busiest link of each class, busiest injection port, busiest ejection port) / bandwidth plus its
ring rounds × its longest hop latency, and the steps add up.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from wsemoe.cost.node import formats, params, weights
from wsemoe.cost.fabric import phasetime, scaleout
from wsemoe.cost import structure
from wsemoe.cost.balance import routing
from wsemoe.cost.balance.migration import MIGRATION_COLUMNS, Window, migration_columns

PHASES = ("allreduce", "dispatch", "combine", "reduce")   # per MoE layer; "gradient", "router_gradient" in training
COUNT_BYTES = 4.0   # an expert's token count: Megatron-Core's local_tokens_per_expert is float32 (moe/router.py)


class StructuralKey(NamedTuple):
    """The numeric fields a structure depends on, for one unique combination in a frame (None: unset)."""

    rows: int
    cols: int
    tp: int
    num_experts: int
    top_k: int               # a token's distinct experts (caps an expert's share of the copies at 1/k)
    ring_directions: int = 1
    mapping_seed: int = 0  # the random strategy's seed (a sweepable axis like any other)
    zipf_s: float = 1.0
    seed: int = 0
    spare_slots: int = 0
    skew_target: float | None = None
    skew_devices: int | None = None


def _ports(port) -> dict:
    """(injection, ejection) factors of the phases at the expert side's ports: dispatch ejects its copies there,
    combine injects their outputs back (the senders' side keeps its expected load: fabric/spread.py)."""
    return {"dispatch": (1.0, port), "combine": (port, 1.0)}


def _server_reach(s: structure.Structure, key: StructuralKey) -> tuple[float, float]:
    """(crossing share, r) of a switch structure's domains under the per-server kernels: a token crosses once to
    each other server that hosts any of its experts, which it reaches with chance r (fabric/scaleout.py, under the
    uniform routing it charges), so a domain's NICs receive its per-copy load × the share in (token, server) events
    of probability r: k·concentration = r."""
    n = s.layout.nodes
    e = key.num_experts * min(s.layout.domain or n, n) / n
    r = 1.0 - float(scaleout.miss_probability(key.num_experts, e, key.top_k))
    copies = key.top_k * e / key.num_experts
    return (min(r / copies, 1.0) if copies > 0 else 1.0), r


def _link_spread(s: structure.Structure, name: str, experts: int, k: int) -> tuple | None:
    """(every link's load, its concentration) of phase `name` per unit (fabric/spread.py); None off a mesh.

    A token's copies on a link are the picks of its k distinct experts that land past it: with π_e = k·share_e
    and the picks' covariance −a_e·a_f (a = kα, routing.pick_covariance: exact at top-1 for any shares and for
    uniform shares at any k, a hypergeometric draw, where α_e = √ρ·share_e, ρ = (E − k)/(k(E − 1))), an owner's
    count has variance Σq − Σ(q² − (a·split)²) − (Σ a·split)², the sums over its (expert, host) pieces past the link
    (q = π_e·split). Summed over the owners' independent tokens, the binomial with that mean and variance has
    p = k·(Σ (piece share)² − Σ (piece α)² + Σ (owner α)²) / load. The pieces taken independent (α = 0) overstated
    it next to a sender: 2 × 2 mesh, top-1, a token's copy crosses the link beside it with chance 1/2 (Bernoulli),
    not Binomial(2, 1/4)."""
    sq = s.link_squares.get(name) if s.link_squares else None
    if sq is None:
        return None
    pieces, owners, alpha_pieces, alpha_owners = sq
    if alpha_pieces is None:   # uniform shares: α = √ρ·share
        rho = 1.0 if experts <= 1 else (experts - k) / (k * (experts - 1.0))
        alpha_pieces, alpha_owners = rho * pieces, rho * owners
    loads = s.phases[name].loads.all_links()
    with np.errstate(divide="ignore", invalid="ignore"):
        return loads, np.where(loads > 0, (pieces - alpha_pieces + alpha_owners) / loads, 0.0)


def software_latency(hw, phase: str):
    """Fixed software latency of one call of `phase` (s): dispatch and combine are expert-parallel all-to-all
    kernels (alltoall_latency_s, unset: collective_latency_s); the rest are all-reduce-type collectives."""
    coll = getattr(hw, "collective_latency_s", 0.0)
    if phase in ("dispatch", "combine"):
        a2a = getattr(hw, "alltoall_latency_s", None)
        return coll if a2a is None else a2a
    return coll


def _number(x) -> np.ndarray:
    """A field as float64 (None, an unset optional, becomes NaN)."""
    return np.asarray(np.nan if x is None else x, dtype=float)


def unique_rows(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(unique rows, each row's index) of a (points, fields) array, NaN (an unset optional) standing as −1."""
    # Unset optionals are NaN, which never equals itself: stand in -1 (no field takes it) so they group.
    keys = np.nan_to_num(keys, nan=-1.0)
    varies = np.flatnonzero((keys != keys[:1]).any(axis=0))   # sort only the columns that vary (usually few)
    uniq = keys[:1].copy()
    inv = np.zeros(len(keys), dtype=np.intp)
    if varies.size:
        sub, inv = np.unique(keys[:, varies], axis=0, return_inverse=True)
        uniq = np.repeat(keys[:1], len(sub), axis=0)
        uniq[:, varies] = sub
    return uniq, inv.ravel()


def _structural_keys(hw, m, tp, mp_, bal) -> tuple[tuple, list[StructuralKey], np.ndarray]:
    """Unique combinations of the numeric fields structure depends on, and each point's index."""
    fields = [hw.rows, hw.cols, tp, m.num_experts, m.num_experts_per_tok, getattr(mp_, "ring_directions", 1),
              getattr(mp_, "seed", 0)]
    if bal is not None:
        fields += [bal.zipf_s, bal.seed, bal.spare_slots, getattr(bal, "skew_target", None),
                   getattr(bal, "skew_devices", None)]
    arrays = np.broadcast_arrays(*(_number(x) for x in fields))
    uniq, inv = unique_rows(np.stack([a.ravel() for a in arrays], axis=1))
    casts = (int, int, int, int, int, int, int, float, int, int, float, int)
    built = [StructuralKey(*(None if v == -1.0 else c(v) for c, v in zip(casts, u))) for u in uniq]
    return arrays[0].shape, built, inv.ravel()


def balance_key(bal, numeric, histogram=None, top_k: int = 1) -> structure.BalanceKey:
    """Hashable balance description for the structure cache (uniform when no balance is given);
    `numeric` = (zipf_s, seed, spare_slots[, skew_target, skew_devices]) at one point; `top_k` the model's experts
    per token (a token's experts are distinct, so no expert's share of the copies exceeds 1/top_k)."""
    if bal is None:
        return structure.UNIFORM
    zipf_s, seed, spare, *skew = numeric
    target, devices = (skew + [None, None])[:2]
    hist = tuple(float(x) for x in histogram) if histogram is not None else None
    return structure.BalanceKey(bal.distribution, float(zipf_s), int(seed), bal.balancer, int(spare), hist,
                                None if target is None else float(target), None if devices is None else int(devices),
                                getattr(bal, "replica_split", "water-fill"), getattr(bal, "replica_policy", "hot"),
                                int(top_k))


def comm_model(hw, m, wl, mp_, bal=None, histogram=None):
    """A CommModel for the points, or None when nothing crosses nodes.

    Weight-streaming wafers run attention and experts over the whole wafer as one group: traffic
    there stays inside the PE fabric and is not modelled as node-to-node phases (`hardware.pe_fabric` asks for
    the PE level: cost/wafer/streaming.fabric_model).
    """
    if hw.weight_source in ("streamed", "sram"):   # traffic stays inside the PE fabric (sram: cost.wafer)
        return None
    return CommModel(hw, m, wl, mp_, bal, histogram)


class CommModel:
    """Per-layer communication of one categorical group of points (numeric fields may be arrays).

    Call it with (T, groups, tp) for the phase columns; then `migration(idle)` prices the balancer's
    migration once the layer's compute windows are known.
    """

    def __init__(self, hw, m, wl, mp_, bal, histogram):
        self.hw, self.m, self.wl, self.mp, self.bal, self.histogram = hw, m, wl, mp_, bal, histogram
        self._state = None

    def __call__(self, T, groups, tp) -> dict:
        shape, keys, inv = _structural_keys(self.hw, self.m, tp, self.mp, self.bal)
        built = [self._build(k) for k in keys]

        def pick(fn):  # a structural value per point
            return np.asarray([fn(s) for s in built], dtype=float)[inv].reshape(shape)

        busy = self._busiest(built, keys, inv, shape, T)
        out, windows = self._phases(built, inv, shape, self.scales(T, groups, tp), busy["port"], busy["links"])
        out.update(self._statistics(pick, built, inv, shape))
        out.update({k: busy[k] for k in ("expert_imbalance", "imbalance_before")})
        self._state = (built, inv, shape, windows)
        return out

    def _busiest(self, built, keys, inv, shape, T) -> dict:
        """The busiest node's expert load over the mean per point, after and before the balancer's replicas, as the
        expected maximum over a step's routing of T tokens (routing.busiest_load); `port`, the factor on the expert
        side's busiest port (`_carrier`) and `links`, on dispatch's and combine's busiest links and NICs."""
        which, k = inv.reshape(shape), self.m.num_experts_per_tok
        copies = np.asarray(T, dtype=float) * k
        after = routing.busiest_load([s.node_load for s in built], [s.concentration for s in built], which, copies, k)
        before = routing.busiest_load([s.load_before for s in built], [s.concentration_before for s in built], which,
                                      copies, k)
        nics = {}
        if any("nic_in" in s.carriers for s in built):
            server = scaleout.per_server(getattr(self.mp, "scale_out_dispatch", "auto"), self.wl.mode)
            nics = {kind: self._carrier(built, keys, which, copies, k, kind, server and kind == "nic")
                    for kind in ("nic", "device")}
        links = {}
        for name in ("dispatch", "combine"):
            on = self._links(built, keys, which, copies, k, name)
            links[name] = (on, nics.get("nic", on), nics.get("device", 1.0))
        return {"expert_imbalance": after, "imbalance_before": before, "links": links,
                "port": self._carrier(built, keys, which, copies, k, "port")}

    @staticmethod
    def _carrier(built, keys, which, copies, k, kind: str, per_server: bool = False):
        """The factor on the busiest carrier of `kind` per point (fabric/spread.carriers: "port"; "nic", "device":
        their receive and send directions): the expected maximum of its copies over a step's routing over the
        hottest carrier's expected copies (routing.busiest_carrier; 1 where a structure has none). A send direction
        takes the smaller spread of its remote and its local pieces (spread.py). `per_server`: a domain's NICs under
        the per-server kernels (`_server_reach`)."""
        loads, conc = [], []
        empty = (np.zeros(0), np.zeros(0))
        ratio = lambda sq, ld: np.where(ld > 0, sq / np.where(ld > 0, ld, 1.0), 0.0)   # noqa: E731
        for s, key in zip(built, keys):
            if kind == "port":
                plain, sq = s.carriers.get(kind, empty)
                loads.append(plain)
                conc.append(ratio(sq, plain))
                continue
            (inn, sq_in), (out, sq_out), (local, sq_local) = (s.carriers.get(f"{kind}_{d}", empty)
                                                              for d in ("in", "out", "local"))
            kk = max(key.top_k or 1, 1)
            spread = np.minimum(out - kk * sq_out, np.maximum(local - kk * sq_local, 0.0))   # ∝ a token's variance
            c_in, c_out = ratio(sq_in, inn), ratio(out - spread, kk * out)
            if per_server:
                share, reach = _server_reach(s, key)
                inn, out = inn * share, out * share
                c_in = c_out = np.full(inn.shape, reach / kk)
            loads.append(np.concatenate([inn, out]))
            conc.append(np.concatenate([c_in, c_out]))
        groups = [float(s.node_load.sum()) for s in built]   # units sent: one per group
        return routing.busiest_carrier(loads, conc, groups, which, copies, k)

    @staticmethod
    def _links(built, keys, which, copies, k, name: str):
        """The factor on phase `name`'s busiest links per point: the expected maximum of the links' copies over a
        step's routing over the hottest link's expected copies (routing.busiest_carrier on fabric/spread.py's
        moments; 1 off a mesh). One maximum over every link, on both classes' terms: a mesh of wafers whose links
        match one mesh's times as that mesh (where the crossing links are slower, their own maximum is not taken
        apart)."""
        spreads = [_link_spread(s, name, key.num_experts, max(key.top_k or 1, 1)) for s, key in zip(built, keys)]
        loads = [sp[0] if sp else np.zeros(0) for sp in spreads]
        conc = [sp[1] if sp else np.zeros(0) for sp in spreads]
        groups = [float(s.node_load.sum()) for s in built]   # units sent: one per group
        return routing.busiest_carrier(loads, conc, groups, which, copies, k)

    def port_factors(self, T, tp) -> tuple[dict, dict]:
        """({phase: (injection, ejection) factors}, {phase: (on-wafer link, crossing link or NIC pool, device NIC)
        factors}) per point (`step_times`' `ports` and `links`): the expert side's busiest port, the busiest links
        and NICs, at the expected maximum of a step's routing."""
        shape, keys, inv = _structural_keys(self.hw, self.m, tp, self.mp, self.bal)
        busy = self._busiest([self._build(k) for k in keys], keys, inv, shape, T)
        return _ports(busy["port"]), busy["links"]

    def structures(self, tp) -> list[tuple[StructuralKey, structure.Structure]]:
        """Every unique structure the points of this group use, with its key (built once, cached)."""
        _, keys, _ = _structural_keys(self.hw, self.m, tp, self.mp, self.bal)
        return [(k, self._build(k)) for k in keys]

    def migration(self, idle: list) -> dict:
        """Migration columns: `idle` lists Windows in which no phase uses the links (compute and HBM time)."""
        built, inv, shape, windows = self._state
        if self.bal is None or self.bal.balancer not in ("non-invasive", "stop-the-world"):
            return {k: np.zeros(shape) for k in MIGRATION_COLUMNS}  # a static placement (or none) migrates nothing
        usable = list(windows.values())
        if getattr(self.bal, "migration_windows", "all") == "all":
            usable += idle
        return migration_columns(self.hw, self.m, self.wl, self.bal, built, inv, shape, usable)

    def _build(self, key: StructuralKey) -> structure.Structure:
        mp_, hw = self.mp, self.hw
        # training keeps the shared experts TP-split where tokens are sliced (stagecost.shared_split): they gather
        coll = structure.Collectives(key.ring_directions, getattr(mp_, "combine_routing", "xy"),
                                     bool(getattr(hw, "in_switch_reduction", False)),
                                     self.wl.mode == "train" and params.shared_expert_params(self.m) > 0)
        wafers = tuple(int(v) for v in (getattr(hw, "wafers", None) or (1, 1)))
        return structure.build(
            hw.topology, key.rows, key.cols, key.tp, mp_.strategy, tuple(mp_.ftd) if mp_.ftd else None,
            key.mapping_seed, tuple(mp_.placement) if mp_.placement else None, mp_.token_source, key.num_experts,
            balance_key(self.bal, (key.zipf_s, key.seed, key.spare_slots, key.skew_target, key.skew_devices),
                        self.histogram, key.top_k),
            wafers, getattr(hw, "scale_up_size", None), coll)

    def scales(self, T, groups, tp) -> dict:
        """Bytes per unit of each phase's structural traffic, per point."""
        m, wl = self.m, self.wl
        act = m.hidden_size * wl.bytes_per_act
        # the attention's collective: an all-reduce of the output (serving); in training, under sequence
        # parallelism, a gather of what its heads read and a reduce-scatter of the output, the same ring steps
        # as an all-reduce of their mean width (params.sp_gather_width: MLA gathers its latents, not H)
        attn_act = act if wl.mode != "train" else (m.hidden_size + params.sp_gather_width(m)) / 2 * wl.bytes_per_act
        tile_tokens = T / (groups * wl.G)          # tokens of one attention tile of one group
        copies = (T / groups) * m.num_experts_per_tok * m.hidden_size    # elements each way
        scales = {"allreduce": tile_tokens * attn_act, "dispatch": copies * formats.dispatch_bytes(self.hw, wl),
                  "combine": copies * wl.bytes_per_act,     # quantized out (formats.dispatch_bytes), 16-bit back
                  "reduce": (T / groups) * act,    # the expert outputs of all G tiles, reduced once
                  "ffn_allreduce": (T / groups) * act}   # a dense FFN's partial sums: all G tiles at once
        if getattr(self.mp, "strategy", None) == "her":   # dense layers: the home all-reduce only
            scales["dense_allreduce"] = tile_tokens * attn_act
        if wl.mode == "train":  # gradients of the weights every group holds, reduced across groups (per micro-batch):
            # attention, shared experts, router, dense FFNs and embeddings, each layer charged their mean per layer
            shared = weights.resident_node(self.hw, m, wl, tp)[0].params
            scales["gradient"] = shared / m.num_hidden_layers * wl.bytes_per_grad
            # and inside each group, the gradients of what every member holds whole and runs on its own slice of
            # the tokens (stagecost.router_tokens): the gates, the norms, MLA's down-projections. The TP group
            # sums them in one all-reduce a step (params.tp_summed_params), charged here a MoE layer's share, a
            # dense layer's in a model without MoE layers (params.tp_grad_layers; structure: the group's own ring
            # all-reduce; nothing moves at TP 1)
            per_layer = params.tp_summed_params(m) / params.tp_grad_layers(m)
            scales["router_gradient"] = per_layer * wl.bytes_per_grad + 0.0 * tp
            # and over every node, the experts' token counts a correction bias moves by: E float32 counts a MoE
            # layer (params.expert_load_counts), one call a step (`latency_share`)
            if np.any(params.expert_load_counts(m)):
                per_moe = params.expert_load_counts(m) / np.maximum(params.moe_layers(m), 1)
                scales["expert_load"] = per_moe * COUNT_BYTES + 0.0 * tp
        return scales

    def repeats(self, name: str):
        """Occurrences of a phase per layer: the attention all-reduce once per attention tile (G), the rest once."""
        return self.wl.G if name in ("allreduce", "dense_allreduce") else 1

    def latency_share(self, name: str):
        """The share of one call's latency (ring rounds × hops, software latency) each occurrence pays: 1, but the
        router gradient's 1/Lm. Megatron-Core flattens every sequence-parallel gradient of the step into one
        all-reduce over the TP group (finalize_model_grads.py, _allreduce_non_tensor_model_parallel_grads), so a
        step pays its bytes layer by layer and one call's latency, spread here over the MoE layers (a model
        without any: over its dense layers, params.tp_grad_layers)."""
        if name == "expert_load":   # one all-reduce a step of every MoE layer's counts, stacked
            return 1.0 / np.maximum(params.moe_layers(self.m), 1)
        return 1.0 / params.tp_grad_layers(self.m) if name == "router_gradient" else 1.0

    def _phases(self, built, inv, shape, scales: dict, port, links=None) -> tuple[dict, dict]:
        """Per-layer time, binding term and busiest-link bytes of every phase; its windows for migration. `port`
        scales the expert side's busiest port, `links` dispatch's and combine's busiest links and NICs (`_busiest`)."""
        out, windows, ports = {}, {}, _ports(port)
        layers = params.moe_layers(self.m)
        mode = getattr(self.mp, "scale_out_dispatch", "auto")
        crossing = scaleout.system_share(self.hw, self.m, mode, self.wl.mode)
        own_nic = scaleout.device_nics(self.hw, mode, self.wl.mode)   # per copy: each GPU through its own NIC
        out["dispatch_scale_out_share"] = np.broadcast_to(crossing, shape) + 0.0
        for name, scale in scales.items():
            a2a = name in ("dispatch", "combine")
            share = crossing if a2a else 1.0
            factors = (links or {}).get(name, (1.0, 1.0, 1.0))
            timed = phasetime.phase(self.hw, built, inv, shape, name, scale, software_latency(self.hw, name), share,
                                    a2a and own_nic, ports.get(name, (1.0, 1.0)), factors)
            reps, call = self.repeats(name), self.latency_share(name)
            once = timed.volume + call * timed.latency
            out[f"{name}_s"] = reps * once
            out[f"{name}_fixed_s"] = reps * call * timed.fixed
            out[f"{name}_bound"] = timed.bound
            unit = np.asarray([s.phases[name].max_link for s in built], dtype=float)[inv].reshape(shape)
            # the busiest link's bytes the time waits for: a routed phase's expected maximum over a step's routing
            out[f"{name}_max_link_bytes"] = unit * scale * factors[0]
            # what the phase moves in all, per layer (energy prices it): byte-hops, and bytes across wafers/servers
            per = {k: np.asarray([getattr(s.phases[name], k) for s in built], dtype=float)[inv].reshape(shape)
                   for k in ("byte_hops", "cross_bytes")}
            out[f"{name}_hop_bytes"] = reps * scale * per["byte_hops"]
            out[f"{name}_cross_bytes"] = reps * scale * share * per["cross_bytes"]
            # migration rides MoE layers' phases (dense layers' cores are idle windows)
            if name not in ("dense_allreduce", "ffn_allreduce"):
                windows[name] = Window(once, scale, reps * layers, name)
        if "router_gradient_s" in out:   # a model without MoE layers pays the share in its dense FFN stage
            out["ffn_gradient_s"] = np.where(layers > 0, 0.0, out["router_gradient_s"])
        return out, windows

    @staticmethod
    def _statistics(pick, built, inv, shape) -> dict:
        """Structural statistics per point: hops, idle links, hot-link overlap, imbalance, slots, flow."""
        flow = np.asarray([s.flow for s in built], dtype=object)[inv].reshape(shape)
        return {
            "dispatch_mean_hops": pick(lambda s: s.phases["dispatch"].mean_hops),
            "dispatch_max_hops": pick(lambda s: s.phases["dispatch"].max_hops),
            "allreduce_ring_hops": pick(lambda s: s.ring_step_hops),
            "allreduce_mean_hops": pick(lambda s: s.phases["allreduce"].mean_hops),
            "allreduce_idle_link_share": pick(lambda s: s.phases["allreduce"].idle_share),
            "dispatch_idle_link_share": pick(lambda s: s.phases["dispatch"].idle_share),
            "hot_link_overlap": pick(lambda s: s.hot_overlap),
            "dispatch_inter_ftd_share": pick(lambda s: s.inter_ftd_share),
            "dispatch_inter_wafer_share": pick(lambda s: s.inter_wafer_share),
            "expert_slots_max": pick(lambda s: s.slots_max),
            "expert_slots_before": pick(lambda s: s.slots_before),
            "expert_copies": pick(lambda s: s.copies),
            "expert_optimizer_shares_max": pick(lambda s: s.optimizer_shares_max),
            "zipf_s_used": pick(lambda s: s.zipf_s),
            "token_flow": flow,
        }
