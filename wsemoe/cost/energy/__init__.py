"""Energy and cost per token: a consumer of the terms the cost model already computes (FLOPs, weight-path
bytes, communication, step time), priced by the hardware's energy figures (specs/energy.py).

`traffic` turns a point's columns into what was done per step on each tier (FLOPs at 16-bit-equivalent, bytes
read from SRAM and node memory, byte-hops on the node fabric, bytes off the wafer or domain); `columns` prices
them bottom-up (tiers that add up to the total), beside the top-down view (rated power × a utilisation-
dependent fraction × time) and the cost per million tokens. docs/energy.md derives every term.
"""
