"""Studies built on the sweep engine: one point broken into its terms, and the cost-model invariants
(a registry of physical laws checked on whole frames of users' configs)."""
