"""One process's session with a study: the Optuna study and autotune's records, the settings
settled against the stored ones and as this process runs them (its device and model file), its
row as a worker, and every database call made to ride out a restart."""

from __future__ import annotations

import os
import socket
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import optuna
from optuna.trial import TrialState

from autotune._deadline import Deadline
from autotune.errors import UsageError
from autotune.records import RecordStore, TrialRecord
from autotune.scoring import DIRECTIONS, Objective
from autotune.search._cache import KernelCache, own
from autotune.search._events import Events
from autotune.search._start_from import StartFrom
from autotune.settings import (
    DEFAULT,
    RequestFields,
    StudySettings,
    device_type,
    local_settings,
    settle,
)
from autotune.settings.rules import size
from autotune.space import SearchSpace, space_from_dict
from autotune.storage import (
    BASELINE_ATTR,
    KERNEL_CACHE_ATTR,
    TELL_REFUSED,
    WORKER_ATTR,
    cache_dir_source,
    default_cache_dir,
    finished_state,
    open_optuna_storage,
    recover_stale,
    retrying,
    settings_from_dict,
    tell_record,
)

# What the study's values are, by objective (and by --pareto axis), for Optuna's tools.
SCORE_METRICS = {
    "latency": "speedup_vs_eager",
    "throughput": "samples_per_s",
    "amortized": "amortized_speedup_vs_eager",
}
# The memory axis is in bytes (study._pareto.axis_value), named as the record names it.
AXIS_METRICS = {
    "latency": "speedup_vs_eager",
    "compile": "compile_time_s",
    "memory": "peak_memory_bytes",
}

T = TypeVar("T")


class StudyNotFound(UsageError):
    """The storage has no study of that name (yet: a worker may start before it is created)."""

    def __init__(self, study: str) -> None:
        super().__init__(
            f"There is no study {study!r} in this storage to join. Create it with `autotune "
            f"search MODEL.py --study {study} --storage URL` (--no-worker creates it without "
            "running trials); workers started before that wait for it until their --timeout."
        )


@dataclass(frozen=True)
class SearchRequest(RequestFields):
    """One process's part in a study: where the study is, what it asks, where it runs.

    Attributes:
        settings: The study's settings; ``None`` joins the study as stored (a worker).
        given: The names of the settings this run set on purpose; the others keep the values
            stored with the study when it exists (None: all were given).
        deadline: This run's wall-clock limit (``--timeout``): probes, trials and finalists.
        device: Where this process runs its trials (default: the study's device); a study
            on ``cuda`` takes workers on any CUDA device.
        model_path: The model file this process runs, named by its operator (the study's row
            only says where it was: a process that runs trials and names none is refused).
        trust_model_path: Run the model file even if its content differs from the study's.
        allow_unsafe_knobs: The knobs refused from data (see :mod:`autotune.runtime.safety`)
            that this process's operator vouches for: those of the space file it was given,
            or the command line's --allow-unsafe-knob. The stored space's [unsafe] table
            counts only for knobs named here.
        allow_version_mismatch: Join even if this torch or triton differs from the study's.
        cache_limit_bytes: Past this, the kernel cache's oldest files are removed.
        start_from: An earlier study to start from (``--start-from``), queued once.
        notes: What the request derived from the model file that its options did not say
            (a scope it narrowed, and why), printed as the study opens.
    """

    study_name: str
    storage: str
    settings: StudySettings | None
    given: frozenset[str] | None = None
    deadline: Deadline = field(default_factory=Deadline)
    allow_unsafe_knobs: tuple[str, ...] = ()
    cache_limit_bytes: int = size(DEFAULT["cache_limit"])
    start_from: StartFrom | None = None
    notes: tuple[str, ...] = ()


class Session:
    """A process's part in a study (see :class:`SearchRequest`), once joined: ``settings`` are
    the study's, ``local`` the same as this process runs them, ``space`` the stored space."""

    def __init__(self, request: SearchRequest, events: Events) -> None:
        self.request = request
        self.events = events
        self.seconds: dict[str, float] = {}  # ask, suggest, database: see timed
        self._timing: set[str] = set()
        self.records = RecordStore(request.storage)
        self.study = open_study(request)
        given = "--cache-dir" if request.cache_dir is not None else None
        # The kernel cache this process's trials share: the request's, else the study's own.
        self.cache_dir = request.cache_dir or default_cache_dir(
            request.study_name, self.study._study_id, request.storage
        )
        self.cache: KernelCache = own(
            self.cache_dir, given or cache_dir_source(), self._cache_recorded, self._record_cache
        )
        self.created = False
        self.settings = self._settle_settings()
        self.local = self._local_settings()
        self.space: SearchSpace = space_from_dict(
            self.settings.space,
            self.local.device,
            source=f"study {request.study_name}",
            workload=self.settings.workload,
            allow_unsafe_knobs=request.allow_unsafe_knobs,
        )
        self.objective = Objective.of(self.settings)
        self.worker_id = -1

    @property
    def name(self) -> str:
        return self.request.study_name

    def _record_cache(self, cache_id: str, where: dict[str, Any]) -> None:
        """Records a kernel cache folder made for this study, before it is marked."""
        self.db(self.study.set_user_attr, KERNEL_CACHE_ATTR + cache_id, where)

    def _cache_recorded(self, cache_id: str) -> Any:
        """Where a study of this database made the kernel cache folder marked ``cache_id``
        (a shared $AUTOTUNE_CACHE_DIR serves every study of one database); None if none did."""
        key = KERNEL_CACHE_ATTR + cache_id
        mine = self.db(lambda: self.study.user_attrs)
        if key in mine:
            return mine[key]
        storage: Any = self.study._storage
        studies = self.db(storage.get_all_studies)
        return next((s.user_attrs[key] for s in studies if key in s.user_attrs), None)

    def ask(self) -> optuna.Trial:
        with warnings.catch_warnings():
            # Optuna warns that heartbeats are meant for Study.optimize; _heartbeat keeps them.
            warnings.filterwarnings("ignore", message="Heartbeat of storage")
            with self.timed("ask"):  # the sampler, and the storage reads it makes
                trial = retrying(self.study.ask, on_retry=self.note_unreachable)
        # A trial without a heartbeat is never found stale: beat before anything can fail,
        # and fail it if this process is stopped (SIGTERM, Ctrl-C) before handing it over.
        storage: Any = self.study._storage
        try:
            self.db(storage.record_heartbeat, trial._trial_id)
            self.db(trial.set_user_attr, WORKER_ATTR, self.worker_id)
        except BaseException:
            self.fail(trial)
            raise
        return trial

    def tell(self, trial: optuna.Trial, record: TrialRecord) -> bool:
        return tell_record(self.study, trial, record, self.objective, self.settings.pareto)

    def fail(self, trial: optuna.Trial) -> None:
        """Tells Optuna the trial failed (riding out a restarting database): nothing this
        process stops stays RUNNING."""

        def fail() -> None:
            try:
                self.study.tell(trial, state=TrialState.FAIL)
            except TELL_REFUSED:
                if finished_state(self.study, trial) is None:
                    raise

        try:
            self.db(fail)
        except Exception:  # noqa: BLE001 - the database is gone for good: its heartbeat stops,
            pass  # and another process fails the trial once it is stale

    def recover_stale(self) -> None:
        """Trials whose process died are finished from their record or failed and retried
        (see autotune.storage._stale), between this process's trials."""
        self.db(recover_stale, self.study, self.records, self.objective, self.settings.pareto)

    def running(self) -> list[optuna.trial.FrozenTrial]:
        states = (TrialState.RUNNING,)
        return list(self.db(lambda: self.study.get_trials(deepcopy=False, states=states)))

    def running_searched(self) -> list[optuna.trial.FrozenTrial]:
        return [t for t in self.running() if BASELINE_ATTR not in t.user_attrs]

    def join(self) -> tuple[int, int]:
        """Records this process as a worker of the study; its index among them seeds its
        sampler (the study's seed plus the index), so workers never replay one another."""
        gpu = os.environ.get("CUDA_VISIBLE_DEVICES")
        worker_id = self.db(
            lambda: self.records.start_worker(
                self.name, socket.gethostname(), os.getpid(), gpu, self.local.device
            )
        )
        ids = [w.id for w in self.db(lambda: self.records.workers(self.name))]
        return worker_id, ids.index(worker_id)

    def worker(self) -> dict[str, Any]:
        return {
            "id": self.worker_id,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "gpu": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "device": self.local.device,
        }

    def owner(self) -> str:
        return f"{socket.gethostname()}:{os.getpid()}:worker{self.worker_id}"

    def db(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` against the database, riding out a restart or a refused connection."""
        with self.timed("database"):
            return retrying(lambda: fn(*args), on_retry=self.note_unreachable)

    @contextmanager
    def timed(self, what: str) -> Iterator[None]:
        """Adds the seconds spent to ``self.seconds[what]`` (the outermost timing of a kind
        counts once): what the study's bookkeeping costs next to its trials."""
        if what in self._timing:
            yield
            return
        self._timing.add(what)
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[what] = self.seconds.get(what, 0.0) + time.perf_counter() - started
            self._timing.discard(what)

    def note_unreachable(self, exc: BaseException) -> None:
        self.events.note_once(
            f"the database is unreachable ({type(exc).__name__}); retrying with backoff for up "
            "to two minutes"
        )

    def _settle_settings(self) -> StudySettings:
        """Creates the study's settings, or settles what this run asked for against the stored
        ones (only what may change, changes; it is stored and said). A worker (no settings
        asked for) takes the stored ones."""
        name = self.request.study_name
        requested = self.request.settings
        if requested is None:
            stored = self.records.study_settings(name)
            if stored is None:
                raise StudyNotFound(name)
            return settings_from_dict(stored)
        raw, self.created = self.records.open_study(
            name, self.study._study_id, requested.to_dict()
        )
        stored_settings = settings_from_dict(raw)
        settings, notes = settle(name, stored_settings, requested, self.request.given)
        if settings != stored_settings:
            changes = {
                k: v for k, v in settings.to_dict().items() if v != stored_settings.to_dict()[k]
            }
            settings = settings_from_dict(self.records.update_study_settings(name, changes))
        for note in notes:
            self.events.on_note(note)
        return settings

    def _local_settings(self) -> StudySettings:
        """The study's settings as this process runs them: its own device and model path,
        after the checks that it may join (same torch and triton, same model file)."""
        # A worker that names no device takes the study's kind: CUDA_VISIBLE_DEVICES says which.
        requested = self.request.settings
        joining = requested is None
        stored = device_type(self.settings.device) if joining else self.settings.device
        # The model file is the one this process was given: --model, else the settings its
        # caller built from its own file; never the path the database holds.
        model = self.request.model_path or (requested.model_path if requested else None)
        # A study its own caller made without a hash (the Python API) runs the caller's file.
        unhashed = requested is not None and self.settings.model_sha256 is None
        return local_settings(
            self.name, self.settings, self.request.device or stored, model,
            trust_model_path=self.request.trust_model_path or unhashed,
            allow_version_mismatch=self.request.allow_version_mismatch,
            on_note=self.events.on_note,
        )  # fmt: skip


def open_study(request: SearchRequest) -> optuna.Study:
    """Creates or loads the study: one direction (maximize the score), or one per --pareto
    axis, where Optuna's TPE sampler runs its multi-objective variant."""
    settings = request.settings
    axes = (settings.pareto if settings is not None else None) or []
    storage = open_optuna_storage(request.storage)
    if settings is None:
        try:
            return optuna.load_study(study_name=request.study_name, storage=storage)
        except KeyError:
            raise StudyNotFound(request.study_name) from None
    study = optuna.create_study(
        study_name=request.study_name,
        storage=storage,
        directions=[DIRECTIONS[axis] for axis in axes] or ["maximize"],
        load_if_exists=True,
    )
    names = [AXIS_METRICS[axis] for axis in axes] or [SCORE_METRICS[settings.objective]]
    # optuna-dashboard labels the values with these; a study made with other directions is
    # refused when the settings are compared, not here.
    if study.metric_names != names and len(names) == len(study.directions):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            study.set_metric_names(names)
    return study
