"""`python -m wsemoe.cli`: the command line."""

from wsemoe.cli import app

app()
