"""Each HGX server's scale-out network per direction, from its NICs: 8 GPUs, one NIC each (H100, H200, B200:
ConnectX-7 at 400 Gb/s; B300: ConnectX-8 SuperNIC at 800 Gb/s, NVIDIA DGX B300 user guide). The field is a
server's (a scale-up domain's), not a GPU's: 8 NICs × rate / 8 bits."""

from __future__ import annotations

import pytest

from wsemoe.config import presets


@pytest.mark.parametrize("name,gbit_per_nic", [("h100-sxm", 400), ("h200-sxm", 400), ("b200-sxm", 400),
                                               ("dgx-b200-x32", 400), ("b300-sxm", 800)])
def test_a_servers_network_is_its_eight_nics(name, gbit_per_nic):
    hw = presets.load_hardware(name)
    assert hw.scale_up_size == 8
    assert hw.scale_out_bw_bytes_per_s == pytest.approx(8 * gbit_per_nic * 1e9 / 8)
