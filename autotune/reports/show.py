"""``autotune show``: what a best-config file will do, in words: the decision and why, the
scope, mode and every knob it sets with what the knob does, what it was tuned for, what it
claims, where and when it was tuned, and whether this machine matches it."""

from __future__ import annotations

import math
from typing import Any

from autotune._secrets import mask_url
from autotune.reports._format import calls, ms, times
from autotune.reports.study_report import fit
from autotune.runtime import safety as _safety
from autotune.runtime.config import BestConfig, CompileConfig

_DYNAMIC = {
    None: "torch's default: static first, dynamic after a shape changes",
    True: "dynamic shapes from the first compile",
    False: "static shapes: a new shape recompiles",
}
_WIDTH = 100


def explain(best: BestConfig, path: str, here: dict[str, Any] | None = None) -> dict[str, Any]:
    """The facts :func:`render` prints, as a JSON-able dict (``autotune show --json``).

    ``here`` is this machine's environment fingerprint; None leaves the comparison out."""
    from autotune.runtime.fingerprint import environment_mismatches
    from autotune.space import knob_meanings

    config = best.config
    facts: dict[str, Any] = {
        "file": path,
        "decision": best.decision,
        "reason": best.reason,
        "schema_version": best.schema_version,
        "autotune_version": best.autotune_version,
        "created_at": best.created_at,
        "config_hash": best.config_hash,
        "scope": None,
        "compile": None,
        "knobs": [],
        "workload": dict(best.workload),
        "claims": dict(best.metrics),
        "tuned_on": dict(best.environment),
        "source": _source(best.source),
        "model": dict(best.model),
    }
    if config is not None:
        meanings = knob_meanings()
        facts["scope"] = {"compile": list(config.scope.compile),
                          "disable": list(config.scope.disable)}  # fmt: skip
        facts["compile"] = {"backend": config.backend, "mode": config.mode,
                            "dynamic": config.dynamic, "fullgraph": config.fullgraph}  # fmt: skip
        facts["knobs"] = [
            {"knob": knob, "value": value, "meaning": meanings.get(knob)}
            for knob, value in set_knobs(config)
        ]
        facts["unsafe_knobs"] = _safety.config_problems(config)
        facts["parts"] = [
            {"name": p.name, "when": p.when.describe(),
             "config": p.config.brief() if p.config is not None else None}
            for p in config.parts
        ]  # fmt: skip
        facts["shapes"] = dict(config.shapes)
    facts["signature"] = _signature(best)
    facts["cache"] = _artifact(best, best.cache, path, here is not None)
    facts["aot"] = _artifact(best, best.aot, path, here is not None)
    if here is not None:
        facts["here"] = {
            "environment": {k: here.get(k) for k in ("device_name", "torch", "triton", "cuda")},
            "mismatches": environment_mismatches(best.environment, here),
        }
    return facts


def set_knobs(config: CompileConfig) -> list[tuple[str, Any]]:
    """The Inductor options beyond the mode's preset, and the Dynamo, functorch and precision
    settings, by knob name (``inductor.freezing``, ``dynamo.recompile_limit``,
    ``functorch.activation_memory_budget``, ``precision.quantize``)."""
    import torch._inductor

    preset = torch._inductor.list_mode_options(config.mode) if config.backend == "inductor" else {}
    knobs = [(f"inductor.{k}", v) for k, v in sorted(config.options.items())
             if k not in preset or preset[k] != v]  # fmt: skip
    knobs += [(f"dynamo.{k}", v) for k, v in sorted(config.dynamo.items())]
    knobs += [(f"functorch.{k}", v) for k, v in sorted(config.functorch.items())]
    return knobs + [(f"precision.{k}", v) for k, v in sorted(config.precision.items())]


def explain_file(
    entries: list[BestConfig], path: str, here: dict[str, Any] | None
) -> dict[str, Any]:
    """:func:`explain` for each entry of a file of several, and which entry
    :func:`autotune.apply` would use on this machine (``here``)."""
    from autotune.runtime.config import entry_label
    from autotune.runtime.select import choose

    facts: dict[str, Any] = {
        "file": path,
        "entries": [
            {"machine": entry_label(entry), **explain(entry, path, here)} for entry in entries
        ],
    }
    if here is not None:
        choice = choose(entries, here)
        facts["applies_here"] = {
            "entry": None if choice.entry is None else entries.index(choice.entry),
            "match": choice.match,
            "why": choice.why,
        }
    return facts


def render_file(facts: dict[str, Any]) -> str:
    """:func:`explain_file`'s facts in words: a paragraph on the file, then each entry."""
    entries = facts["entries"]
    lines = [f"{facts['file']}: {len(entries)} entries, one per machine (device, torch):"]
    lines += [f"  {i + 1}. {e['machine']}" for i, e in enumerate(entries)]
    here = facts.get("applies_here")
    if here is not None:
        if here["entry"] is None:
            lines.append(f"Here: {here['why']}; autotune.apply returns the model uncompiled.")
        elif not here["why"]:
            lines.append(f"Here: autotune.apply uses entry {here['entry'] + 1}.")
        else:
            lines.append(f"Here: autotune.apply uses entry {here['entry'] + 1}: {here['why']}.")
    text = fit("\n".join(lines), _WIDTH)
    for i, entry in enumerate(entries):
        rule = f"--- entry {i + 1} of {len(entries)}: {entry['machine']} "
        text += "\n\n" + rule + "-" * max(0, _WIDTH - len(rule)) + "\n" + render(entry)
    return text


def render(facts: dict[str, Any]) -> str:
    """The facts in words, one topic a paragraph."""
    lines = [f"{facts['file']}: {_decision(facts)}", f"  why: {facts['reason']}."]
    if facts["compile"] is not None:
        lines += ["", *_how(facts)]
    lines += ["", *_workload(facts), "", *_claims(facts), "", *_origin(facts)]
    if "here" in facts:
        lines += ["", *_here(facts)]
    return fit("\n".join(lines), _WIDTH)


def _decision(facts: dict[str, Any]) -> str:
    runs = "compile the model with torch.compile, as below."
    eager = "serve the model eager (autotune.apply returns it unchanged)."
    if facts["decision"] == "inconclusive":
        return "inconclusive: the cheaper side ships: " + (runs if facts["compile"] else eager)
    if facts["decision"] == "compile":
        return runs
    return "do not compile: " + eager


def _how(facts: dict[str, Any]) -> list[str]:
    scope, c = facts["scope"], facts["compile"]
    if scope["compile"] == [""]:
        where = "the whole model as one torch.compile"
    else:
        where = "each of these submodules compiled on its own, the rest eager: "
        where += ", ".join(scope["compile"])
    lines = [f"Scope: {where}."]
    for part in facts.get("parts") or []:
        runs = f"compiled as {part['config']}" if part["config"] else "eager"
        lines.append(
            f"Part {part['name']!r}: calls where {part['when']} run {runs}; the other calls "
            "run the config below."
        )
    if scope["disable"]:
        lines.append(
            "  kept eager inside it (torch.compiler.disable): " + ", ".join(scope["disable"])
        )
    lines.append(
        f"torch.compile: backend {c['backend']}, mode {c['mode']}, fullgraph={c['fullgraph']}"
        + (" (a graph break is an error)" if c["fullgraph"] else "")
        + f", dynamic={c['dynamic']} ({_DYNAMIC.get(c['dynamic'], '?')})"
    )
    lines += _shape_plan(facts.get("shapes") or {}, facts["workload"])
    if not facts["knobs"]:
        lines.append("Knobs: none beyond the mode's preset.")
        return lines
    lines.append(f"Knobs set beyond the mode's preset ({len(facts['knobs'])}):")
    for knob in facts["knobs"]:
        meaning = knob["meaning"] or "(not described by the built-in spaces)"
        lines.append(f"  {knob['knob']} = {knob['value']!r}: {meaning}")
    if facts.get("unsafe_knobs"):
        lines.append(
            "Unsafe knobs: this config sets knobs that autotune never takes from data (they "
            "name a program, a compiler or its flags, a file or a folder, or turn on debug "
            "output); autotune.apply refuses it unless allow_unsafe_knobs names them:"
        )
        lines += [f"  {line}" for line in facts["unsafe_knobs"]]
    if any(k["knob"] == "precision.quantize" for k in facts["knobs"]):
        lines.append("Needs torchao (pip install 'autotune[quantize]'): apply refuses it without.")
    if any(k["knob"] == "inductor.freezing" and k["value"] is True for k in facts["knobs"]):
        lines.append(
            "Frozen weights: the first call under torch.no_grad() folds the model's weights "
            "into the compiled code; load them before it (later in-place changes are not seen)."
        )
    return lines


def _shape_plan(shapes: dict[str, Any], workload: dict[str, Any]) -> list[str]:
    """What the config's shape plan does around each call (none: nothing)."""
    if not shapes:
        return []
    inputs = ", ".join(
        f"{name} (dim {spec['dim']}, pad {spec['value']!r})"
        for name, spec in shapes.get("inputs", {}).items()
    )
    outputs = ", ".join(
        f"{k or 'the output'} (dim {d})" for k, d in shapes.get("outputs", {}).items()
    )
    plan = str(shapes.get("plan"))
    if plan == "auto":
        how = "shapes left to torch"
    elif plan == "marked":
        how = f"the dimensions of {inputs} marked dynamic on every call: one dynamic graph"
    else:
        bucket = "the next power of two" if plan == "pad-pow2" else f"a multiple of {plan[4:]}"
        how = (
            f"{inputs} padded to {bucket}, compiled static (a graph per bucket), "
            f"{outputs or 'no output'} cut back to the request's length"
        )
    if shapes.get("eager_above") is not None:
        how += f"; batches above {shapes['eager_above']} run eager (a compile threshold)"
    shapes_seen = len(workload.get("warmup") or [])
    warm = (
        f'; warmup="plan" compiles the {shapes_seen} shapes it was measured on'
        if shapes_seen
        else ""
    )
    return [f"Shape plan {plan}: {how}{warm}."]


def _workload(facts: dict[str, Any]) -> list[str]:
    w = facts["workload"]
    what = {"infer": "inference (eval, no_grad)", "train": "a training step"}.get(
        str(w.get("kind")), str(w.get("kind"))
    )
    lines = [f"Tuned for: {what} on {w.get('device')}, objective {w.get('objective')}"]
    if w.get("calls"):
        lines[0] += f" over {w['calls']:,} calls"
    inputs = w.get("inputs") or []
    if inputs:
        lines.append(f"  inputs: {', '.join(map(str, inputs[:6]))}"
                     + (f" and {len(inputs) - 6} more" if len(inputs) > 6 else ""))  # fmt: skip
    if w.get("batch_size"):
        lines.append(f"  batch size {w['batch_size']}")
    if w.get("max_latency_s"):
        lines.append(f"  latency cap {ms(w['max_latency_s'])}")
    relaxed = "yes (held to the 10x looser gate)" if w.get("relaxed_numerics") else "no"
    if w.get("accuracy"):
        held = "held to it" if w.get("relaxed_numerics") else "exact within eager's tolerance"
        relaxed = f"accuracy contract {w['accuracy']} ({held})"
    lines.append(f"  seed {w.get('seed')}; numerics-changing knobs: {relaxed}")
    return lines


def _claims(facts: dict[str, Any]) -> list[str]:
    m = facts["claims"]
    if facts["compile"] is None:
        lines = ["Claims: eager was not reliably beaten."]
        if facts["decision"] == "inconclusive":
            lines = ["Claims: none: the lead of compiling over eager was not resolved."]
        if m.get("eager_latency_median_s"):
            lines.append(f"  eager latency {ms(m['eager_latency_median_s'])}")
        return lines
    spread = ""
    if m.get("speedup_vs_eager_ci_low") and m.get("speedup_vs_eager_ci_high"):
        spread = f" (95% interval {times(m['speedup_vs_eager_ci_low'], 2)} to "
        spread += f"{times(m['speedup_vs_eager_ci_high'], 2)})"
    if m.get("speedup_vs_eager_q1") and m.get("speedup_vs_eager_q3"):
        spread += f" (quartiles {times(m['speedup_vs_eager_q1'], 2)} to "
        spread += f"{times(m['speedup_vs_eager_q3'], 2)})"
    lines = [
        f"Claims: {times(m.get('speedup_vs_eager'), 2)} eager{spread}, "
        f"{times(m.get('speedup_vs_default'), 2)} default torch.compile; latency "
        f"{ms(m.get('latency_median_s'))} against {ms(m.get('eager_latency_median_s'))} eager"
    ]
    cold = m.get("cold_compile_time_s", m.get("compile_time_s"))
    warm = m.get("warm_compile_time_s")
    compile_s = f"  compile: {cold or 0:.1f} s cold (a new machine)"
    if warm is not None:
        compile_s += f", {warm:.1f} s warm (a restart reusing its kernel cache)"
    lines.append(compile_s)
    even = m.get("break_even_calls_vs_eager")
    lines.append(
        f"  pays back its compile time after {calls(_finite(even))} calls vs eager"
        + (
            f", {calls(_finite(m['break_even_calls_vs_default']))} vs default torch.compile"
            if "break_even_calls_vs_default" in m
            else ""
        )
    )
    if m.get("samples_per_s"):
        lines.append(f"  {m['samples_per_s']:,.0f} samples/s")
    unit = facts["workload"].get("units")
    if m.get("units_per_s") and unit:
        eager = m.get("eager_units_per_s") or 0
        lines.append(f"  {m['units_per_s']:,.0f} {unit}/s against {eager:,.0f} {unit}/s eager")
    if m.get("decode_tokens_per_s"):
        eager = m.get("eager_decode_tokens_per_s") or 0
        lines.append(
            f"  decode {m['decode_tokens_per_s']:,.0f} tokens/s against {eager:,.0f} eager; "
            f"time to first token {_ms(m.get('ttft_s'))} against {_ms(m.get('eager_ttft_s'))}"
        )
    stored, eager_stored = m.get("weights_bytes"), m.get("eager_weights_bytes")
    if stored and eager_stored and stored != eager_stored:
        mib = f"{stored / 2**20:,.1f} MiB as stored against {eager_stored / 2**20:,.1f}"
        lines.append(f"  weights {mib} MiB eager")
    error = error_line(m)
    if error:
        lines.append(f"  error against eager fp32: {error}")
    return lines


def _ms(seconds: Any) -> str:
    return f"{seconds * 1e3:.1f} ms" if isinstance(seconds, (int, float)) else "-"


def error_line(metrics: dict[str, Any]) -> str:
    """The measured error of a file's metrics (``error_*``), e.g. ``max_abs 3.1e-03, cosine
    0.99998``; empty for a file written before they were recorded."""
    parts = []
    for name, shown in (("max_abs", ".2g"), ("max_rel", ".2g"), ("cosine", ".6f"),
                        ("accuracy", ".4g"), ("loss_rel", ".2g"),
                        ("grad_cosine", ".6f")):  # fmt: skip
        value = metrics.get(f"error_{name}")
        if isinstance(value, (int, float)):
            parts.append(f"{name} {value:{shown}}")
    return ", ".join(parts)


def _source(source: dict[str, Any]) -> dict[str, Any]:
    """The file's source, its storage URL masked: a file written by an older autotune may
    carry a password in the URL's query string."""
    shown = dict(source)
    if shown.get("storage") is not None:
        shown["storage"] = mask_url(shown["storage"])
    return shown


def _origin(facts: dict[str, Any]) -> list[str]:
    env, src = facts["tuned_on"], facts["source"]
    device = env.get("device_name") or env.get("device")
    versions = ", ".join(
        f"{name} {env[key]}" for key, name in
        (("torch", "torch"), ("triton", "triton"), ("cuda", "CUDA"), ("python", "Python"))
        if env.get(key)
    )  # fmt: skip
    lines = [f"Tuned on: {device} ({env.get('device')}) on host {env.get('host')}, {versions}"]
    lines.append(
        f"  study {src.get('study')!r}, trial {src.get('trial')}, storage {src.get('storage')}; "
        f"written {facts['created_at']} by autotune {facts['autotune_version']}"
    )
    model = facts["model"]
    if model:
        count = model.get("parameters")
        size = f"{count:,} parameters" if isinstance(count, int) else "parameters not recorded"
        lines.append(
            f"  model {model.get('root_class')} ({size}, structure {model.get('sha256')}) from "
            f"{model.get('source')}"
        )
    lines.append(_cache_line(facts["cache"]))
    if facts.get("aot"):
        lines.append(_aot_line(facts["aot"]))
    lines.append(_signature_line(facts["signature"]))
    if facts.get("cache") or facts.get("aot"):
        lines.append(
            "Native code: the cache and the package hold pickles and shared objects that run "
            "when loaded; autotune.apply loads them only with the SHA-256 this file records, "
            "so trust this folder as you would an installed program (cache=False ignores both)."
        )
    return lines


def _signature(best: BestConfig) -> dict[str, Any]:
    """Whether the entry is signed, and by this machine's key (``$AUTOTUNE_SIGNING_KEY``)."""
    from autotune.runtime import signing as _signing

    if not best.signature:
        return {"signed": False}
    try:
        secret = _signing.key()
    except ValueError:
        secret = None
    key_id = best.signature.get("key_id")
    verified = None
    if secret is not None and key_id == _signing.key_id(secret):
        verified = _signing.problem(best.to_dict(), secret) is None
    return {"signed": True, "key_id": key_id, "verified": verified}


def _signature_line(signature: dict[str, Any]) -> str:
    if not signature["signed"]:
        return (
            "Signature: none (its writer had no $AUTOTUNE_SIGNING_KEY, or a merge kept another "
            "machine's entry without vouching for it); autotune.apply with require_signature "
            "refuses it."
        )
    text = f"Signature: signed with key {signature['key_id']}"
    if signature["verified"]:
        return text + "; verified with $AUTOTUNE_SIGNING_KEY here."
    return text + "; not checked here ($AUTOTUNE_SIGNING_KEY is not that key, or not set)."


def _artifact(
    best: BestConfig, artifact: dict[str, Any] | None, path: str, compare: bool
) -> dict[str, Any] | None:
    """A shipped cache or package, whether it is beside the file, and how this machine
    differs from what it is valid for (with ``compare``)."""
    if not artifact:
        return None
    from pathlib import Path

    from autotune.runtime.cache import mismatches
    from autotune.runtime.config import sha256_of

    entry = dict(artifact)
    found = Path(path).parent / str(entry.get("path"))
    entry["present"] = found.is_file()
    entry["sha256_matches"] = entry["present"] and sha256_of(found) == entry.get("sha256")
    if compare:
        device = str(best.workload.get("device") or "cpu")
        entry["mismatches_here"] = mismatches(dict(entry.get("valid_for") or {}), device)
    return entry


def _aot_line(aot: dict[str, Any]) -> str:
    valid = aot.get("valid_for") or {}
    weights = (
        f"its frozen weights inside (built from weights sha256 "
        f"{str(aot.get('weights_sha256'))[:16]}…: a model with other weights compiles instead)"
        if aot.get("weights") == "embedded"
        else "weights taken from the model at load"
    )
    text = (
        f"AOTInductor package: {aot['path']} ({aot['bytes'] / 2**20:.1f} MiB, sha256 "
        f"{str(aot['sha256'])[:16]}…), the whole model compiled ahead of time, {weights}; "
        f"valid for torch {valid.get('torch')} on {valid.get('device_name')}"
    )
    return text + _here_tail(
        aot,
        "the package is not beside the file: the cache or a compile serves",
        "valid here: autotune.apply loads it and compiles nothing",
    )


def _cache_line(cache: dict[str, Any] | None) -> str:
    if cache is None:
        return (
            "Cache: no compile cache is shipped with this file (autotune cache export makes "
            "one); the first call compiles."
        )
    valid = cache.get("valid_for") or {}
    text = (
        f"Cache: {cache['path']} ({cache['bytes'] / 2**20:.1f} MiB, sha256 "
        f"{str(cache['sha256'])[:16]}…), valid for torch {valid.get('torch')} on "
        f"{valid.get('device_name')}"
    )
    if "threads" in valid:
        text += f" with {valid['threads']} threads"
    return text + _here_tail(
        cache,
        "the archive is not beside the file: the first call compiles",
        "valid here: autotune.apply loads it",
    )


def _here_tail(artifact: dict[str, Any], missing: str, valid: str) -> str:
    """How a shipped cache or package stands on this machine, ending its line."""
    if not artifact["present"]:
        return f"; {missing}."
    if not artifact.get("sha256_matches", True):
        return (
            "; its SHA-256 is not the one recorded (changed or replaced since it was "
            "written): it is never loaded."
        )
    if "mismatches_here" not in artifact:
        return "."
    if artifact["mismatches_here"]:
        return "; not valid here (" + "; ".join(artifact["mismatches_here"]) + ")."
    return f"; {valid}."


def _here(facts: dict[str, Any]) -> list[str]:
    here = facts["here"]
    if not here["mismatches"]:
        return ["Here: this machine matches the file (device, torch, triton, CUDA)."]
    lines = ["Here: this machine differs from where the file was tuned; its claims may not "
             "hold (autotune verify re-measures them):"]  # fmt: skip
    lines += [f"  {line}" for line in here["mismatches"]]
    return lines


def _finite(value: Any) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isinf(value)) else value
