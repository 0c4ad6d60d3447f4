"""What ``autotune verify`` reports without failing: another environment, device, model or
inputs than the file's; a noisy machine under a raised --tolerance; default compile failing; a
slow cold compile."""

from __future__ import annotations

from collections.abc import Sequence

from autotune.runtime.config import BestConfig
from autotune.trials import TrialResult
from autotune.verify._figures import Numbers, Repeat

NOISY = 0.10  # a noise floor above this gets a warning: small drops cannot be told apart
COMPILE_SLOWER = 1.5  # a cold compile this many times the claimed one gets a warning


def environment_mismatches(best: BestConfig, eager: TrialResult) -> list[str]:
    """The file's fingerprint against this machine's: torch, triton, cuda, device name."""
    from autotune.runtime.fingerprint import environment_mismatches

    return [
        f"environment: {line}"
        for line in environment_mismatches(best.environment, eager.environment)
    ]


def workload_warnings(best: BestConfig, device: str, eager: TrialResult) -> list[str]:
    """What was verified is not quite what was tuned: another device, model or inputs."""
    found: list[str] = []
    tuned_on = best.workload.get("device")
    if tuned_on and tuned_on != device:
        found.append(f"device: tuned on {tuned_on!r}, verified on {device!r}")
    tuned_model = best.model.get("sha256")
    if tuned_model and tuned_model != eager.model.get("sha256"):
        found.append("model: its structure differs from the one the file was tuned for")
    if best.workload.get("inputs") and best.workload["inputs"] != eager.inputs:
        found.append(f"inputs: tuned with {best.workload['inputs']}, verified with {eager.inputs}")
    return found


def measure_warnings(
    best: BestConfig,
    repeats: Sequence[Repeat],
    claimed: Numbers,
    measured: Numbers,
    noise: float | None,
    tol: float,
) -> list[str]:
    """Findings that fail no claim: a noisy machine (under a raised --tolerance), default
    compile failing, a slow cold compile."""
    found: list[str] = []
    if noise is not None and NOISY < noise <= tol:  # past --tolerance it is a verdict
        found.append(
            f"noisy timing: eager timed against itself strays ±{noise:.0%} from 1.0, so only "
            "larger drops can fail a claim; verify on a quiet machine, or with --repeats"
        )
    failed = [r["default"] for r in repeats if "default" in r and not r["default"].ok]
    if failed and best.config is not None:
        found.append(f"default torch.compile failed here: {failed[0].failure_kind}")
    return found + _compile_warnings(best, claimed, measured)


def _compile_warnings(best: BestConfig, claimed: Numbers, measured: Numbers) -> list[str]:
    """A cold compile far above the file's (compile times vary less predictably than steady
    state: a warning), or above the compile cap its --pick rule promised."""
    was, now = claimed["compile_time_s"], measured["compile_time_s"]
    if not now:
        return []
    found = []
    if was and now > was * COMPILE_SLOWER:
        found.append(f"cold compile: claimed {was:.1f} s, measured {now:.1f} s")
    cap = (best.source.get("pick_rule") or {}).get("max_compile_s")
    if cap is not None and now > cap:
        found.append(
            f"cold compile: measured {now:.1f} s, above the compile<={cap:g}s of the rule that "
            f"picked this config (--pick {best.source.get('pick')}); search again on this "
            "machine"
        )
    return found
