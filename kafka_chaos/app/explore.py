"""The application service behind ``kafka-chaos explore``: run a generated schedule, and when it
fails shrink it, triage it, confirm it and write it as a replayable schedule file. The CLI
parses arguments, loops over schedule indexes and prints; benchmarks and tests call this."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_chaos.scenarios.checks.expectations import Predictor
from kafka_chaos.scenarios.checks.time_ledger import counted_ledgers
from kafka_chaos.scenarios.model.ledger import TimeLedger

if TYPE_CHECKING:
    from kafka_chaos.records.schema import Record
    from kafka_chaos.scenarios.plans.generator import GeneratorConfig
    from kafka_chaos.scenarios.plans.schedule import Schedule
    from kafka_chaos.scenarios.run.pool import ClusterPool
    from kafka_chaos.scenarios.run.runner import Healed, Progress, RunOptions, ScenarioOutcome

TRIAL_RECORDS = "trial.jsonl"


@dataclass(frozen=True)
class ShrinkBudget:
    """How much a failure gets: seconds of shrinking (0: none) and replays of the minimal
    schedule (all failing = confirmed)."""

    seconds: float = 600.0
    confirm: int = 3


@dataclass
class Explorer:
    """One pool (one cluster at a time), one results dir; runs schedules and shrink trials."""

    results: Path
    pool: ClusterPool
    options: RunOptions
    progress: Progress
    predictor: Predictor | None = None
    trials: int = 0
    # Every run's counted time ledgers, shrink trials' too (app.time_summary).
    ledgers: list[TimeLedger] = field(default_factory=list)
    # Whether another schedule will run after this one (the CLI's time limit): only then is its
    # cluster started while this one drains.
    keep_going: Callable[[], bool] = lambda: True

    def run(self, schedule: Schedule, directory: Path, iteration: int, records_file: str = "records.jsonl",
            on_healed: Healed | None = None) -> tuple[ScenarioOutcome, list[Record]]:
        from kafka_chaos.app.runs import run_in_directory

        outcome, records = run_in_directory(self.options, self.pool, self.progress, self.predictor,
                                            schedule.scenario(), iteration, directory, records_file,
                                            on_healed=on_healed)
        self.ledgers += counted_ledgers(records)
        return outcome, records

    def trial(self, schedule: Schedule) -> frozenset[tuple[str, str | None]]:
        from kafka_chaos.scenarios.plans.shrink import failure_keys

        self.trials += 1
        # trial.jsonl, not records.jsonl: reports over the results dir leave trials out.
        _, records = self.run(schedule, self.results / "shrink" / schedule.name / f"trial-{self.trials}",
                              self.trials, TRIAL_RECORDS)
        return failure_keys(records)


def primary_failure(records: list[Record]) -> tuple[str, str | None]:
    """The first failed check and the fault it followed: what shrinking must keep failing."""
    first = next(r for r in records if r.kind == "check" and r.passed is False)
    return (first.check, first.fault)


def explore_one(explorer: Explorer, seed: int, index: int, config: GeneratorConfig,
                budget: ShrinkBudget = ShrinkBudget(), then: int | None = None) -> dict[str, Any]:
    """Generate schedule ``index`` of ``seed``, run it, and when it fails shrink, triage, confirm
    and write it; a summary of what happened (``steps_checked`` always, the rest for a failure).

    ``then``: the index of the schedule that follows, whose cluster is started once this one
    has healed, if it passed so far (a failure is shrunk on this schedule's cluster first)."""
    from kafka_chaos.scenarios.checks.triage import classify
    from kafka_chaos.scenarios.plans.generator import generate
    from kafka_chaos.scenarios.plans.schedule import dumps
    from kafka_chaos.scenarios.plans.shrink import shrink

    schedule = generate(seed, index, config)
    (explorer.results / "schedules").mkdir(parents=True, exist_ok=True)
    (explorer.results / "schedules" / f"{schedule.name}.json").write_text(dumps(schedule), encoding="utf-8")
    explorer.progress(f"{schedule.name}: {len(schedule.steps)} steps on brokers {list(schedule.brokers)}: "
                      + ", ".join(s.fault for s in schedule.steps))

    def start_next_cluster(outcome: ScenarioOutcome) -> None:
        if then is not None and outcome.passed and explorer.keep_going():
            explorer.pool.prepare(generate(seed, then, config).scenario().needs)

    outcome, records = explorer.run(schedule, explorer.results, 0, on_healed=start_next_cluster)
    checked = sum(1 for r in records if r.check == "converged" and r.fault != "create_topic")
    if outcome.passed:
        return {"steps_checked": checked}
    failed = [r for r in records if r.kind == "check" and r.passed is False]
    if not failed:  # unknown verdicts only: the harness could not judge
        first = next((r for r in records if r.kind == "check" and r.passed is None), None)
        explorer.progress(f"{schedule.name}: no verdict ({first.detail if first else outcome.error}); not shrunk")
        return {"steps_checked": checked}
    key = primary_failure(records)
    triaged = classify(failed[0], records)
    minimal = schedule
    if budget.seconds > 0:
        explorer.progress(f"{schedule.name}: {key[0]} failed after {key[1]}; shrinking (budget {budget.seconds:.0f}s)")
        result = shrink(schedule, key, explorer.trial, budget_s=budget.seconds,
                        progress=lambda m: explorer.progress(f"{schedule.name}: {m}"), release=config.kafka_version)
        minimal = result.schedule
    reproduced = sum(key in explorer.trial(minimal) for _ in range(budget.confirm))
    confirmed = budget.confirm > 0 and reproduced == budget.confirm
    path = explorer.results / "failures" / f"{schedule.name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = (f"{triaged.klass}: {key[0]} failed after {key[1]} ({triaged.evidence}); shrunk from "
           f"{len(schedule.steps)} to {len(minimal.steps)} step(s); reproduced {reproduced}/{budget.confirm}")
    path.write_text(dumps(replace(minimal, name=f"{schedule.name}-min", doc=doc)), encoding="utf-8")
    return {"failed": True, "steps_checked": checked, "name": schedule.name, "class": triaged.klass,
            "check": key[0], "fault": key[1], "evidence": triaged.evidence, "steps": len(schedule.steps),
            "minimal_steps": len(minimal.steps), "reproduced": f"{reproduced}/{budget.confirm}",
            "confirmed": confirmed, "file": str(path), "replay": f"kafka-chaos run --schedule {path}"}


def write_failures(results: Path, failures: list[dict[str, Any]]) -> None:
    (results / "failures").mkdir(parents=True, exist_ok=True)
    (results / "failures" / "index.json").write_text(json.dumps(failures, indent=2) + "\n", encoding="utf-8")
