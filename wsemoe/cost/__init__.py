"""Cost model: numpy-only physics of compute, memory, mesh and steps."""
