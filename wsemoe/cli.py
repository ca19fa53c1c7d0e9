"""Command line: the typer app over the commands of `wsemoe.commands`; the only module that prints or exits.

A command returns a `Reply` (what to print, where, the exit code); here it is printed, and every failure
becomes one line on stderr and a non-zero exit, never a traceback. Heavy libraries (numpy, pandas,
pydantic, matplotlib, rich) are imported inside the commands that need them, so `wsemoe --help` and
`wsemoe check` start fast.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import time

import typer
from typer.core import TyperGroup

from wsemoe.commands import model, results, study
from wsemoe.commands.reply import Reply
from wsemoe.errors import WsemoeError, os_error, printable
from wsemoe.version import __version__


def _one_line(exc: Exception) -> None:
    """Usage errors (unknown option, bad or missing value) print as one line, like every other error."""
    if isinstance(exc, typer.TyperException) and hasattr(exc, "show") and type(exc).__name__ != "NoArgsIsHelpError":
        text = " ".join(exc.format_message().split())
        exc.show = lambda file=None: typer.echo(f"error: {text} (see --help)", err=True)


def _refuse_empty(args) -> None:
    """An empty argument (`--results ""`, `--output=`, often an unset shell variable) names no file, value or
    command: refused before parsing, where a path option would read it as the current folder."""
    for i, arg in enumerate(args):
        if arg == "" or (arg.startswith("--") and arg.endswith("=")):
            where = arg[:-1] if arg else (args[i - 1] if i and args[i - 1].startswith("-") else "an argument")
            raise typer.BadParameter(f"{where} is empty: it names no file, value or command")


class OneLineGroup(TyperGroup):
    """The command group, with usage errors of the group and of every command shown in one line."""

    def make_context(self, info_name, args, *rest, **kwargs):
        try:
            _refuse_empty(args)
            return super().make_context(info_name, args, *rest, **kwargs)
        except typer.TyperException as exc:
            _one_line(exc)
            raise

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except typer.TyperException as exc:
            _one_line(exc)
            raise


app = typer.Typer(cls=OneLineGroup, no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None,
                  help="Design-space explorer for Mixture-of-Experts models on wafer-scale processors.")


def fail(message: str, code: int = 2):
    typer.echo(f"error: {printable(message)}", err=True)
    raise typer.Exit(code)


def deliver(reply: Reply) -> None:
    """Print a command's reply in order, then its error line, and exit with its code."""
    from_console = None
    for kind, item, opts in reply.items:  # text from results is shown escaped (report.terminal.console.shown)
        if kind == "text":
            typer.echo(printable(item, lines=True), err=bool(opts))
        elif kind == "raw":
            sys.stdout.write(printable(item, lines=True))
        else:
            if from_console is None:
                from wsemoe.report.terminal.console import console

                from_console = console()
            from_console.print(item, **opts)
    if reply.error is not None:
        fail(reply.error, reply.code)
    if reply.code:
        raise typer.Exit(reply.code)


INTERRUPTED = "interrupted; no file was left half-written"
RESUMABLE = {"sweep": " (a sweep continues from its finished chunks with --resume)"}  # commands that keep parts
HARD_EXIT_S = 3.0  # a signal this long after the first one ends the process at once
_first_signal: list[float] = []


_interrupted_line: list[str] = [INTERRUPTED]   # the running command's: only a sweep can be resumed


def _interrupt(signum, frame):
    """SIGINT and SIGTERM: the first stops the command (KeyboardInterrupt: workers are killed, finished parts
    kept); those that follow within HARD_EXIT_S are ignored, so the clean-up they would interrupt ends
    promptly; one after that ends the process at once (parts on disk are whole: they are renamed in)."""
    if not _first_signal:
        _first_signal.append(time.monotonic())
        raise KeyboardInterrupt
    if time.monotonic() - _first_signal[0] > HARD_EXIT_S:
        os.write(2, f"error: {_interrupted_line[0]}\n".encode())
        os._exit(130)


def _os_error_in(exc: BaseException) -> OSError | None:
    """The OSError behind an exception (itself, or what caused it), if any."""
    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, OSError):
            return exc
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


def _interrupted():
    """End an interrupted command: one line, exit 130, and no second signal breaking into the exit."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    fail(_interrupted_line[0], 130)


def guarded(fn):
    """Run a command and print its reply; turn every failure into one line on stderr and a non-zero exit."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        _first_signal.clear()
        _interrupted_line[0] = INTERRUPTED + RESUMABLE.get(fn.__name__, "")
        for sig in (signal.SIGINT, signal.SIGTERM):  # a polite kill ends like Ctrl-C: one line, progress kept
            signal.signal(sig, _interrupt)
        try:
            reply = fn(*args, **kwargs)
        except typer.Exit:
            raise
        except WsemoeError as exc:
            fail(exc.line())
        except KeyboardInterrupt:
            _interrupted()
        except Exception as exc:  # a bug, but users still get one line
            if _first_signal:   # our KeyboardInterrupt, re-raised as another error by a library it interrupted
                _interrupted()  # (numpy's comparison of row views turns it into a TypeError)
            if os.environ.get("WSEMOE_DEBUG"):
                raise
            cause = _os_error_in(exc)
            if cause is not None:  # the system refused something a writer or reader did not expect
                fail(os_error(cause).line())
            fail(f"internal error ({type(exc).__name__}: {exc}); rerun with WSEMOE_DEBUG=1 for a traceback", 1)
        try:
            deliver(reply)
        except BrokenPipeError:  # the reader stopped reading (`| head`): nothing is left to say to it
            raise typer.Exit(1)
        except OSError as exc:  # the output could not be written (a full disk, a closed terminal)
            fail(os_error(exc, doing="write the output").line(), 1)
    return wrapper


def _version(value: bool):
    if value:
        typer.echo(f"wsemoe {__version__}")
        raise typer.Exit()


@app.callback()
def main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                      help="print the version and exit")):
    """Design-space explorer for Mixture-of-Experts models on wafer-scale processors."""
    if sys.stdout is None:   # started with its output closed (`>&-`): every answer would be lost, so none is made
        if sys.stderr is not None:
            sys.stderr.write("error: standard output is closed; wsemoe writes its answer there (give it a file or "
                             "a pipe); nothing was done\n")
        raise typer.Exit(1)


# Runs the model first (sweep, check, eval, schema, presets), then reads results (show, plot, compare, report,
# ls), then studies the model itself (validate, invariants, sensitivity, calibrate): the order of --help.
for _module in (model, results, study):
    for _name, _fn in _module.COMMANDS:
        app.command(_name)(guarded(_fn))


if __name__ == "__main__":  # pragma: no cover
    app()
