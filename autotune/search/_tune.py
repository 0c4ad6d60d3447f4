"""``autotune.tune(model, inputs, **options)``: the options of ``autotune search`` as keyword
arguments (resolved by :func:`autotune.settings.resolve`, as given), the model handed to the
trial processes as a bundle the study owns."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from autotune import _faults
from autotune._printable import say
from autotune._secrets import mask_text
from autotune.errors import UsageError
from autotune.reports import terminal
from autotune.reports.progress import Progress
from autotune.search._open import finish_of, open_search, opening_lines
from autotune.search._result import TuneResult
from autotune.search._run import run_study
from autotune.settings import PYTHON, SearchOptions, resolve, storage_url
from autotune.workload import write_bundle

# Where the model bundles go, beside the default storage (autotune.db) in this folder.
MODELS_DIR = Path(".autotune") / "models"


def tune(
    model: Any,
    inputs: Any = None,
    *,
    traffic: Any = None,
    padding: dict[str, Any] | None = None,
    loss_fn: Callable[[Any, Any], Any] | None = None,
    get_optimizer: Callable[[Any], Any] | None = None,
    train_step: Callable[[Any, Any, Any], Any] | None = None,
    units: Callable[[Any], Any] | None = None,
    metric: Callable[[Any, Any], float] | None = None,
    models_dir: str | os.PathLike[str] = MODELS_DIR,
    **options: Any,
) -> TuneResult:
    """Searches how to compile ``model`` for ``inputs`` and writes the best-config file, as
    ``autotune search`` does for a model file: every trial in a process of its own, every
    result recorded to the storage, the decision re-measured against default compile.

    Args:
        model: An ``nn.Module``, or a function of no arguments that makes one. A class defined
            in a notebook cell or in ``__main__`` works: the model reaches the trial processes
            as a bundle written to ``models_dir`` (cloudpickle, the weights saved once as
            tensors), named after the class and the SHA-256 of its content. The bundle is
            code, like a model file, and the study records its hash.
        inputs: What a model file's ``get_inputs(device)`` returns: a tuple of positional
            arguments, a dict of keyword arguments, or a list of those (a shape
            distribution); or a function of the device (and of the batch size, with
            ``batch_sizes=``) that returns them. Tensors move to the study's device.
        traffic: Instead of ``inputs``, a served model's traffic, what a model file's
            ``get_traffic(device)`` returns: a list of ``(inputs, weight)`` requests, weight
            the request's share (a count or a fraction); or a function of the device that
            returns it. Each request is timed on its own, and the study ranks by the
            traffic's weighted mean latency, recording its p50/p95/p99.
        padding: How the model's inputs pad and its outputs are cut back, as a model file's
            ``PADDING`` says it (``{"inputs": {"input_ids": {"dim": 1, "value": 0}},
            "outputs": {"last_hidden_state": 1}}``): the space's shape plans (dimensions
            marked dynamic, padding to buckets) are then searched, and the best-config file
            carries the plan ``autotune.apply`` reproduces.
        loss_fn: With ``workload="train"``: ``loss_fn(output, inputs) -> Tensor`` (default: the
            mean of each floating-point output tensor, summed).
        get_optimizer: With ``workload="train"``: ``get_optimizer(model) -> Optimizer``
            (default ``AdamW(lr=1e-3)``).
        train_step: With ``workload="train"``: your own step,
            ``train_step(model, optimizer, inputs) -> loss`` (clipping, accumulation, a
            scheduler: whatever your loop does), timed as written with the model compiled
            (default: ``loss_fn`` of the output, ``backward()``, ``optimizer.step()``,
            ``optimizer.zero_grad()``).
        units: ``units(inputs)``: what one call processes, a count of samples or
            ``(count, "tokens")``; the reports and the file then give throughput in it.
        metric: ``metric(output, reference) -> float``, the task metric an accuracy contract
            may name (``accuracy="accuracy>=0.99"``), as a model file's ``accuracy``.
        models_dir: Where the bundle is written (default ``.autotune/models``).
        **options: The options of ``autotune search`` under their Python names:
            ``device="cuda"``, ``trials=40``, ``effort="quick"``, ``space="cpu"``,
            ``storage="sqlite:///autotune.db"``, ``study="name"``, ``out="best.json"``,
            ``timeout=600``, ``prune=False`` (``--no-prune``), ``batch_sizes=[1, 8]``,
            ``accuracy="cosine>=0.999"`` (the accuracy contract: bf16, TF32 and autocast enter
            the space), ``quiet=True`` (no live progress), ... (``autotune search --help``
            lists them).

    Returns:
        The study's decision, its best-config file and records (:class:`TuneResult`).

    Raises:
        UsageError: An option is unknown or its value breaks its rule (all said in one
            paragraph, with the option's Python name); the model or inputs cannot be saved; an
            output cannot be written or the storage cannot be used (a full disk, a damaged or
            read-only database: said as ``autotune`` says it, the cause chained).
    """
    functions = {"loss_fn": loss_fn, "get_optimizer": get_optimizer, "train_step": train_step,
                 "units": units, "accuracy": metric}  # fmt: skip
    resolve(options, language=PYTHON)  # refused before the bundle is written
    if (inputs is None) == (traffic is None):
        raise UsageError(
            "autotune.tune takes the model's inputs or its traffic, one of them: inputs= (what "
            "get_inputs returns: one call, or a list of calls run in one pass) or traffic= (a "
            "list of (inputs, weight) requests, each timed on its own); got "
            + ("both." if inputs is not None else "neither.")
        )
    given = {name: fn for name, fn in functions.items() if fn is not None}
    try:
        bundle = write_bundle(Path(models_dir), model, inputs, traffic, padding, **given)
        return _run(search_options(options, bundle))
    except Exception as exc:  # a fault the caller can cause: one exception, one paragraph
        said = _faults.paragraph(exc)
        if said is None:
            raise
        raise UsageError(mask_text(said)) from exc


def search_options(options: dict[str, Any], bundle: Path) -> SearchOptions:
    """The search of these keyword arguments on the model ``bundle`` (the storage: ``storage=``,
    else ``$AUTOTUNE_STORAGE``, else the SQLite file in this folder)."""
    values = {**options, "model": str(bundle), "storage": storage_url(options.get("storage"))}
    # The keywords as given: the bundle's path is where the model is now, which a resumed
    # study takes from this run without comparing it.
    return resolve(values, given=set(options), language=PYTHON)


def _run(args: SearchOptions) -> TuneResult:
    progress = Progress(quiet=args.quiet)
    search = open_search(args, progress.note)
    search.show_in(progress, "search")
    decided: list[Any] = []

    def decision(made: Any) -> None:
        progress.finish()
        decided.append(made)
        if not args.quiet:
            say(terminal.decision(made, args.out), flush=True)

    with progress:
        for line in opening_lines(search):
            progress.note(line)
        outcome = run_study(search, finish_of(args), on_decision=decision)
    if outcome.decision is None:
        raise UsageError(
            "No best-config file was written: the eager baseline was not measured before the "
            "run stopped. Call autotune.tune again with the same model to continue the study."
        )
    return TuneResult(
        study=search.request.study_name,
        storage=search.request.storage,
        out=args.out,
        decision=outcome.decision,
        records=outcome.records,
        not_shipped=outcome.not_shipped,
    )
