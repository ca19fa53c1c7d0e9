"""Weights entering a weight-streaming wafer at its edge and crossing the PE fabric: the edge's rate, the stream's
time through it, and the crossing's link loads (to check that it never loads a link more than the channel feeding
it). Scalars or arrays that broadcast; numpy only.

The host I/O meets the fabric at routers of PEs on the west and east edges, `io_channels_per_edge` on each,
spaced evenly along the rows (Cerebras SDK, "Host Runtime and Tensor Streaming": 60 per edge on WSE-2, 62 on
WSE-3, roughly 16 rows apart). A channel's router port is a PE link: it takes one wavelet per cycle into the
fabric (4 bytes a cycle; a link `link_bytes_per_cycle` wide takes that over 4 as many), and a 16-bit value travels
in a wavelet of its own (`fabric.wavelets`, which counts link cycles), so the edge carries

    edge rate = 2 · io_channels_per_edge · clock_hz            link cycles per second, each way

Every PE takes its weights from the nearest channel (the west half from the west edge, each band of rows from its
channel), X first along the channel's row, then Y in the PE's column. Each directed link then carries only weights
of the one channel whose band it lies in, so no link carries more than the busiest channel's port (`crossing_loads`
computes it exactly on a small fabric; tests hold it to that). The stream is continuous across layers (the next
layer's weights flow while this one computes), so the path to the farthest PE (half the width and half a band,
386 hops on WSE-2, 0.35 µs) is a pipeline fill paid once per pass, not per layer: it is left out.
"""

from __future__ import annotations

import numpy as np

from wsemoe.cost.fabric import patterns, topology
from wsemoe.cost.wafer.fabric import wavelets


def channels(pe):
    """I/O channels feeding the fabric: west and east edges together."""
    return 2.0 * np.asarray(pe.io_channels_per_edge, dtype=float)


def rate(pe):
    """Link cycles per second the edge takes into the fabric (and gives out of it): one per channel and cycle."""
    return channels(pe) * pe.clock_hz


def stream_wavelets(params, nbytes, pe):
    """Wavelets that carry `params` weights (`nbytes` together, at their mean width): one per value of up to a
    wavelet's width (`fabric.wavelets`), so 8-bit weights take as many wavelets as 16-bit ones."""
    params = np.asarray(params, dtype=float)
    per = np.divide(nbytes, params, out=np.zeros(np.broadcast_shapes(np.shape(nbytes), params.shape)),
                    where=params > 0)
    return wavelets(params, per, pe)


def stream_io(pe, passes_in, params, nbytes, kept_bytes, act_bytes, grad_bytes, train: bool) -> tuple:
    """(wavelets in, wavelets out) of a stage's stream per layer and micro-batch. In: the weights `passes_in` times
    and the kept activations once; out (training): one gradient per parameter and the kept activations, as the
    wafer I/O carries them (cost/stagecost.io_time)."""
    kept = np.asarray(kept_bytes, dtype=float) / np.asarray(act_bytes, dtype=float)
    w_in = passes_in * stream_wavelets(params, nbytes, pe) + wavelets(kept, act_bytes, pe)
    w_out = (wavelets(params, grad_bytes, pe) + wavelets(kept, act_bytes, pe)) if train else 0.0 * w_in
    return w_in, w_out


def stream_seconds(pe, *stream) -> np.ndarray:
    """Seconds a stage's stream (`stream_io`'s arguments) spends at the edge per layer and micro-batch: full duplex,
    the larger direction binds."""
    return np.maximum(*stream_io(pe, *stream)) / rate(pe)


def feeders(rows: int, cols: int, per_edge: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, column) of the channel feeding each PE of a rows × cols fabric (row-major): the nearest edge, and
    the channel of the PE's band of rows (channel i at row ⌊(i + ½)·rows / per_edge⌋)."""
    r, c = np.divmod(np.arange(rows * cols), cols)
    band = np.minimum(r * per_edge // rows, per_edge - 1)
    return np.floor((band + 0.5) * rows / per_edge).astype(np.int64), np.where(2 * c < cols, 0, cols - 1)


def crossing_loads(rows: int, cols: int, per_edge: int):
    """Link loads (wavelets per wavelet each PE receives) of one stream that gives every PE of a rows × cols fabric
    one wavelet from its channel, routed XY (`cost.fabric.mesh`); and each channel's port load (wavelets it injects,
    including those its own PE keeps)."""
    fr, fc = feeders(rows, cols, per_edge)
    src = fr * cols + fc
    t = patterns.Transfers(rows * cols, src, np.arange(rows * cols), np.ones(rows * cols))
    return t.loads(topology.Layout("mesh", rows, cols)), np.bincount(src, minlength=rows * cols)
