"""The commands' bodies: each takes what typer parsed and returns a `Reply`; `cli.py` prints it and exits.

Three modules by what a command works on: `model` runs the cost model (sweep, check, eval, schema,
presets), `results` reads results folders (show, plot, compare, report, ls), `study` studies the model
itself (validate, invariants, sensitivity, calibrate). Each module lists its commands in `COMMANDS`.
"""
