"""The scope plan, settled once per study: the process that claims the probes runs them, the
others wait for the stored plan (or take the claim over when its owner died)."""

from __future__ import annotations

import time

from autotune._deadline import Deadline
from autotune.scope import PROBE_MEASURE, ScopePlan, plan_scopes
from autotune.search._session import Session
from autotune.storage import beating, grace_s, settings_from_dict
from autotune.trials import TrialRunner, TrialSpec

SCOPE_CLAIM = "scope_plan"
POLL_S = 1.0


def settle_scope_plan(
    session: Session, runner: TrialRunner, deadline: Deadline
) -> ScopePlan | None:
    """Analyzes and probes the model's parts once per study (with ``runner``). Every later run
    and worker reuses the plan, so the scope parameter never changes its choices."""
    if session.settings.scope != "search":
        return None
    events = session.events
    while session.settings.scope_plan is None:
        owner = session.owner()
        if session.db(session.records.claim, session.name, SCOPE_CLAIM, owner, grace_s()):
            _probe_and_store(session, owner, runner, deadline)
        else:
            events.note_once("scope: waiting for another process to probe the model's parts")
            deadline.check("while waiting for the scope probes")
            time.sleep(POLL_S)
            stored = session.db(lambda: session.records.study_settings(session.name))
            session.settings = settings_from_dict(stored or session.settings.to_dict())
    plan = ScopePlan.from_dict(session.settings.scope_plan)
    for probe in plan.excluded:
        events.note_once(f"scope: kept eager everywhere: {probe.brief()}")
    events.note_once(f"scope: candidates {', '.join(plan.names)}")
    return plan


def _probe_and_store(
    session: Session, owner: str, runner: TrialRunner, deadline: Deadline
) -> None:
    name, records = session.name, session.records
    try:
        with beating(lambda: records.beat_claim(name, SCOPE_CLAIM, owner)):
            plan = _probe(session, runner, deadline)
    except BaseException:
        session.db(lambda: records.release_claim(name, SCOPE_CLAIM, owner))
        raise
    settings = session.db(lambda: records.settle_study_setting(name, "scope_plan", plan.to_dict()))
    session.db(lambda: records.finish_claim(name, SCOPE_CLAIM, owner))
    session.settings = settings_from_dict(settings)


def _probe(session: Session, runner: TrialRunner, deadline: Deadline) -> ScopePlan:
    s, local, events = session.settings, session.local, session.events
    backends = session.space.to_dict().get("compile", {}).get("backend", ["inductor"])
    events.on_note(f"scope: analyzing {local.model_path} and probing its parts one by one")
    events.on_phase("analyzing", local.model_path)
    base = TrialSpec(
        model_path=local.model_path, device=local.device, config=None, workload=s.workload,
        seed=s.seed,
        time_limit_s=s.compile_budget, measure=PROBE_MEASURE, cache_dir=session.cache_dir,
        traffic=s.traffic,
    )  # fmt: skip
    return plan_scopes(
        base, runner, backend=backends[0] if isinstance(backends, list) else backends,
        on_probe=lambda r: events.on_note(f"  probe {r.brief()}"),
        on_target=lambda name: events.on_phase("probing", name), deadline=deadline,
    )  # fmt: skip
