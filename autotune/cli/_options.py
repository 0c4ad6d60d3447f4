"""What the subcommands share: the parser class, the help format, and the options of the
settings table (:mod:`autotune.settings`) as argparse arguments.

Each shared option is declared once, in that table, with its kind and default; a subcommand
says only what the option means for it (``help``).
"""

from __future__ import annotations

import argparse
import difflib
import os
from typing import TYPE_CHECKING, Any, NoReturn

from autotune._secrets import mask_url
from autotune.errors import UsageError
from autotune.settings import BY_FLAG, KINDS, RuleError, storage_url

if TYPE_CHECKING:
    from autotune.trials import TrialRunner

_UNSET = object()


def argtype(kind: str) -> Any:
    """The argparse type of a kind of value (:data:`autotune.settings.KINDS`): its rule's
    message becomes argparse's, so a bad value is refused with the subcommand's usage."""
    parse = KINDS[kind].parse

    def read(text: str) -> Any:
        try:
            return parse(text)
        except RuleError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    read.__name__ = kind  # argparse names the type in its messages
    return read


def add(p: argparse.ArgumentParser, flag: str, *also: str, **overrides: Any) -> None:
    """Adds the option ``flag`` as the settings table declares it (kind, default, metavar,
    choices, help), also spelled ``also`` (``-o``); ``overrides`` replace what this subcommand
    says differently (usually ``help``)."""
    option = BY_FLAG[flag]
    kwargs: dict[str, Any] = {"help": option.help}
    if not option.positional:
        kwargs["dest"] = option.name
    if option.action is not None:
        kwargs["action"] = option.action
    else:
        if option.kind is not None:
            kwargs["type"] = argtype(option.kind)
        if option.choices is not None:
            kwargs["choices"] = option.choices
        if option.default is not None:
            kwargs["default"] = option.default
        if option.metavar is not None:
            kwargs["metavar"] = option.metavar
    kwargs.update(overrides)
    p.add_argument(*also, flag, **kwargs)


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Shows every option's default, as argparse's ArgumentDefaultsHelpFormatter does, but only
    where there is one (no "(default: None)" for options that are off unless given)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if "%(default)" in text or not action.option_strings or default is argparse.SUPPRESS:
            return text
        if default is None or isinstance(default, bool) and action.nargs == 0:
            return text  # off unless given, or a --no-X switch whose default is "on"
        return f"{text} (default: %(default)s)"


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors suggest the option or command that was probably meant."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        if message.startswith("argument COMMAND: invalid choice:"):
            message += _suggestion(message.split("'")[1], self._choices())
        super().error(message)

    def unrecognized(self, extras: list[str]) -> NoReturn:
        """Refuses arguments this parser does not know, naming a close option for each."""
        known = [s for a in self._actions for s in a.option_strings if s.startswith("--")]
        hints = []
        for extra in extras:
            near = _suggestion(extra.split("=", 1)[0], known) if extra.startswith("-") else ""
            hints.append(f"{extra}{near}")
        self.error(f"unrecognized arguments: {', '.join(hints)}")

    def given(self, argv: list[str]) -> frozenset[str]:
        """The destinations of the options ``argv`` sets explicitly (not by their default)."""
        dests = {a.dest for a in self._actions if a.dest is not argparse.SUPPRESS}
        # An appending option (--allow-unsafe-knob) adds to what it finds: it starts from None,
        # which it copies as an empty list; any other option starts from a sentinel it replaces.
        appending = {a.dest for a in self._actions if isinstance(a, argparse._AppendAction)}
        unset = {d: None if d in appending else _UNSET for d in dests}
        parsed, _ = self.parse_known_args(argv, argparse.Namespace(**unset))
        return frozenset(d for d in dests if getattr(parsed, d, unset[d]) is not unset[d])

    def _choices(self) -> list[str]:
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                return list(action.choices)
        return []


def _suggestion(word: str, candidates: list[str]) -> str:
    near = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    return f" (did you mean {near[0]}?)" if near else ""


def add_subcommand(
    sub: argparse._SubParsersAction, name: str, help: str, description: str
) -> Parser:
    """A subcommand's parser (a :class:`Parser`, as its parent)."""
    parser = sub.add_parser(name, help=help, description=description)
    assert isinstance(parser, Parser)
    return parser


def add_device(p: argparse.ArgumentParser, help: str) -> None:
    add(p, "--device", help=help)


def add_compile_budget(p: argparse.ArgumentParser, help: str) -> None:
    add(p, "--compile-budget", help=help)


def add_measure_seconds(p: argparse.ArgumentParser, help: str) -> None:
    add(p, "--measure-seconds", help=help)


def add_precision(p: argparse.ArgumentParser, subject: str) -> None:
    help = BY_FLAG["--precision"].help.replace("finalists", subject, 1)
    add(p, "--precision", help=help)


def add_seed(p: argparse.ArgumentParser, help: str, default: Any = _UNSET) -> None:
    add(p, "--seed", help=help, **({} if default is _UNSET else {"default": default}))


def add_storage(p: argparse.ArgumentParser) -> None:
    add(p, "--storage")


def storage(args: argparse.Namespace) -> str:
    """The storage URL: --storage, else $AUTOTUNE_STORAGE (keeps passwords off the command
    line, where ps shows them), else the SQLite file in this folder."""
    return storage_url(args.storage)


def add_trial_processes(p: argparse.ArgumentParser) -> None:
    """How this process runs its trials: jobs, trial host and kernel cache."""
    for flag in ("--jobs", "--trial-host", "--cache-dir", "--cache-limit"):
        add(p, flag)


def add_joining(p: argparse.ArgumentParser) -> None:
    """What a process may differ in from the study it joins."""
    add(p, "--allow-version-mismatch")
    add(p, "--trust-model-path")


def add_model(p: argparse.ArgumentParser, runs: str) -> None:
    """The model file a process that joins a study runs: the operator names it, the database
    never does (``$AUTOTUNE_MODEL`` for a deployment that sets it once)."""
    p.add_argument(
        "--model", metavar="PATH", default=os.environ.get("AUTOTUNE_MODEL") or None,
        help=f"the model file {runs} (default: $AUTOTUNE_MODEL): the study's database row "
        "says where it was, but autotune never runs a file a database names; its content "
        "must be the study's (the SHA-256 stored with it)",
    )  # fmt: skip


def add_allow_unsafe(p: argparse.ArgumentParser, what: str) -> None:
    """Knobs refused from data that the operator vouches for, by name."""
    p.add_argument(
        "--allow-unsafe-knob", dest="allow_unsafe_knobs", action="append", default=[],
        type=_knob_param, metavar="KNOB",
        help=f"let {what} set this knob although autotune never takes it from data: it names "
        "a program, a compiler or its flags, a file or a folder, or turns on debug output "
        "(e.g. inductor.cpp.cxx); or use a backend beyond inductor, aot_eager, eager and "
        "openvino (backend.NAME); repeat for several. Only for configs you wrote or checked",
    )  # fmt: skip


def _knob_param(text: str) -> str:
    layer, _, name = text.partition(".")
    if layer not in ("inductor", "dynamo", "functorch", "backend") or not name:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a knob: write inductor.NAME, dynamo.NAME or functorch.NAME "
            "(inductor.cpp.cxx), or backend.NAME for a backend"
        )
    return text


def add_out(p: argparse.ArgumentParser) -> None:
    add(p, "--out")


def add_debug(p: argparse.ArgumentParser) -> None:
    add(p, "--debug")


def add_quiet(p: argparse.ArgumentParser, help: str) -> None:
    add(p, "--quiet", help=help)


def trial_runner() -> TrialRunner | None:
    """The trial runner ``$AUTOTUNE_TRIAL_RUNNER`` names, or None (see
    :func:`autotune.search.trial_runner`)."""
    from autotune.search import trial_runner as named

    return named()


def add_study(p: argparse.ArgumentParser, help: str, only: bool = False) -> None:
    """``--study``; with ``only``, it may be left out when the storage holds one study (read
    it with :func:`study`)."""
    if only:
        add(p, "--study", help=f"{help} (default: the storage's study, when it holds one)")
    else:
        add(p, "--study", required=True, help=help)


def study(args: argparse.Namespace) -> str:
    """``--study``, or the one study the storage holds."""
    if args.study:
        return str(args.study)
    from autotune.reports import study_names

    url = storage(args)
    names = study_names(url)
    if len(names) == 1:
        return names[0]
    held = (
        f"holds {len(names)} studies ({', '.join(names[:10])}{', ...' if len(names) > 10 else ''})"
        if names
        else "holds no study"
    )
    raise UsageError(
        f"--study is needed: the storage {mask_url(url)} {held}; name one with --study NAME "
        "(`autotune studies` lists them)."
    )


def add_for_device(p: argparse.ArgumentParser) -> None:
    add(p, "--for-device")


def require_folder(option: str, path: str) -> None:
    """Refuses a file to write whose folder does not exist, before any work is done."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UsageError(
            f"{option} {path}: its folder {folder} does not exist; create it or write the "
            "file elsewhere."
        )
