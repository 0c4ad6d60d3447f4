"""Inputs for the readers' fuzz properties: valid documents mutated (keys dropped, inserted or
retyped, boundary numbers, unicode, nesting), their text spliced with hostile tokens (NaN,
huge integers, deep brackets, bad bytes), and random bytes.

Every strategy draws from documents the readers accept today (the built-in spaces, the study
files in ``studies/``, best configs written by the real API), so most inputs are near misses
that reach the deep rules rather than the parser's first refusal. Spaces also start from
conditions nested thousands of levels deep and from conditions that read 30 and more knobs,
which the space reader must refuse rather than recurse through or count.
"""

from __future__ import annotations

import copy
import datetime
import functools
import json
import math
import operator
import string
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
BOUNDARY_INTS = (
    0, 1, -1, 2, 8, 64, 255, 256, 512, 4096, 10_000, 10_001, 2**31 - 1, 2**31, 2**53 + 1,
    2**63 - 1, 2**63, -(2**63) - 1, 2**64, 10**300,
)  # fmt: skip
BOUNDARY_FLOATS = (
    0.0, -0.0, 0.1, 0.5, 1e-300, 5e-324, 1.7976931348623157e308, -1.7976931348623157e308,
    math.inf, -math.inf, math.nan,
)  # fmt: skip
SPECIAL_CHARS = (
    "\x00", "\x7f", "\ud800", "\udfff", "\ufeff", "\u202e", "\u0301", "\U0001f600", ".", " ",
    "\n", "\t", '"', "'", "\\", "=", "[", "]", "{", "}", ",", "#", "-",
)  # fmt: skip
# No "/": drawn paths (extends, model) stay inside the fuzz folder.
TEXT = st.text(
    st.one_of(
        st.sampled_from(SPECIAL_CHARS),
        st.characters(exclude_characters="/"),
        st.sampled_from(string.ascii_letters + string.digits + "._-"),
    ),
    max_size=24,
)
DEEP = (2, 64, 900, 990, 1_000, 5_000, 100_000)
# Long tokens are built when drawn, so that no strategy's repr holds them.
_LONG = st.builds(
    operator.mul,
    st.sampled_from(["9", "-9", "[", "{", '{"a":', "{a=", "a.", "0x" + "f"]),
    st.sampled_from((1, *DEEP)),
)
JSON_TOKENS = st.one_of(
    st.sampled_from((
        "NaN", "Infinity", "-Infinity", "1e999", "-0", "0.0e0", "null", "true", "false", "[]",
        "{}", '""', "tru", '"\\ud800"', '"\\u0000"', "\ufeff", "\x00", "\xff", ",", ":",
        '{"entries": []}', '"entries"', '"schema_version": 2',
    )),
    _LONG,
)  # fmt: skip
TOML_TOKENS = st.one_of(
    st.sampled_from((
        "nan", "inf", "-inf", "+nan", "1e999", "0o777", "0b101", "1_000", "1979-05-27T07:32:00Z",
        "07:32:00", "true", "\x00", "\ufeff", "\xff", '"\\ud800"', '"""', "'''", "[[a]]",
        "\n[inductor]\n", "\n[numerics.inductor]\n", "\n[presets]\n", "a.b.c = 1\n",
        'extends = "base.toml"\n', 'extends = "space.toml"\n', "= =", "{", "}", ",", "\n",
        '\n[compile]\nmode = ["default"]\n',
    )),
    _LONG,
)  # fmt: skip
# Integers past Python's 4300-digit str() limit (built when drawn, like the long tokens).
HUGE_INTS = st.builds(operator.pow, st.sampled_from([10, -10]), st.sampled_from([4300, 5000]))

JsonDoc = Any


# --- generic mutation of a document tree ---


def _paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, (*path, index))
    return found


def _get(node: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        node = node[part]
    return node


def _put(root: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    _get(root, path[:-1])[path[-1]] = value
    return root


def _retyped(node: Any) -> list[Any]:
    """Values of another type that a careless writer (or editor) might leave in its place."""
    forms: list[Any] = [[node], {"value": node}, None, not node]
    try:
        forms.append(str(node))
    except (ValueError, RecursionError):  # an integer past str()'s digits, or deep nesting
        return forms
    if isinstance(node, (int, float)) and not isinstance(node, bool) and math.isfinite(node):
        forms += [float(node), int(node), -node, node * 10**20, str(node)]
    if isinstance(node, str):
        forms += [node.upper(), node + " ", " " + node, node * 40, _hex(node)]
    return forms


def _hex(text: str) -> str:
    return text.encode("utf-8", "surrogatepass").hex()


def _nested(value: Any, depth: int, as_list: bool) -> Any:
    for _ in range(depth):
        value = [value] if as_list else {"a": value}
    return value


@st.composite
def mutated(
    draw: st.DrawFn,
    base: st.SearchStrategy[Any],
    values: st.SearchStrategy[Any],
    keys: st.SearchStrategy[Any],
    max_steps: int = 4,
) -> Any:
    """``base`` with up to ``max_steps`` edits: a subtree replaced, dropped, retyped, nested
    or cloned, or a key (known or random) inserted."""
    doc = copy.deepcopy(draw(base))
    for _ in range(draw(st.integers(0, max_steps))):
        path = draw(st.sampled_from(_paths(doc)))
        node = _get(doc, path)
        op = draw(st.sampled_from(("replace", "drop", "insert", "retype", "nest", "clone")))
        if op == "replace":
            doc = _put(doc, path, draw(values))
        elif op == "drop" and path:
            del _get(doc, path[:-1])[path[-1]]
        elif op == "insert" and isinstance(node, dict):
            node[draw(keys)] = draw(values)
        elif op == "insert" and isinstance(node, list):
            node.insert(draw(st.integers(0, len(node))), draw(values))
        elif op == "retype":
            doc = _put(doc, path, draw(st.sampled_from(_retyped(node))))
        elif op == "nest":
            depth = draw(st.integers(1, 20))
            doc = _put(doc, path, _nested(node, depth, draw(st.booleans())))
        elif op == "clone" and isinstance(node, list) and node:
            node.append(copy.deepcopy(draw(st.sampled_from(node))))
        elif op == "clone" and isinstance(node, dict) and node:
            key = draw(st.sampled_from(sorted(node, key=repr)))
            node[draw(keys)] = copy.deepcopy(node[key])
    return doc


def values_of(
    keys: st.SearchStrategy[Any],
    words: Sequence[Any],
    none: bool = True,
    extra: st.SearchStrategy[Any] | None = None,
) -> st.SearchStrategy[Any]:
    """Scalars (boundary numbers, odd text, the schema's own words) and small trees of them."""
    leaves = st.one_of(
        st.sampled_from(list(words)),
        st.booleans(),
        st.sampled_from(BOUNDARY_INTS),
        st.integers(),
        st.sampled_from(BOUNDARY_FLOATS),
        st.floats(),
        TEXT,
        st.nothing() if extra is None else extra,
        *([st.none()] if none else [st.datetimes(), st.dates(), st.times()]),
    )
    return st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
        max_leaves=8,
    )


@st.composite
def spliced(draw: st.DrawFn, texts: st.SearchStrategy[str], tokens: st.SearchStrategy[str]) -> str:
    """A document's text with a few spans replaced by hostile tokens or random text."""
    text = draw(texts)
    for _ in range(draw(st.integers(1, 3))):
        start = draw(st.integers(0, len(text)))
        end = draw(st.integers(start, min(len(text), start + 12)))
        text = text[:start] + draw(st.one_of(tokens, TEXT)) + text[end:]
    return text


@st.composite
def flipped(draw: st.DrawFn, data: st.SearchStrategy[bytes]) -> bytes:
    """Bytes with a few of them replaced, or the whole cut short."""
    raw = bytearray(draw(data))
    if raw and draw(st.booleans()):
        del raw[draw(st.integers(0, len(raw) - 1)) :]
    for _ in range(draw(st.integers(0, 4)) if raw else 0):
        raw[draw(st.integers(0, len(raw) - 1))] = draw(st.integers(0, 255))
    return bytes(raw)


def encoded(texts: st.SearchStrategy[str]) -> st.SearchStrategy[bytes]:
    # surrogatepass: a lone surrogate in the text becomes bytes that are not UTF-8.
    return texts.map(lambda text: text.encode("utf-8", "surrogatepass"))


def file_bytes(
    docs: st.SearchStrategy[Any], write: Callable[[Any], str], tokens: st.SearchStrategy[str]
) -> st.SearchStrategy[bytes]:
    """A file's bytes: a (mutated) document written out, its text spliced, its bytes flipped,
    or random bytes."""
    texts = docs.map(write)
    return st.one_of(
        encoded(texts),
        encoded(spliced(texts, tokens)),
        flipped(encoded(texts)),
        st.binary(max_size=256),
    )


# --- writers ---


def json_text(doc: Any) -> str:
    return json.dumps(doc, allow_nan=True, indent=2)


def _toml_char(char: str) -> str:
    if char in '"\\':
        return "\\" + char
    # Control characters must be escaped; an escaped surrogate is invalid TOML, on purpose.
    if ord(char) < 0x20 or ord(char) == 0x7F or 0xD800 <= ord(char) < 0xE000:
        return f"\\u{ord(char):04x}"
    return char


def _toml_string(text: str) -> str:
    return '"' + "".join(map(_toml_char, text)) + '"'


def toml_value(value: Any) -> str:
    """A value in TOML's inline form; ``None`` (which TOML lacks) as a bare ``null``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        pairs = (f"{_toml_string(str(k))} = {toml_value(v)}" for k, v in value.items())
        return "{" + ", ".join(pairs) + "}"
    return _toml_string(str(value))


def toml_text(doc: Any) -> str:
    """A document as TOML: scalars first, then one ``[table]`` per top-level table."""
    if not isinstance(doc, dict):
        return f"value = {toml_value(doc)}\n"
    lines = [f"{_toml_string(str(k))} = {toml_value(v)}" for k, v in doc.items() if not _table(v)]
    for key, table in doc.items():
        if _table(table):
            lines.append(f"\n[{_toml_string(str(key))}]")
            lines += [f"{_toml_string(str(k))} = {toml_value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


def _table(value: Any) -> bool:
    return isinstance(value, dict)


# --- the best-config reader ---

BEST_KEYS = (
    "schema_version", "autotune_version", "decision", "reason", "config", "config_hash",
    "metrics", "environment", "model", "workload", "source", "cache", "aot", "created_at",
    "entries", "backend", "mode", "dynamic", "fullgraph", "options", "dynamo", "scope",
    "compile", "disable", "kind", "path", "sha256", "bytes", "valid_for", "weights",
    "weights_sha256", "torch", "device", "device_name", "capability", "freezing",
    "max_autotune", "cpp.simdlen", "triton.cudagraphs", "recompile_limit", "not_a_knob",
    "debug", "cpp.cxx", "trace.enabled", "cache_dir", "signature", "alg", "key_id", "value",
)  # fmt: skip
BEST_WORDS = (
    "compile", "do_not_compile", "inductor", "eager", "aot_eager", "no_such_backend", "default",
    "max-autotune", "max-autotune-no-cudagraphs", "reduce-overhead", "", "0", "1", "1.1",
    "layers.0", " 0", "0.", "a b", "2026-01-31T12:00:00+00:00", "2026-01-31T12:00:00Z",
    "not a date", "0" * 64, "a" * 64, "A" * 64, "0123456789abcdef", "from-model", "embedded",
    "best_config.cache.tar.gz", "..", "sub/x.tar.gz", "cpu", "cuda", "cuda:0", "AMD EPYC",
    "NVIDIA H100 80GB HBM3", "2.13.0+cpu", "2.13.1", "2.12.0", "9.0", "8.0", "0.1.0",
    "hmac-sha256",
)  # fmt: skip
BEST_KEY = st.one_of(st.sampled_from(BEST_KEYS), TEXT)


def best_documents() -> list[dict[str, Any]]:
    """Valid best-config documents written by the real API: one compile entry with every
    optional part, a do_not_compile entry, a bare CompileConfig, and a file of three entries."""
    from autotune.runtime.config import BestConfig, CompileConfig, ConfigFile, Scope

    regional = CompileConfig(
        mode="max-autotune-no-cudagraphs",
        dynamic=False,
        options={"freezing": True, "max_autotune": True, "cpp.simdlen": 256},
        dynamo={"recompile_limit": 16},
        scope=Scope(compile=("0", "1.1"), disable=("1.0",)),
    )
    env = {"torch": "2.13.0+cpu", "device": "cpu", "device_name": "AMD EPYC", "capability": None}
    artifact = {"path": "best_config.cache.tar.gz", "sha256": "0" * 64, "bytes": 10}
    tuned = BestConfig(
        decision="compile",
        reason="1.3x over eager",
        config=regional,
        metrics={"latency_median_s": 0.002, "speedup_vs_eager": 1.3, "memory": None},
        environment=env,
        model={"sha256": "0123456789abcdef", "parameters": 10, "root_class": "Sequential"},
        workload={"kind": "infer", "shapes": [[2, 2]]},
        source={"study": "s", "trial": 3},
        cache={"kind": "inductor-cache-dir", **artifact, "valid_for": {"torch": "2.13.0+cpu"}},
        aot={
            "kind": "aotinductor-package",
            **artifact,
            "path": "best_config.pt2",
            "valid_for": {"device": "cpu"},
            "weights": "embedded",
            "weights_sha256": "a" * 64,
        },
        created_at="2026-01-31T12:00:00+00:00",
    )
    eager = BestConfig(
        decision="do_not_compile",
        reason="eager won",
        environment={**env, "device_name": "NVIDIA H100 80GB HBM3", "device": "cuda:0"},
        created_at="2026-01-30T12:00:00+00:00",
    )
    anywhere = BestConfig(
        decision="compile", reason="hand-written", config=CompileConfig(backend="eager")
    )
    fleet = ConfigFile([tuned, eager, anywhere]).to_dict()
    return [tuned.to_dict(), eager.to_dict(), anywhere.to_dict(), regional.to_dict(), fleet]


BEST_DOCUMENTS = best_documents()
_BEST_VALUES = values_of(BEST_KEY, BEST_WORDS)
_BEST_DOCS = mutated(st.sampled_from(BEST_DOCUMENTS), _BEST_VALUES, BEST_KEY)

# What only a dict built in code can hold: non-string keys, tuples, sets, bytes, huge ints.
_PYTHON_ONLY = ((1, 2), ("0",), {1, 2}, b"bytes", object, 1j, frozenset())
_PYTHON_KEY = st.one_of(BEST_KEY, st.integers(), st.none(), st.tuples(st.integers()))


@st.composite
def _deep(draw: st.DrawFn, docs: st.SearchStrategy[Any]) -> Any:
    """A document with one subtree nested deeper than Python's recursion limit, maybe."""
    doc = draw(docs)
    path = draw(st.sampled_from(_paths(doc)))
    depth = draw(st.sampled_from(DEEP))
    return _put(doc, path, _nested(_get(doc, path), depth, draw(st.booleans())))


def best_config_objects() -> st.SearchStrategy[Any]:
    """What ``from_dict`` and ``apply`` may be handed: JSON forms, mutated with values only
    Python holds, and nested deeper than the interpreter recurses."""
    python = values_of(_PYTHON_KEY, (*BEST_WORDS, *_PYTHON_ONLY), extra=HUGE_INTS)
    docs = mutated(st.sampled_from(BEST_DOCUMENTS), python, _PYTHON_KEY)
    return st.one_of(docs, _deep(docs))


def best_config_cases() -> st.SearchStrategy[tuple[str, Any, bool]]:
    """``(how, input, strict)``: a file's bytes (``file``), or an object for ``from_dict``
    (``dict``) and for ``autotune.apply`` short of compiling (``apply``)."""
    files = file_bytes(_BEST_DOCS, json_text, JSON_TOKENS)
    return st.one_of(
        st.tuples(st.just("file"), files, st.booleans()),
        st.tuples(st.sampled_from(("dict", "apply")), best_config_objects(), st.booleans()),
    )


# --- the space TOML reader ---

SPACE_KEYS = (
    "name", "description", "extends", "remove", "allow_numerics_changes", "presets",
    "compile", "inductor", "dynamo", "numerics", "choices", "low", "high", "step", "log",
    "when", "backend", "mode", "dynamic", "fullgraph", "freezing", "cpp.threads",
    "cpp.simdlen", "cpp.enable_concat_linear", "max_fusion_size", "max_autotune_gemm_backends",
    "cpp.enable_floating_point_contract_flag", "cpp.enable_unsafe_math_opt_flag",
    "triton.cudagraphs", "triton.max_tiles", "recompile_limit", "emulate_precision_casts",
    "inductor.freezing", "compile.mode", "dynamo.recompile_limit", "freezin", "cpp", "unsafe",
    "knobs", "debug", "cpp.cxx", "trace.enabled", "cache_dir",
)  # fmt: skip
SPACE_WORDS = (
    "inductor", "eager", "aot_eager", "default", "max-autotune", "max-autotune-no-cudagraphs",
    "reduce-overhead", "auto", "on", "off", "fast", "ATEN,TRITON,CPP", "ATEN", "aten, nope",
    "", "cpu", "quick", "cuda", "base.toml", "space.toml", "missing.toml", "base",
    "inductor.freezing", "compile.mode", "dynamo.recompile_limit", "workload == 'infer'",
    "device == 'cuda'", "inductor.freezing", "not inductor.freezing",
    "compile.mode == 'max-autotune-no-cudagraphs'", "compile.mode == 'max-autotun'",
    "512 in cpu_vector_widths", "compile.mode in ['default', 'max-autotune']",
    "dynamo.recompile_limit > 8 and inductor.max_fusion_size <= 64", "__import__('os')",
    "compile.backend == 'inductor' or x.y", "(", "not " * 200 + "device",
    "device" + ".a" * 500, "1 < 2 < 3", "[[1]] == [[1]]", "lambda: 1", "f(x)", "inductor.debug",
    "inductor.cpp.cxx", "g++",
)  # fmt: skip
SPACE_KEY = st.one_of(st.sampled_from(SPACE_KEYS), TEXT)


def _toml_documents(paths: Sequence[Path]) -> list[dict[str, Any]]:
    return [tomllib.loads(p.read_text(encoding="utf-8")) for p in paths]


SPACE_DOCUMENTS = _toml_documents(
    sorted((ROOT / "autotune" / "builtin_spaces").glob("*.toml"))
    + sorted((ROOT / "tests" / "fixtures" / "spaces").glob("*.toml"))
) + [
    {
        "extends": "base.toml",
        "remove": ["inductor.freezing"],
        "inductor": {
            "cpp.threads": {"low": 1, "high": 4},
            "max_fusion_size": {"low": 16, "high": 256, "log": True},
        },
        "dynamo": {"recompile_limit": {"low": 8, "high": 64, "step": 8}},
        "numerics": {"inductor": {"cpp.enable_unsafe_math_opt_flag": [False, True]}},
        "presets": [{"name": "threads", "inductor.cpp.threads": 2}],
    },
    {"inductor": {"debug": [False, True]}, "unsafe": {"knobs": ["inductor.debug"]}},
]


def _nested_condition(prefix: str, depth: int, core: str) -> str:
    """``core`` under ``depth`` repeats of ``prefix``, closed where the prefix opens a bracket."""
    return prefix * depth + core + ")" * (depth * prefix.count("("))


# Conditions nested past what the checks may recurse through (1,000 to 5,000 levels of not,
# dotted names, parentheses; the longest also past the length a condition may have), built
# when drawn like the long tokens.
DEEP_CONDITIONS = st.builds(
    _nested_condition,
    st.sampled_from(["not ", "a.", "(", "not (", "(device == 'cpu' and ", "-", "[", "x == ("]),
    st.sampled_from([1_000, 1_500, 2_499, 5_000]),
    st.sampled_from(["device", "inductor.freezing", "x == 1", "device == 'cpu'", "1"]),
)


def wide_document(reads: int, joiner: str, negated: bool) -> dict[str, Any]:
    """``reads`` boolean knobs and one more whose condition reads them all: their values
    combine in ``2**reads`` ways, more than counting a space may visit."""
    from space_tests.wide import bool_knobs

    *read, last = bool_knobs(reads + 1)
    inductor: dict[str, Any] = {name: [False, True] for name in read}
    terms = (f"{'not ' * negated}inductor.{name}" for name in read)
    inductor[last] = {"choices": [False, True], "when": joiner.join(terms)}
    return {"name": f"wide{reads}", "inductor": inductor}


# Conditions over 30 and more knobs, built when drawn (the names come from the installed torch).
WIDE_DOCUMENTS = st.builds(
    wide_document, st.sampled_from([14, 30, 31, 40]), st.sampled_from([" or ", " and "]),
    st.booleans(),
)  # fmt: skip
_CONDITION_DOCUMENTS = st.builds(
    lambda when: {"inductor": {"freezing": {"choices": [False, True], "when": when}}},
    DEEP_CONDITIONS,
)
_SPACE_VALUES = values_of(SPACE_KEY, SPACE_WORDS, none=False, extra=DEEP_CONDITIONS)
_SPACE_BASES = st.one_of(st.sampled_from(SPACE_DOCUMENTS), _CONDITION_DOCUMENTS, WIDE_DOCUMENTS)
SPACE_DOCS = mutated(_SPACE_BASES, _SPACE_VALUES, SPACE_KEY, max_steps=5)


def _as_table(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {"name": value}


def space_cases() -> st.SearchStrategy[tuple[str, dict[str, bytes], Any, str, bool]]:
    """``(how, files, dict, workload, allow_numerics_changes)``: ``file`` reads ``space.toml``
    of ``files`` (``base.toml`` beside it, for ``extends``); ``dict`` reads the dict, with the
    files in the current folder."""
    toml = file_bytes(SPACE_DOCS, toml_text, TOML_TOKENS)
    files = st.fixed_dictionaries({"space.toml": toml}, optional={"base.toml": toml})
    stored = values_of(SPACE_KEY, SPACE_WORDS, extra=DEEP_CONDITIONS)  # JSON: it may hold null
    # a stored space is a JSON object: its settings row is checked first
    objects = st.one_of(SPACE_DOCS, mutated(_SPACE_BASES, stored, SPACE_KEY)).map(_as_table)
    return st.tuples(
        st.sampled_from(("file", "dict")),
        files,
        objects,
        st.sampled_from(("infer", "train")),
        st.booleans(),
    )


# --- the study TOML reader ---

STUDY_DOCUMENTS = _toml_documents(sorted((ROOT / "studies").glob("*.toml")))
STUDY_KEYS = (
    "model", "trials", "device", "space", "workload", "objective", "finalists", "seed",
    "study", "compile_budget", "measure_seconds", "batch_sizes", "prune", "save_cache",
    "allow_numerics_changes", "cache_limit", "memory_budget", "precision", "effort", "help",
    "debug", "quiet", "no_worker", "remeasure", "pareto-axes", "trial_host", "jobs", "calls",
    "max_latency_ms", "storage", "out", "pick", "charge_warm_compile", "timeout", "accuracy",
    "charge_warm_compile", "start_from",
)  # fmt: skip
STUDY_WORDS = (
    "m.py", "study.toml", "other.toml", "./study.toml", "missing.py", "cpu", "cuda", "cuda:1",
    "gpu", "quick", "thorough", "infer", "train", "latency", "throughput", "8GiB", "500MB",
    "1e3", "-1", "--help", "-h", "--version", "--trials=3", "nan", "inf", "0", "1,8", "",
    "cosine>=0.999", "cosine>2",
)  # fmt: skip
STUDY_KEY = st.one_of(st.sampled_from(STUDY_KEYS), TEXT)
_STUDY_VALUES = values_of(STUDY_KEY, STUDY_WORDS, none=False)
STUDY_DOCS = mutated(st.sampled_from(STUDY_DOCUMENTS), _STUDY_VALUES, STUDY_KEY, max_steps=5)
# Options typed after the study file; none of them a prefix of --help.
ARGV_WORDS = (
    "--trials", "5", "--device", "cuda", "--seed", "-1", "--no-prune", "--quiet", "--debug",
    "--study", "x", "--batch-sizes", "1,1", "--cache-limit", "9" * 400, "--precision",
    "0.5", "--space", "cpu", "m.py", "extra.toml",
)  # fmt: skip


# Any text TOML can hold (no lone surrogates), "-x" and "--help" included.
_VALID_TEXT = st.text(
    st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from([c for c in SPECIAL_CHARS if not "\ud800" <= c <= "\udfff"]),
    ),
    max_size=24,
)
# A value each argparse type accepts, by the type's name.
_VALID_BY_TYPE: dict[str, st.SearchStrategy[Any]] = {
    "positive_int": st.integers(1, 10**6),
    "non_negative_int": st.integers(0, 10**6),
    "seed": st.integers(0, 2**32 - 1),
    "confirm": st.integers(0, 4),
    "positive_float": st.floats(1e-3, 1e6) | st.integers(1, 10**6),
    "non_negative_float": st.floats(0, 1e6),
    "fraction": st.floats(0, 0.99),
    "size": st.sampled_from(["8GiB", "500MB", "1048576", "0.5GiB"]),
    "positive_ints": st.lists(st.integers(1, 64), min_size=1, max_size=4, unique=True),
    "device": st.sampled_from(["cpu", "cuda", "cuda:1"]),
    "accuracy": st.sampled_from(
        ["cosine>=0.999", "max_abs<=1e-2,cosine>=0.999", "rtol=1e-2,atol=1e-3", "accuracy>=0.9"]
    ),
}


def _valid_value(action: Any) -> st.SearchStrategy[Any]:
    """A value the option accepts, as a study file would hold it."""
    if action.nargs == 0:  # a switch: --save-cache, --no-prune
        return st.booleans()
    if action.choices:
        return st.sampled_from(list(action.choices))
    return _VALID_BY_TYPE.get(getattr(action.type, "__name__", ""), _VALID_TEXT)


@functools.cache
def _search_options() -> list[Any]:
    from autotune.cli import build_parser
    from autotune.settings import BY_NAME

    _, commands = build_parser()
    return [
        a
        for a in commands["search"]._actions
        if a.option_strings and a.dest in BY_NAME and BY_NAME[a.dest].in_files
    ]


@st.composite
def valid_study_documents(draw: st.DrawFn) -> dict[str, Any]:
    """A study file holding a valid value for some of ``autotune search``'s options."""
    chosen = draw(
        st.lists(st.sampled_from(_search_options()), max_size=8, unique_by=lambda a: a.dest)
    )
    doc: dict[str, Any] = {"model": draw(st.sampled_from(["m.py", "sub.d/m.py", "x.py"]))}
    for action in chosen:
        doc[action.dest] = draw(_valid_value(action))
    return doc


def study_cases() -> st.SearchStrategy[tuple[str, dict[str, bytes], list[str]]]:
    """``(how, files, argv after the study file)``: ``any`` may be refused; ``valid`` holds
    valid values only, and must be read."""
    toml = file_bytes(STUDY_DOCS, toml_text, TOML_TOKENS)
    files = st.fixed_dictionaries({"study.toml": toml}, optional={"other.toml": toml})
    argv = st.lists(st.sampled_from(ARGV_WORDS), max_size=4)
    valid = valid_study_documents().map(lambda doc: {"study.toml": toml_text(doc).encode()})
    return st.one_of(
        st.tuples(st.just("any"), files, argv),
        st.tuples(st.just("valid"), valid, st.just([])),
    )


# --- the settings-row reader ---

SETTINGS_KEYS = (
    "model_path", "device", "space", "space_hash", "torch_version", "workload", "seed",
    "compile_budget", "compile_budget_factor", "measure", "sampler", "scope", "scope_plan",
    "objective", "calls", "memory_budget_bytes", "pareto", "finalist_precision", "trials",
    "finalists", "confirm", "preset_finalists", "prune", "pick", "charge_warm_compile",
    "batch_sizes", "max_latency_s", "model_sha256", "triton_version", "accuracy", "warmup",
    "min_rounds", "max_rounds", "target_seconds", "precision", "max_seconds", "stop_below",
    "screen_seconds", "candidates", "probes", "tree",
    "backend", "name", "fullgraph", "note", "compile", "disable", "newer_setting",
)  # fmt: skip
SETTINGS_WORDS = (
    "cpu", "cuda", "cuda:1", "gpu", "infer", "train", "tpe", "random", "search", "whole",
    "latency", "throughput", "amortized", "best", "all", "fastest", "fastest,compile<=60",
    "compile<=1e999", "smallest", "latency", "compile", "memory", "2.13.0", "ab" * 16,
    "/models/m.py", "", "0", "regional:Linear", "cosine>=0.999", "max_abs<=-1",
)  # fmt: skip
SETTINGS_KEY = st.one_of(st.sampled_from(SETTINGS_KEYS), TEXT)


def settings_documents() -> list[dict[str, Any]]:
    """Valid rows written by the real API: a latency study with a probed scope plan, a
    throughput study, an amortized one and a Pareto one with its pick rule."""
    from autotune.settings import StudySettings
    from autotune.trials import MeasureSettings

    plan = {
        "backend": "inductor",
        "candidates": [
            {"name": "whole", "scope": {"compile": [""], "disable": []}, "fullgraph": True,
             "note": "the whole model"},
            {"name": "regional:Linear", "scope": {"compile": ["0"], "disable": ["1"]},
             "fullgraph": False, "note": ""},
        ],
        "probes": [],
        "tree": None,
    }  # fmt: skip
    base = {
        "model_path": "/models/m.py",
        "device": "cpu",
        "space": SPACE_DOCUMENTS[0],
        "space_hash": "ab" * 8,
        "torch_version": "2.13.0+cpu",
        "model_sha256": "cd" * 32,
    }
    rows = [
        StudySettings(**base, scope_plan=plan, measure=MeasureSettings(precision=0.02)),
        StudySettings(**base, objective="throughput", batch_sizes=[1, 8], max_latency_s=0.02),
        StudySettings(**base, objective="amortized", calls=1000, charge_warm_compile=True),
        StudySettings(**base, pareto=["latency", "compile"], pick="fastest,compile<=60"),
        StudySettings(**base, accuracy="max_abs<=0.01,cosine>=0.999"),
    ]
    return [row.to_dict() for row in rows]


SETTINGS_DOCUMENTS = settings_documents()


def settings_cases() -> st.SearchStrategy[Any]:
    """The text of a study's ``settings_json`` row: a valid row mutated and written as JSON,
    that text spliced, any text, or what a database might hand back instead of text."""
    values = values_of(SETTINGS_KEY, SETTINGS_WORDS)
    docs = mutated(st.sampled_from(SETTINGS_DOCUMENTS), values, SETTINGS_KEY, max_steps=5)
    texts = docs.map(json_text)
    return st.one_of(
        texts,
        spliced(texts, JSON_TOKENS),
        st.text(max_size=64),
        st.sampled_from([None, b'{"device": "cpu"}', 7, ["a"]]),
    )
