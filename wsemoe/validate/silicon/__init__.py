"""Measured GPU serving runs (AIConfigurator's silicon_sample.csv format) against the GPU serving model.

`reader` reads and resolves a file (systems, models by Hugging Face id, layouts, formats), `fit` fits the
per-backend software stack on given runs (with bootstrap spread) and refits leaving groups out, `accuracy`
computes per-run predictions and MAPE per group. `wsemoe validate --silicon FILE` drives them.
"""
