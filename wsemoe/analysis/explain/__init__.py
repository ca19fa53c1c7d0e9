"""Explanation: one point broken into terms that add up (`point`, `addsup`; `sramsum` for SRAM serving), rows of a results folder by question
(`query`, `where`), several results folders side by side (`crossrun`) and one point's traffic (`traffic_export`)."""
