"""The sweep machinery: design frames, the engine over the cost model, chunks, executors, runs and results."""
