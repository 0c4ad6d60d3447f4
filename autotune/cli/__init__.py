"""The ``autotune`` command: one module per subcommand, each parsing its arguments, calling the
library once and printing what it returned.

Every subcommand module defines ``add_parser(subparsers)`` and ``run(args) -> int``. Bad input
raises :class:`~autotune.errors.UsageError`: one paragraph on stderr, exit code 2, the traceback
only with ``--debug``.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

from autotune import _faults, _process
from autotune._printable import say
from autotune._secrets import mask_text
from autotune.cli import _study_file
from autotune.cli import cache as cache
from autotune.cli import export as export
from autotune.cli import finalize as finalize
from autotune.cli import merge as merge
from autotune.cli import report as report
from autotune.cli import search as search
from autotune.cli import show as show
from autotune.cli import spaces as spaces
from autotune.cli import studies as studies
from autotune.cli import verify as verify
from autotune.cli import worker as worker
from autotune.cli._options import Parser
from autotune.errors import UsageError
from autotune.settings import STORAGE_ENV

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a command killed by it
COMMANDS: dict[str, ModuleType] = {
    "search": search,
    "worker": worker,
    "finalize": finalize,
    "report": report,
    "studies": studies,
    "export": export,
    "show": show,
    "cache": cache,
    "merge": merge,
    "spaces": spaces,
    "verify": verify,
}


class Terminated(KeyboardInterrupt):
    """SIGTERM (Slurm's and Kubernetes' stop): handled like Ctrl-C, with the command's own
    exit code (a worker that stopped cleanly exits 0)."""


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser, commands = build_parser()
    args = parse(parser, commands, argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return EXIT_USAGE
    signal.signal(signal.SIGTERM, _terminate)
    before = _process.tracked()  # an in-process caller's own children are not ours to kill
    command = COMMANDS[args.command]
    try:
        return int(command.run(args))
    except UsageError as exc:
        # Masked as a last line of defence: no message may carry a storage's password.
        urls = _urls(args)
        if args.debug:
            say(mask_text(traceback.format_exc(), urls), end="", file=sys.stderr)
        say(f"autotune: error: {mask_text(exc, urls)}", file=sys.stderr)
        return EXIT_USAGE
    except Terminated:
        say(f"autotune: terminated; {command.INTERRUPTED}", file=sys.stderr)
        return int(getattr(command, "TERMINATED_EXIT", EXIT_INTERRUPTED))
    except KeyboardInterrupt:
        say(f"autotune: interrupted; {command.INTERRUPTED}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`autotune report | head`): stop quietly, as a pipe expects;
        # stdout goes to /dev/null so that the interpreter's final flush cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except Exception as exc:  # a fault the user can cause is one paragraph; a bug is raised
        said = _faults.paragraph(exc)
        if said is None:
            raise
        urls = _urls(args)
        if args.debug:
            say(mask_text(traceback.format_exc(), urls), end="", file=sys.stderr)
        say(f"autotune: error: {mask_text(said, urls)}", file=sys.stderr)
        return EXIT_USAGE
    finally:
        _process.kill_all(keep=before)


def build_parser() -> tuple[Parser, dict[str, Parser]]:
    """The top-level parser and each subcommand's own."""
    from autotune import __version__

    parser = Parser(
        prog="autotune",
        description="Search torch.compile configurations on this machine and emit the best.",
    )
    parser.add_argument("--version", action="version", version=f"autotune {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands = {name: module.add_parser(sub) for name, module in COMMANDS.items()}
    return parser, commands


def parse(parser: Parser, commands: dict[str, Parser], argv: list[str]) -> argparse.Namespace:
    """Parses ``argv``; an option the subcommand does not know is reported with the
    subcommand's usage (and a "did you mean"), not the top-level one. ``search`` of a study file
    (*.toml) takes the file's options where the command line gives none, as given."""
    args, extras = parser.parse_known_args(argv)
    command = getattr(args, "command", None)
    if extras:
        (commands[command] if command else parser).unrecognized(extras)
    if command:
        args.given = commands[command].given(argv[argv.index(command) + 1 :])
    if command == "search" and str(args.model).endswith(".toml"):
        try:
            model, values = _study_file.read(Path(args.model))
        except UsageError as exc:
            commands[command].error(str(exc))
        vars(args).update({k: v for k, v in values.items() if k not in args.given}, model=model)
        args.given = args.given | set(values)
    args.argv = argv
    return args


def _urls(args: argparse.Namespace) -> list[str]:
    """The storage URLs a command was given, whose secrets no message may show."""
    named = [getattr(args, "storage", None), getattr(args, "start_from_storage", None)]
    return [u for u in [*named, os.environ.get(STORAGE_ENV)] if isinstance(u, str)]


def _terminate(signum: int, frame: Any) -> None:
    raise Terminated


__all__ = ["COMMANDS", "Terminated", "build_parser", "main", "parse"]
