"""Node physics: parameter counts, FLOPs, memory, weights and the rooflines of stages."""
