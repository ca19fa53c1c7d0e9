"""Results on disk: the one guarded writer every command uses, ownership records (ledgers), verified reads,
manifests, part files, partial runs, columnar blocks, CSV tables and the inventory of a results root.

Nothing here evaluates the cost model; recomputing a damaged part (`sweep/repair.py`) is the sweep engine's job."""
