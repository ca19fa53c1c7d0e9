"""Paper-ready figures: one style, one results view, one module per figure family."""
