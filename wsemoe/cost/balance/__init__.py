"""Expert-load balance: popularity, skew, replicas and token splits, and the migration that rebalancing costs."""
