"""Studies built on the sweep engine: one point broken into its terms, and (later) sensitivity and search."""
