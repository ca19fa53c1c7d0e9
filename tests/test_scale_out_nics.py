"""Per copy (DeepEP's low-latency kernels) every GPU sends and receives its network bytes through its own NIC, so
under a skewed expert popularity the hot GPU's NIC binds, at 1/8 of its server's InfiniBand; per server (the
normal kernels) the bytes spread over a server's NICs by the senders' index and the server's pool is the limit
(cost/fabric/scaleout.py, `device_nics`). Derived by hand on dgx-b200-x32 (32 servers of 8 B200, 400 GB/s of
InfiniBand a server)."""

from __future__ import annotations

import pytest

import wsemoe
from wsemoe.config import presets

from routingnoise import noise

TPD, K, H, B16 = 16, 8, 7168, 2.0


def _row(tmp_path, dispatch: str):
    # expert 0 (on GPU 0, server 0) takes 3 parts of the routed copies, every other expert 1: shares 3/258, 1/258
    hist = tmp_path / "hist.csv"
    hist.write_text("expert,tokens\n" + "".join(f"{e},{3 if e == 0 else 1}\n" for e in range(256)))
    return wsemoe.evaluate({"name": "nic", "hardware": "dgx-b200-x32", "model": "deepseek-v3",
                            "workload": {"mode": "decode", "seq_len": 4096, "tokens_per_device": TPD},
                            "mapping": {"tp": 1, "scale_out_dispatch": dispatch},
                            "balance": {"distribution": "histogram", "histogram": str(hist)}}).iloc[0]


def test_the_hot_gpus_own_nic_binds_per_copy(tmp_path):
    hw = presets.load_hardware("dgx-b200-x32")
    fixed = hw.alltoall_latency_s + hw.scale_out_latency_s
    c = TPD * K * H * B16                     # bytes of copies every GPU sends (16-bit experts: 16-bit dispatch)
    # GPU 0 receives 3/258 of every copy from the 248 GPUs of the other 31 servers; a GPU of another server sends
    # 250/258 of its copies off its server. Per GPU NIC: 400/8 = 50 GB/s.
    hot_gpu = max(248 * 3 / 258, 251 / 258) * c
    per_copy = _row(tmp_path, "per_copy")
    assert float(per_copy["moe_combine_s"]) == pytest.approx(fixed + hot_gpu / (hw.scale_out_bw_bytes_per_s / 8),
                                                             rel=1e-9)
    # the pooled server (what the model charged before: server 0 receives 10/258 of 248 GPUs' copies) is 2.4x less
    server0 = 248 * 10 / 258 * c
    assert float(per_copy["moe_combine_s"]) - fixed > 2.3 * server0 / hw.scale_out_bw_bytes_per_s
    # per server the senders' index spreads the bytes over a server's NICs: the pool binds, scaled by the share
    per_server = _row(tmp_path, "per_server")
    share = float(per_server["dispatch_scale_out_share"])
    assert float(per_server["moe_combine_s"]) == pytest.approx(fixed + share * server0 / hw.scale_out_bw_bytes_per_s,
                                                               rel=1e-9)


def test_a_gpus_nvlink_port_carries_only_its_own_servers_bytes():
    """Bytes to another server leave through the NICs (per copy: GPU to NIC over RDMA), not the NVLink port. Two
    servers of two GPUs, one byte from every GPU to every other: a GPU's port sends 1 byte (its server's other GPU),
    the NICs carry 4 a server; the port term counted all 3 a GPU sends. On dgx-b200-x32 with InfiniBand made
    2,500x faster (1e15 B/s a server) the port binds a uniform per-copy combine: GPU d's port carries its expert's
    copies from the 7 other GPUs of its server, 112 tokens picking it with chance 8/256, Binomial(112, 1/32) (mean
    3.5; a step's busiest of the 256 ports, 9.655 copies: fabric/spread.py), at 900 GB/s (it charged all the
    c·255/256 a GPU sends, 36x more; then the expected 3.5 × the busiest GPU's factor over all 4,096 tokens, 1.254:
    4.39 copies)."""
    import numpy as np
    from scipy.stats import binom
    from wsemoe.cost.fabric import patterns, peaks, topology

    t = np.ones((4, 4)) - np.eye(4)
    step, _ = peaks.step_peaks(topology.Layout("switch", 1, 4, domain=2), patterns.Dense(t), 1)
    assert (step.max_inject, step.max_eject, step.max_cross) == (1.0, 1.0, 4.0)
    hw = presets.load_hardware("dgx-b200-x32")
    row = wsemoe.evaluate({"name": "port", "hardware": {"preset": "dgx-b200-x32", "scale_out_bw_bytes_per_s": 1e15},
                           "model": "deepseek-v3", "workload": {"mode": "decode", "seq_len": 4096, "tokens_per_device": TPD},
                           "mapping": {"tp": 1, "scale_out_dispatch": "per_copy"}}).iloc[0]
    c = TPD * K * H * B16
    most = float((1.0 - binom.cdf(np.arange(113), 112, 1 / 32) ** 256).sum())
    assert most == pytest.approx(9.6553, abs=1e-4) and 7 * TPD * K / 256 == 3.5
    port = most * H * B16 / hw.port_bw_bytes_per_s
    assert port > c * 248 / 256 / (1e15 / 8)   # the GPU's own NIC at 1/8 of its server's network
    assert float(row["moe_combine_s"]) == pytest.approx(hw.alltoall_latency_s + hw.scale_out_latency_s + port,
                                                        rel=1e-9)
