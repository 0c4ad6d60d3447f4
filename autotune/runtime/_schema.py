"""Schema rules for config files: each function returns every problem as a "key.path: ..." line.

Standard library only; the dataclasses in :mod:`autotune.runtime.config` turn the lines into
one :class:`~autotune.runtime.config.ConfigError`.
"""

from __future__ import annotations

import datetime
import difflib
import math
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from autotune.runtime import _bounds
from autotune.runtime._shape_rules import shapes_problems, warmup_problems

COMPILE_KEYS = (
    "backend", "mode", "dynamic", "fullgraph", "options", "dynamo", "functorch", "scope",
    "precision", "train", "parts", "shapes",
)  # fmt: skip
# A part: calls of the model that compile with a config of their own, chosen by a rule on the
# size of one dimension of one input (`when`); `config` null runs them eager.
PART_KEYS = ("name", "when", "config")
WHEN_KEYS = ("input", "dim", "min", "max")
# How a config changes precision (absent: as eager, float32 at "highest"): the dtype of an
# autocast region around each call, and torch's float32 matmul precision during each call.
# The model's own weights changed once, before it compiles (autotune.runtime.quantize): cast
# to ``weights``, or ``quantize``d by torchao (its Linear layers; "except-last" keeps the last
# Linear the model registers, its output head, in full precision).
# Each scheme: torchao's config class (quantize_(model, Int8...Config())), the device types it
# runs on, the lowest CUDA capability (autotune.runtime.quantize applies them).
QUANTIZE_SCHEMES: dict[str, tuple[str, tuple[str, ...], tuple[int, int] | None]] = {
    # int8 weights, dequantized in the matmul: half the weight bytes of bf16, a quarter of fp32
    "int8-weight-only": ("Int8WeightOnlyConfig", ("cpu", "cuda"), None),
    # int8 weights and int8 activations (scaled per token at each call): an int8 GEMM, which
    # a CPU runs fast with VNNI or AMX dot-product instructions
    "int8-dynamic": ("Int8DynamicActivationInt8WeightConfig", ("cpu", "cuda"), None),
    # int4 weights in groups, tinygemm's CUDA kernel (bf16 activations: cast the weights too)
    "int4-weight-only": ("Int4WeightOnlyConfig", ("cuda",), (8, 0)),
    # float8 weights and activations: the tensor cores of Ada and Hopper GPUs
    "float8-dynamic": ("Float8DynamicActivationFloat8WeightConfig", ("cuda",), (8, 9)),
}
PRECISION_VALUES = {
    "autocast": ("bfloat16", "float16"),
    "matmul": ("high", "medium"),
    "weights": ("bfloat16", "float16"),
    "quantize": tuple(QUANTIZE_SCHEMES),
    "quantize_layers": ("except-last",),
}
# How a training step runs beside the compiled model (absent: as the user's loop runs it):
# ``optimizer`` "compiled" runs ``optimizer.step`` through ``torch.compile``.
TRAIN_VALUES = {"optimizer": ("compiled",)}
BEST_REQUIRED = ("schema_version", "autotune_version", "decision", "reason", "config")
BEST_OPTIONAL = (
    "config_hash", "metrics", "environment", "model", "workload", "source", "cache", "aot",
    "signature",
)  # fmt: skip
SIGNATURE_KEYS = ("alg", "key_id", "value")
CACHE_KEYS = ("kind", "path", "sha256", "bytes", "valid_for")
AOT_OPTIONAL = ("weights", "weights_sha256")
# Where a package's weights come from: the model at load, or its own (frozen at build time).
AOT_WEIGHTS = ("from-model", "embedded")
FILE_KEYS = ("schema_version", "autotune_version", "entries")
BEST_KEYS = (*BEST_REQUIRED, *BEST_OPTIONAL, "created_at")


def _show(value: Any) -> str:
    text = repr(value)
    text = text if len(text) <= 80 else text[:77] + "..."
    return f"{text} ({type(value).__name__})"


def expect(where: str, value: Any, expected: str) -> str:
    return f"{where}: expected {expected}, got {_show(value)}"


def _key_problems(
    d: Mapping[str, Any], known: Sequence[str], where: str, required: Sequence[str] = ()
) -> list[str]:
    problems = []
    for key in d:
        if key not in known:
            near = difflib.get_close_matches(str(key), known, n=1)
            hint = f"; did you mean {near[0]!r}?" if near else f"; known keys: {', '.join(known)}"
            problems.append(f"{where}: unknown key {key!r}{hint}")
    problems += [f"{where}: missing required key {k!r}" for k in required if k not in d]
    return problems


def _is_json_value(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (str, int, bool)) or value is None:
        return True
    return isinstance(value, (list, tuple)) and all(_is_json_value(v) for v in value)


def _json_dict_problems(value: Any, where: str, values: str = "scalar") -> list[str]:
    if not isinstance(value, dict):
        return [expect(where, value, "an object (dict)")]
    problems = [f"{where}: keys must be strings, got {k!r}" for k in value if type(k) is not str]
    for key, item in value.items():
        ok = _is_json_value(item) if values == "scalar" else _is_json_tree(item)
        if not ok:
            kind = "a JSON scalar or a list of them" if values == "scalar" else "a JSON value"
            problems.append(expect(f"{where}.{key}", item, f"{kind} (finite numbers)"))
    return problems


def _is_json_tree(value: Any) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_json_tree(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(_is_json_tree(v) for v in value)
    return _is_json_value(value)


# A best config nests a few levels deep; past this, a value is refused before any rule (or
# repr) recurses into it, so that no input reaches the interpreter's recursion limit.
MAX_DEPTH = 64


def structure_problems(value: Any, where: str) -> list[str]:
    """A value nested deeper than :data:`MAX_DEPTH` (or holding itself), or holding an integer
    too long to write as JSON, cannot be checked or written: the first such place, if any."""
    stack = [(value, where, 0)]
    while stack:
        item, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            return [
                f"{path[:120]}: nested more than {MAX_DEPTH} levels deep (or holds itself); a "
                "best config nests a few levels: regenerate it with `autotune search`"
            ]
        if isinstance(item, int) and not _is_writable_int(item):
            return [
                f"{path[:120]}: an integer of {item.bit_length()} bits, too long to write as "
                f"JSON (Python writes at most {sys.get_int_max_str_digits()} digits); use a "
                "smaller number"
            ]
        if isinstance(item, Mapping):
            stack += [(k, f"{path} (a key)", depth + 1) for k in item if not isinstance(k, str)]
            stack += [(v, f"{path}.{_label(k)}", depth + 1) for k, v in item.items()]
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack += [(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(item)]
    return []


def _is_writable_int(value: int) -> bool:
    try:
        str(value)
    except ValueError:  # past sys.get_int_max_str_digits()
        return False
    return True


def _label(key: Any) -> str:
    return key if isinstance(key, str) else type(key).__name__


def compile_problems(d: Any, where: str) -> list[str]:
    """Problems of a compile config's JSON form (``scope`` as a dict)."""
    structure = structure_problems(d, where)
    if structure:
        return structure
    if not isinstance(d, Mapping):
        return [expect(where, d, "an object (dict) with keys " + ", ".join(COMPILE_KEYS))]
    problems = _key_problems(d, COMPILE_KEYS, where)
    for key in ("backend", "mode"):
        if key in d and not (isinstance(d[key], str) and d[key]):
            problems.append(expect(f"{where}.{key}", d[key], "a non-empty string"))
    if "dynamic" in d and not (d["dynamic"] is None or isinstance(d["dynamic"], bool)):
        problems.append(expect(f"{where}.dynamic", d["dynamic"], "true, false or null"))
    if "fullgraph" in d and not isinstance(d["fullgraph"], bool):
        problems.append(expect(f"{where}.fullgraph", d["fullgraph"], "true or false"))
    for key in ("options", "dynamo", "functorch"):
        if key in d:
            problems += _json_dict_problems(d[key], f"{where}.{key}")
    problems += knob_bound_problems(d, where)
    if "scope" in d:
        problems += scope_problems(d["scope"], f"{where}.scope")
    if "precision" in d:
        problems += precision_problems(d["precision"], f"{where}.precision")
    if "train" in d:
        problems += _choice_problems(d["train"], TRAIN_VALUES, f"{where}.train", "as eager")
    if "parts" in d:
        problems += parts_problems(d["parts"], d.get("scope"), f"{where}.parts")
    if "shapes" in d and d["shapes"] != {}:  # empty: no plan
        problems += shapes_problems(d["shapes"], f"{where}.shapes")
    return problems


def knob_bound_problems(d: Mapping[str, Any], where: str) -> list[str]:
    """The numbers a compile config's knobs set outside their bounds (:mod:`._bounds`):
    ``options`` are the backend's (Inductor's, or OpenVINO's), ``dynamo`` and ``functorch``
    their layers'."""
    backend = d.get("backend", "inductor")
    layers = {"options": str(backend), "dynamo": "dynamo", "functorch": "functorch"}
    return [
        line
        for key, layer in layers.items()
        for line in _bounds.problems(d.get(key), layer, f"{where}.{key}")
    ]


def parts_problems(parts: Any, scope: Any, where: str) -> list[str]:
    """Problems of a config's ``parts`` (see :data:`PART_KEYS`): each part a name of its own, a
    rule and a config of its own (or null: eager) without parts; every config whole-model,
    since a part is chosen per call of the whole model."""
    if not isinstance(parts, (list, tuple)):
        return [expect(where, parts, 'a list like [{"name": "decode", "when": {...}, '
                       '"config": {...}}]')]  # fmt: skip
    problems = []
    if parts and scope is not None and _whole(scope) is False:
        problems.append(
            f"{where}: a config with parts compiles the whole model, one config per part, but "
            f"its scope is {_show(scope)}; use the whole-model scope"
        )
    names: set[str] = set()
    for i, part in enumerate(parts):
        at = f"{where}[{i}]"
        if not isinstance(part, Mapping):
            problems.append(expect(at, part, "an object with keys " + ", ".join(PART_KEYS)))
            continue
        problems += _key_problems(part, PART_KEYS, at, required=PART_KEYS)
        name = part.get("name")
        if not (isinstance(name, str) and name.isidentifier()):
            problems.append(expect(f"{at}.name", name, 'a name like "decode"'))
        elif name in names:
            problems.append(f"{at}.name: {name!r} names two parts; give each its own name")
        else:
            names.add(name)
        problems += when_problems(part.get("when"), f"{at}.when")
        config = part.get("config")
        if config is None:
            continue
        if isinstance(config, Mapping) and "parts" in config:
            problems.append(f"{at}.config: a part's config has no parts of its own")
            continue
        problems += compile_problems(config, f"{at}.config")
        if isinstance(config, Mapping) and _whole(config.get("scope")) is False:
            problems.append(
                f"{at}.config.scope: a part compiles the whole model, got "
                f"{_show(config.get('scope'))}; use the whole-model scope"
            )
    return problems


def _whole(scope: Any) -> bool | None:
    """Whether a scope's JSON form is the whole model with nothing eager (None: no scope)."""
    if scope is None:
        return None
    if not isinstance(scope, Mapping):
        return False
    return list(scope.get("compile", [""])) == [""] and not list(scope.get("disable", []))


def when_problems(when: Any, where: str) -> list[str]:
    """Problems of a part's rule: ``input`` (a keyword argument's name, or a positional
    argument's index as digits), ``dim`` (>= 0) and ``min`` / ``max`` (sizes, inclusive; at
    least one)."""
    if not isinstance(when, Mapping):
        return [expect(where, when, 'an object like {"input": "input_ids", "dim": 1, "max": 1}')]
    problems = _key_problems(when, WHEN_KEYS, where, required=("input", "dim"))
    if "input" in when and not (isinstance(when["input"], str) and when["input"]):
        problems.append(expect(f"{where}.input", when["input"], "an argument's name or index"))
    if "dim" in when and not _is_size(when["dim"]):
        problems.append(expect(f"{where}.dim", when["dim"], "an integer >= 0"))
    for key in ("min", "max"):
        if when.get(key) is not None and not _is_size(when[key]):
            problems.append(expect(f"{where}.{key}", when[key], "an integer >= 0 or null"))
    low, high = when.get("min"), when.get("max")
    if low is None and high is None:
        problems.append(f"{where}: a rule needs a size: min, max or both")
    elif isinstance(low, int) and isinstance(high, int) and low > high:
        problems.append(f"{where}: min {low} is above max {high}; no call would match")
    return problems


def _is_size(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63


def precision_problems(d: Any, where: str) -> list[str]:
    """Problems of a config's ``precision`` (see :data:`PRECISION_VALUES`)."""
    problems = _choice_problems(d, PRECISION_VALUES, where, "as eager")
    if isinstance(d, Mapping) and "quantize_layers" in d and "quantize" not in d:
        problems.append(
            f"{where}.quantize_layers: says which layers a quantize scheme leaves out, and "
            f"{where}.quantize is absent; set a scheme or remove it"
        )
    return problems


def _choice_problems(
    d: Any, values: Mapping[str, tuple[str, ...]], where: str, absent: str
) -> list[str]:
    if not isinstance(d, Mapping):
        key, allowed = next(iter(values.items()))
        return [expect(where, d, f"an object like {{{key!r}: {allowed[0]!r}}}")]
    problems = _key_problems(d, tuple(values), where)
    for key, allowed in values.items():
        if key in d and d[key] not in allowed:
            listed = " or ".join(map(repr, allowed))
            problems.append(expect(f"{where}.{key}", d[key], f"{listed} (absent: {absent})"))
    return problems


def scope_problems(d: Any, where: str) -> list[str]:
    """Problems of a scope's JSON form, consistency of its paths included."""
    if not isinstance(d, Mapping):
        return [expect(where, d, 'an object like {"compile": [""], "disable": []}')]
    problems = _key_problems(d, ("compile", "disable"), where)
    paths: dict[str, list[str]] = {}
    for key in ("compile", "disable"):
        value = d.get(key, [""] if key == "compile" else [])
        if not isinstance(value, (list, tuple)):
            problems.append(expect(f"{where}.{key}", value, "a list of dotted module paths"))
            continue
        paths[key] = [p for p in value if _is_module_path(p, allow_root=key == "compile")]
        for i, path in enumerate(value):
            if not _is_module_path(path, allow_root=key == "compile"):
                rule = 'a dotted module path like "layers.0"' + (
                    ' or "" (the whole model)' if key == "compile" else ""
                )
                problems.append(expect(f"{where}.{key}[{i}]", path, rule))
    if "compile" in paths and "disable" in paths:
        problems += _scope_consistency(paths["compile"], paths["disable"], where)
    return problems


def _is_module_path(path: Any, allow_root: bool) -> bool:
    if not isinstance(path, str):
        return False
    if path == "":
        return allow_root
    return all(part and part == part.strip() and " " not in part for part in path.split("."))


def _within(path: str, ancestor: str) -> bool:
    return ancestor == "" or path == ancestor or path.startswith(ancestor + ".")


def _scope_consistency(compile: list[str], disable: list[str], where: str) -> list[str]:
    problems = []
    if not compile:
        problems.append(f'{where}.compile: must name at least one path ("" = the whole model)')
    for key, paths in (("compile", compile), ("disable", disable)):
        dups = sorted({p for p in paths if paths.count(p) > 1})
        problems += [f"{where}.{key}: path {p!r} is listed twice" for p in dups]
    pairs = [(a, b) for i, a in enumerate(compile) for b in compile[i + 1 :] if a != b]
    for a, b in pairs:
        if _within(a, b) or _within(b, a):
            outer, inner = (b, a) if _within(a, b) else (a, b)
            shown = repr(outer) if outer else "'' (the whole model)"
            problems.append(
                f"{where}.compile: paths must not nest, but {shown} contains {inner!r}; "
                "keep only one of them"
            )
    for off in disable:
        for on in compile:
            if on and _within(on, off):
                problems.append(
                    f"{where}: disable path {off!r} contains compile path {on!r}; "
                    "a disabled module cannot hold a compiled one"
                )
    return problems


def version_problems(version: Any, supported: int) -> list[str]:
    """A ``schema_version`` must be a positive integer no newer than ``supported``."""
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        return [expect("schema_version", version, "a positive integer")]
    if version > supported:
        return [
            f"schema_version: the file has version {version}, newer than the {supported} "
            "this autotune reads; upgrade autotune"
        ]
    return []


def best_problems(d: Any, where: str, schema_version: int) -> list[str]:
    """Problems of a best config's JSON form, except its decision, config and hash."""
    if not isinstance(d, Mapping):
        return [expect(where, d, "a JSON object")]
    problems = _key_problems(d, BEST_KEYS, where, required=BEST_REQUIRED)
    problems += version_problems(d.get("schema_version", schema_version), schema_version)
    for key in ("autotune_version", "reason"):
        if key in d and not isinstance(d[key], str):
            problems.append(expect(key, d[key], "a string"))
    if "created_at" in d:
        problems += _created_at_problems(d["created_at"])
    problems += _metrics_problems(d.get("metrics", {}))
    for key in ("environment", "model", "workload", "source"):
        problems += _json_dict_problems(d.get(key, {}), key, values="tree")
    workload = d.get("workload")
    if isinstance(workload, Mapping) and "warmup" in workload:
        problems += warmup_problems(workload["warmup"], "workload.warmup")
    if d.get("cache") is not None:
        problems += _artifact_problems(d["cache"], "cache")
    if d.get("aot") is not None:
        problems += _artifact_problems(d["aot"], "aot", AOT_OPTIONAL)
        problems += _weights_problems(d["aot"])
    if d.get("signature") is not None:
        problems += _signature_problems(d["signature"])
    return problems


def _signature_problems(value: Any) -> list[str]:
    if not isinstance(value, Mapping):
        return [expect("signature", value, "an object (alg, key_id, value)")]
    problems = _key_problems(value, SIGNATURE_KEYS, "signature", required=SIGNATURE_KEYS)
    if value.get("alg", "hmac-sha256") != "hmac-sha256":
        problems.append(expect("signature.alg", value.get("alg"), "'hmac-sha256'"))
    for key in ("key_id", "value"):
        if key in value and not isinstance(value[key], str):
            problems.append(expect(f"signature.{key}", value[key], "a string of hex digits"))
    return problems


def _weights_problems(aot: Any) -> list[str]:
    if not isinstance(aot, Mapping):
        return []
    weights = aot.get("weights", "from-model")
    if weights not in AOT_WEIGHTS:
        return [expect("aot.weights", weights, " or ".join(map(repr, AOT_WEIGHTS)))]
    if weights == "embedded" and not _is_sha256(aot.get("weights_sha256")):
        return [expect("aot.weights_sha256", aot.get("weights_sha256"), "64 lowercase hex digits")]
    return []


def _is_sha256(value: Any) -> bool:
    return (
        isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)
    )


def _artifact_problems(value: Any, where: str, optional: Sequence[str] = ()) -> list[str]:
    """A ``cache`` or ``aot`` object: the file beside the best-config file, its SHA-256 and
    size, and the machine facts it is valid for."""
    if not isinstance(value, Mapping):
        return [expect(where, value, "an object (kind, path, sha256, bytes, valid_for)")]
    problems = _key_problems(value, (*CACHE_KEYS, *optional), where, required=CACHE_KEYS)
    kind = value.get("kind")
    if "kind" in value and not (isinstance(kind, str) and kind):
        problems.append(expect(f"{where}.kind", kind, "a non-empty string"))
    path = value.get("path")
    if "path" in value and (not isinstance(path, str) or "/" in path or path in ("", ".", "..")):
        problems.append(expect(f"{where}.path", path, "a file name beside the best-config file"))
    digest = value.get("sha256")
    if "sha256" in value and not _is_sha256(digest):
        problems.append(expect(f"{where}.sha256", digest, "64 lowercase hex digits"))
    size = value.get("bytes")
    if "bytes" in value and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
        problems.append(expect(f"{where}.bytes", size, "a non-negative integer"))
    if "valid_for" in value:
        problems += _json_dict_problems(value["valid_for"], f"{where}.valid_for", values="tree")
    return problems


def parse_utc(text: Any) -> datetime.datetime | None:
    """An ISO 8601 time or date as an aware datetime (one without an offset is UTC, as
    autotune writes every time; ``Z`` is UTC; a date alone is its midnight); None when
    ``text`` is not one: what ``created_at`` must be, and how it is compared."""
    if not isinstance(text, str):
        return None
    try:
        when = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=datetime.timezone.utc)


def _created_at_problems(value: Any) -> list[str]:
    if parse_utc(value) is None:
        return [expect("created_at", value, 'an ISO 8601 time like "2026-01-31T12:00:00+00:00"')]
    return []


def _metrics_problems(value: Any) -> list[str]:
    if not isinstance(value, dict):
        return [expect("metrics", value, "an object of numbers")]
    keys = [f"metrics: keys must be strings, got {k!r}" for k in value if type(k) is not str]
    return keys + [
        expect(f"metrics.{k}", v, "a finite number or null")
        for k, v in value.items()
        if not (v is None or _is_number(v))
    ]


def _is_number(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value)
