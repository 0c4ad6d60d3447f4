"""OpenVINO's ``torch.compile`` backend as an autotune backend: its options, checked and
turned into the backend's own (torch and the standard library at import; openvino only when
used). A trial makes its silent fallbacks visible (:mod:`autotune.trials._openvino_watch`).

``torch.compile(model, backend="openvino", options=...)`` converts each Dynamo graph to
OpenVINO. It never fails loudly, it falls back:

* ops that OpenVINO does not support (``op_support.OperatorSupport``) stay outside the fused
  ``fused_N`` partitions and run as torch ops between them;
* a partition whose conversion or compilation raises on its first call runs in eager torch from
  then on (``execute.OpenVINOGraphModule.perm_fallback``);
* a graph whose retrace or partitioning raises is handed whole to Inductor
  (``backend.fx_openvino`` calls ``compile_fx``); the exception is logged at DEBUG only.

``autotune.trials._openvino_watch.watch`` wraps the functions the backend module calls to see
each of these.

A config's ``options`` for this backend are flat (see :data:`OPTIONS`): upper-case keys are
OpenVINO properties (``PERFORMANCE_HINT``...) that :func:`compile_options` moves into the
backend's ``config`` sub-dict, lower-case keys are options of the backend itself::

    {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_PRECISION_HINT": "f32", "model_caching": True}

OpenVINO's CPU plugin gives the calling thread an alternate signal stack of its own for the
plugin and for each compiled model (``ov::intel_cpu::SigAltStackSetup``, seen in openvino 2026.4),
and puts back the one it found when that object is destroyed. Destroyed out of order (a model
freed, ``torch._dynamo.reset()``, :func:`reset`), the thread is left on a stack that was unmapped,
and the next Python signal handler run there (Ctrl-C, a server's SIGTERM: CPython installs
every handler with ``SA_ONSTACK``) ends the process with SIGSEGV instead. Every call of a region
autotune compiles for this backend runs in :func:`signal_stack_kept`, so each object OpenVINO
creates finds, and puts back, the thread's own stack.

Nothing a config sets names a file or a program: the only path, ``cache_dir``, is autotune's.
Importing this module registers nothing (openvino's own entry point makes ``"openvino"`` a
backend name once the package is installed).
"""

from __future__ import annotations

import contextlib
import ctypes
import difflib
import importlib.metadata
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BACKEND_MODULE", "EXECUTE_MODULE", "OPTIONS", "OptionSpec", "compile_options",
    "option_problems", "reset", "signal_stack_kept", "version",
]  # fmt: skip

BACKEND_MODULE = "openvino.frontend.pytorch.torchdynamo.backend"
EXECUTE_MODULE = "openvino.frontend.pytorch.torchdynamo.execute"


def version() -> str | None:
    """The installed openvino version (``"2026.4.1"``), or ``None`` when it is not installed.

    Reads the package metadata; openvino itself is not imported.
    """
    try:
        return importlib.metadata.version("openvino")
    except importlib.metadata.PackageNotFoundError:
        return None


@dataclass(frozen=True)
class OptionSpec:
    """One option a config may set for the openvino backend.

    Attributes:
        name: The key in ``CompileConfig.options``.
        property: True for an OpenVINO property (goes into the backend's ``config`` sub-dict),
            False for an option of the backend itself (goes to the top level).
        choices: The allowed strings, if the option takes strings.
        positive_int: Whether a positive ``int`` is allowed.
        boolean: Whether the option is a ``bool``.
        help: One line on what it does.
    """

    name: str
    property: bool
    choices: tuple[str, ...] = ()
    positive_int: bool = False
    boolean: bool = False
    help: str = ""

    def expected(self) -> str:
        """What a value must be, in words (``"one of 'LATENCY', 'THROUGHPUT'"``)."""
        parts = []
        if self.choices:
            parts.append("one of " + ", ".join(repr(c) for c in self.choices))
        if self.positive_int:
            parts.append("a positive int")
        if self.boolean:
            parts.append("a bool")
        return " or ".join(parts)

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` is allowed (bools are never ints here, ints never bools)."""
        if self.boolean:
            return isinstance(value, bool)
        if isinstance(value, bool):
            return False
        if self.positive_int and isinstance(value, int) and value > 0:
            return True
        return isinstance(value, str) and value in self.choices


_SPECS = (
    OptionSpec(
        "PERFORMANCE_HINT", True, ("LATENCY", "THROUGHPUT"),
        help="OpenVINO CPU plugin preset: few streams for latency, many for throughput",
    ),
    OptionSpec(
        "INFERENCE_PRECISION_HINT", True, ("f32", "bf16"),
        help="compute precision; the CPU plugin defaults to bf16 on AMX/AVX512-BF16 CPUs",
    ),
    OptionSpec(
        "NUM_STREAMS", True, ("AUTO",), positive_int=True,
        help="parallel inference streams of each compiled partition",
    ),
    OptionSpec(
        "INFERENCE_NUM_THREADS", True, positive_int=True,
        help="threads the CPU plugin uses for each compiled partition",
    ),
    OptionSpec(
        "device", False, ("CPU", "GPU", "NPU"),
        help="OpenVINO device; the backend's default is CPU",
    ),
    OptionSpec(
        "model_caching", False, boolean=True,
        help="cache converted models and compiled blobs under autotune's cache_dir",
    ),
    OptionSpec(
        "aot_autograd", False, boolean=True,
        help="trace through AOTAutograd (params frozen as constants) instead of make_fx",
    ),
)  # fmt: skip

OPTIONS: Mapping[str, OptionSpec] = {spec.name: spec for spec in _SPECS}
"""The options a config may set for ``backend="openvino"``, by name."""

# Options the backend takes that a config may not set, and why.
_REFUSED = {
    "cache_dir": "names a folder; autotune sets it itself",
    "CACHE_DIR": "names a folder; autotune sets it itself",
    "config": "give OpenVINO properties flat (e.g. PERFORMANCE_HINT), not as a 'config' dict",
    "decompositions": "holds ops to decompose; not searchable",
    "disabled_ops": "an unknown op name makes the whole graph fall back to Inductor",
    "testing": "exists for openvino's own tests",
}


# Why a config (a file, a space, a row) may not turn model_caching on: it is what
# compile_options takes from autotune itself, with a folder of autotune's choosing.
_NOT_FROM_A_CONFIG = {
    "model_caching": (
        "autotune gives the backend no cache folder in a config's compile (apply, trials), "
        "and with openvino 2026.4 and torch 2.13 a converted model read back from it runs "
        "eager; leave it out"
    ),
}


def option_problems(options: Any, *, from_config: bool = True) -> list[str]:
    """Every problem with a config's openvino options, one line each (empty when valid).

    Args:
        options: ``CompileConfig.options`` of a config whose backend is ``"openvino"``.
        from_config: The options come from a config (a file, a space, a row); False for what
            autotune itself hands :func:`compile_options` (``model_caching`` with its folder).

    Returns:
        Lines such as ``"openvino.NUM_STREAMS: expected one of 'AUTO' or a positive int,
        got 0"`` or ``"openvino.performance_hint: unknown option; did you mean
        PERFORMANCE_HINT?"``.
    """
    if not isinstance(options, Mapping):
        return [f"openvino: options must be a dict, got {type(options).__name__}"]
    problems = []
    for name in sorted(options, key=str):
        value = options[name]
        spec = OPTIONS.get(name) if isinstance(name, str) else None
        if spec is not None and from_config and name in _NOT_FROM_A_CONFIG and value is True:
            problems.append(f"openvino.{name}: not allowed: {_NOT_FROM_A_CONFIG[name]}")
        elif spec is not None:
            if not spec.accepts(value):
                problems.append(f"openvino.{name}: expected {spec.expected()}, got {value!r}")
        elif name in _REFUSED:
            problems.append(f"openvino.{name}: not allowed: {_REFUSED[name]}")
        else:
            problems.append(f"openvino.{name}: unknown option{_did_you_mean(str(name))}")
    return problems


def _did_you_mean(name: str) -> str:
    by_fold = {known.casefold(): known for known in OPTIONS}
    close = difflib.get_close_matches(name.casefold(), list(by_fold), n=1, cutoff=0.6)
    if close:
        return f"; did you mean {by_fold[close[0]]}?"
    return f"; known: {', '.join(sorted(OPTIONS))}"


def compile_options(options: Mapping[str, Any], cache_dir: str | None) -> dict[str, Any]:
    """What ``torch.compile(..., backend="openvino", options=...)`` gets for a config.

    Args:
        options: ``CompileConfig.options`` (flat, see :data:`OPTIONS`).
        cache_dir: The folder autotune keeps this backend's model cache in; used only when
            ``model_caching`` is on (the backend would otherwise write to ``./cache``).

    Returns:
        A fresh dict, e.g. ``{"device": "CPU", "config": {"PERFORMANCE_HINT": "LATENCY"},
        "model_caching": True, "cache_dir": "/.../openvino"}``; the backend writes into its
        ``config`` dict, so each call returns a new one.

    Raises:
        ValueError: When the options have problems (:func:`option_problems`), or
            ``model_caching`` is on and ``cache_dir`` is None.
    """
    problems = option_problems(options, from_config=False)
    if problems:
        raise ValueError("invalid openvino options:\n  " + "\n  ".join(problems))
    out: dict[str, Any] = {"device": options.get("device", "CPU")}
    config: dict[str, str] = {}
    for name, value in options.items():
        if OPTIONS[name].property:
            config[name] = str(value)
    out["config"] = config
    if options.get("aot_autograd"):
        out["aot_autograd"] = True
    if options.get("model_caching"):
        if cache_dir is None:
            raise ValueError("openvino.model_caching needs a cache_dir (autotune sets it)")
        out["model_caching"] = True
        out["cache_dir"] = str(cache_dir)
    return out


def reset() -> None:
    """Clears the openvino backend's process-wide state between trials.

    The backend keeps compiled partitions in module-level caches keyed by partition number
    and graph id, and once a graph was compiled with ``aot_autograd`` it applies that graph's
    options to every later graph of the process (``backend.openvino_options``). Call this
    together with ``torch._dynamo.reset()``. Does nothing when openvino is not imported.
    """
    backend = sys.modules.get(BACKEND_MODULE)
    execute = sys.modules.get(EXECUTE_MODULE)
    if backend is not None and isinstance(getattr(backend, "openvino_options", None), dict):
        setattr(backend, "openvino_options", {})  # noqa: B010
    if execute is not None:
        for name in ("compiled_cache", "req_cache", "partitioned_modules"):
            cache = getattr(execute, name, None)
            if isinstance(cache, dict):
                cache.clear()


class _Stack(ctypes.Structure):
    """``stack_t`` of ``sigaltstack(2)``."""

    _fields_ = [
        ("ss_sp", ctypes.c_void_p), ("ss_flags", ctypes.c_int), ("ss_size", ctypes.c_size_t)
    ]  # fmt: skip


def _load_sigaltstack() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):  # the plugin's setup is Linux-only
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).sigaltstack
    except (OSError, AttributeError):
        return None


_sigaltstack = _load_sigaltstack()


@contextlib.contextmanager
def signal_stack_kept() -> Iterator[None]:
    """The calling thread's alternate signal stack, after the block, as it was before it
    (see the module's note on OpenVINO's CPU plugin). Two system calls; a no-op off Linux.
    Also a decorator: ``signal_stack_kept()(fn)`` runs each call of ``fn`` in it."""
    before = _Stack()
    if _sigaltstack is None or _sigaltstack(None, ctypes.byref(before)) != 0:
        yield
        return
    try:
        yield
    finally:
        # Fails only where the kernel refuses the old stack now (too small once AMX state is
        # enabled): the thread then keeps the one OpenVINO set, as without this.
        _sigaltstack(ctypes.byref(before), None)
