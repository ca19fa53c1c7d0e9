"""The reading each published figure is reproduced under, chosen from the publication's text (quoted in
docs/sources.md, "Validation"), and the sweeps of its rows evaluated under it.

A figure fixes the readings its text informs; every other reading stays as the registry default, or as a
sweep sets it for a reason its config states (the single-wafer MoEntwine sweeps shard the MLA latent to fit
memory). Every row citing a figure uses the figure's reading; a row says where it differs from the default.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wsemoe.config import readings as registry


@dataclass(frozen=True)
class Figure:
    """A publication's figures: where its text is read, and the reading chosen from it, with the words."""

    key: str
    publication: str
    available: str                         # what of the publication the choice rests on
    readings: dict = field(default_factory=dict)   # reading -> option
    quotes: dict = field(default_factory=dict)     # reading -> (the words, where they are)


BTA = Figure(
    "bta", "Soboleva et al., Batch Tiling on Attention, SC Workshops '25; Cerebras training documentation, Batch "
    "Tiling on Attention (Model Zoo 2.9)",
    "the paper's abstract (SC25 programme page) and the documentation page; the paper's figures are not available",
    {"attn_kernel": "per_head", "kept_activations": "streamed", "hold": "active"},
    {"attn_kernel": ("'attention mechanisms need smaller batches for memory constraints' (abstract); 'the batch "
                     "size increase is limited by the memory bottleneck primarily coming from the attention layer', "
                     "'memory pressure from attention, which is quadratic on the sequence dimension' (documentation)."
                     " An S² term must limit the batch, which rules out a tiled kernel; neither text says every "
                     "head's scores are held at once, and Cerebras' shipped micro-batches could not run if they "
                     "were: one head's scores at a time",
                     "abstract; documentation, How It Works"),
     "kept_activations": ("neither text says where checkpoints live: the registry default", "—"),
     "hold": ("'Without BTA, MoE models experience significant throughput degradation as sparsity increases' "
              "(documentation); the runs are described by their '3B active params' (Cerebras blog, via a "
              "summary): active parameters held", "documentation, Performance Impact")})

MOENTWINE = Figure(
    "moentwine", "Tang et al., MoEntwine, HPCA 2026 (arXiv 2510.25258)",
    "the abstract; the system and simulator through secondary digests; no section, figure or table numbers",
    {"d2d_bandwidth": "per_link", "fixed_latency": "launch_only", "comm_overlap": "none"},
    {"d2d_bandwidth": ("'die-to-die bandwidth' of 900 GB/s names the link between two dies; no injection limit per "
                       "die is stated: the literal reading (the default)", "secondary digests"),
     "fixed_latency": ("the paper's communication latency is 'volume / bandwidth + link latency × hops', simulated "
                       "with an extended ASTRA-sim: no per-call software latency (kernel launches stay)",
                       "secondary digest of arXiv 2510.25258 (AI-written review); digests of the evaluation"),
     "comm_overlap": ("per-phase communication and computation latencies reported side by side, added serially",
                      "secondary digests")})

FIGURES = {f.key: f for f in (BTA, MOENTWINE)}


def at(cfg, figure, readings=None):
    """The sweep under a figure's readings (a Figure, or {reading: option}): a reading the sweep varies is
    applied, one it sweeps as an axis (pinned) is restricted to the option, one that does not apply is left."""
    readings = registry.load() if readings is None else readings
    wanted = figure.readings if isinstance(figure, Figure) else figure
    choice, axes = {}, dict(cfg.axes)
    for name, option in wanted.items():
        st = registry.status(cfg, readings[name])
        if st.varied:
            choice[name] = option
        elif st.state == "pinned":
            for path, value in readings[name].options[option].set.items():
                if path in axes:
                    axes[path] = [value]
    moved = registry.apply(cfg, choice, readings) if choice else cfg
    return moved.model_copy(update={"axes": axes}) if axes != cfg.axes else moved


def defaults(cfg, readings=None) -> dict[str, str]:
    """{reading: default option} of every reading a sweep varies or pins: the sweep at the default readings."""
    readings = registry.load() if readings is None else readings
    return {st.reading.name: st.reading.default for st in registry.plan(cfg, readings)
            if st.state in ("varied", "pinned")}


def label(figure: Figure, readings=None) -> str:
    """'fixed_latency=launch_only (default as_gpu), d2d_bandwidth=per_link, ...': the figure's reading."""
    readings = registry.load() if readings is None else readings
    return ", ".join(f"{n}={o}" + ("" if readings[n].default == o else f" (default {readings[n].default})")
                     for n, o in figure.readings.items())
