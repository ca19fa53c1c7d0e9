"""The wafer at PE level: per-PE SRAM, the fabric between PEs, operators on PE regions, placement and serving."""
