"""Cost-model invariants: the registry of physical laws (`laws`, `serving_laws`, `streaming_laws`,
`precision_laws`), the cases they are checked on and the suite that runs them over configs."""
