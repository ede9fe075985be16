"""The application service behind ``kafka-chaos run`` (and ``explore``, ``check``): run scenario
iterations on a cluster pool into a results directory — records, history, run.json, rerun file,
kept schedule files, JUnit — then the report. The CLI parses arguments and calls it; tests and
benchmarks call it directly."""

from __future__ import annotations

import json
import logging
import platform
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_chaos.app.progress import Progress

if TYPE_CHECKING:
    from kafka_chaos.harness.cluster import ManagedCluster
    from kafka_chaos.records.schema import Record
    from kafka_chaos.records.writer import RecordSink
    from kafka_chaos.scenarios.checks.expectations import Predictor
    from kafka_chaos.scenarios.plans.spec import KnownBug, Scenario
    from kafka_chaos.scenarios.run.pool import ClusterPool
    from kafka_chaos.scenarios.run.runner import Healed, RunOptions, ScenarioOutcome

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def git_revision() -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(PROJECT_ROOT), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def versions(kafka_version: str) -> dict[str, Any]:
    versions: dict[str, Any] = {"kafka": kafka_version, "python": platform.python_version()}
    try:
        import confluent_kafka

        versions["confluent_kafka"] = confluent_kafka.version()[0]
        versions["librdkafka"] = confluent_kafka.libversion()[0]
    except Exception:  # noqa: BLE001
        pass
    return versions


def summary_table(cases: list[Case]) -> str:
    rows = [("scenario", "iter", "result", "pass", "fail", "unknown", "seconds")]
    for c in cases:
        o = c.outcome
        ok, bad, unknown = o.counts
        skipped = bool(o.results) and all(r.check == "backend_supports_scenario" for r in o.results)
        result = ("CAUGHT" if c.verdict == "caught" else "MISSED" if c.expects
                  else "PASS" if o.passed else "SKIP" if skipped else "FLAKY" if c.verdict == "flaky"
                  else "CLIENT" if c.verdict == "client" else "ERROR" if o.error and not bad else "FAIL")
        rows.append((o.scenario, str(o.iteration), result, str(ok), str(bad), str(unknown), f"{o.seconds:.1f}"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    for c in cases:
        o = c.outcome
        for r in o.results:
            if r.passed is not True:
                where = f" {r.topic}-{r.partition}" if r.partition is not None else (f" {r.topic}" if r.topic else "")
                lines.append(f"  {o.scenario}#{o.iteration} {r.check}{where}: {r.verdict}: {r.detail}")
        if o.error:
            lines.append(f"  {o.scenario}#{o.iteration}: error: {o.error}")
        if c.reruns:
            lines.append(f"  {o.scenario}#{o.iteration}: reruns {', '.join('pass' if r.passed else 'FAIL' for r in c.reruns)}"
                         f" -> {c.verdict}")
    return "\n".join(lines)


def quiet_client_logs() -> None:
    """Our progress lines say what happens; client chatter about brokers we broke would drown them."""
    logging.getLogger("kazoo").setLevel(logging.WARNING)
    # Metadata polls of brokers that are down on purpose fail by design; the checks report them.
    logging.getLogger("kafka_chaos.harness.metadata.librdkafka").setLevel(logging.CRITICAL)
    # The workload's client sees brokers disconnect during every fault: that is the experiment,
    # and the delivery checks and client_errors() account for it. Keep its chatter for -v.
    if not logging.getLogger().isEnabledFor(logging.DEBUG):
        logging.getLogger("kafka_chaos.scenarios.clients.workload.librdkafka").setLevel(logging.CRITICAL)
        logging.getLogger("kafka_chaos.scenarios.clients.readback.librdkafka").setLevel(logging.CRITICAL)


def progress_printer(t0: float) -> Callable[[str], None]:
    """Progress lines stamped with the seconds since ``t0`` (plain lines: CI logs keep them)."""
    return Progress(t0=t0)


@dataclass
class Case:
    """One scenario iteration and its reruns (``--deflake``): pass, flaky (a rerun passed) or fail."""

    outcome: ScenarioOutcome  # of the first attempt (the run's records)
    reruns: list[ScenarioOutcome] = field(default_factory=list)
    # Why every failed check of the first attempt is a known client defect the run tolerates.
    tolerated: str | None = None
    # The known Kafka bug the scenario's release has (the corpus suite): it must fail that check.
    expects: KnownBug | None = None

    @property
    def verdict(self) -> str:
        if self.expects is not None:  # caught in some attempt, or missed: tolerance does not apply
            attempts = [self.outcome, *self.reruns]
            return "caught" if any(self.expects.caught_in(a.results) for a in attempts) else "fail"
        if self.outcome.passed:
            return "pass"
        if any(r.passed for r in self.reruns):
            return "flaky"
        return "client" if self.tolerated else "fail"


def run_scenarios(scenarios: list[Scenario], *, seed: int, results_dir: Path, backend: str = "local",
                  iterations: int = 1, junit: Path | None = None, kafka_version: str | None = None,
                  kafka_home: str | None = None, report: bool = True, suite: str | None = None,
                  command: list[str] | None = None, predictor: Predictor | None = None,
                  runner_options: dict[str, Any] | None = None,
                  open_cluster: Callable[..., ManagedCluster] | None = None, deflake: int = 0,
                  plan: list[tuple[Scenario, int]] | None = None, sources: dict[str, str] | None = None,
                  tolerate: str | None = None, kafka_defaults: bool = False) -> int:
    """The body of ``kafka-chaos run`` (also used by tests to inject a wrong oracle). ``plan``:
    explicit (scenario, iteration) pairs instead of every scenario ``iterations`` times.

    ``kafka_defaults``: catalogue scenarios (not schedule files, named in ``sources``: a file runs
    as written, so its kept copy replays it) state Kafka's defaults where the harness's quick
    ones differ (:func:`~scenarios.plans.spec.with_kafka_defaults`), as ``kafka-chaos run`` does
    unless ``--harness-defaults``; recorded in run.json and rerun.json. Off by default: the test
    command's direct calls keep the quick ones (its 15-minute budget)."""
    if kafka_defaults:
        # the release the run's clusters start on (a --kafka-home one's is not known here: KRaft
        # then keeps the harness's rebalance default, harness.config.kafka_default_overrides)
        from kafka_chaos.harness.distribution import DEFAULT_KAFKA_VERSION

        release = kafka_version or (None if kafka_home else DEFAULT_KAFKA_VERSION)
        scenarios = kafka_defaults_stated(scenarios, sources or {}, release)
        if plan is not None:
            plan = list(zip(kafka_defaults_stated([s for s, _ in plan], sources or {}, release),
                            [i for _, i in plan]))
    from kafka_chaos.harness.config import check_kraft_release
    from kafka_chaos.harness.distribution import resolve_distribution
    from kafka_chaos.records.writer import RecordWriter
    from kafka_chaos.app.time_summary import time_table
    from kafka_chaos.scenarios.checks.time_ledger import counted_ledgers
    from kafka_chaos.scenarios.model.ledger import summed
    from kafka_chaos.scenarios.history.observations import HistoryWriter
    from kafka_chaos.scenarios.run.junit import JUnitCase, write_junit
    from kafka_chaos.scenarios.run.pool import ClusterPool
    from kafka_chaos.scenarios.run.runner import Runner, RunOptions

    from kafka_chaos.scenarios.plans.spec import expecting_known_bug

    cases_planned = plan if plan is not None else [(s, i) for s in scenarios for i in range(iterations)]
    progress = Progress(total=len(cases_planned))
    t0 = progress.t0
    quiet_client_logs()
    distribution = resolve_distribution(kafka_version, kafka_home)
    # A scenario run on a release with a Kafka bug it meets expects that bug (CAUGHT, or MISSED)
    cases_planned = [(expecting_known_bug(s, s.needs.kafka_version or distribution.version), i)
                     for s, i in cases_planned]
    for scenario, _ in cases_planned:  # refused in one line before any cluster starts
        check_kraft_release(scenario.needs.mode, scenario.needs.kafka_version or distribution.version)
    run_id = uuid.uuid4().hex[:12]
    options = RunOptions(run_id=run_id, seed=seed, backend=backend, iterations=iterations,
                         results_dir=Path(results_dir), kafka_version=distribution.version,
                         git_revision=git_revision(), **(runner_options or {}))
    writer = RecordWriter(results_dir)
    history = HistoryWriter(Path(results_dir))
    info: dict[str, Any] = {
        "run_id": run_id, "command": command, "suite": suite, "scenarios": [s.name for s in scenarios],
        "iterations": iterations, "seed": seed, "backend": backend, "kafka_version": distribution.version,
        "kafka_source": distribution.source, "git_revision": options.git_revision,
        "versions": versions(distribution.version), "started_at": time.time(), "status": "running",
        "cluster_needs": {s.name: {"brokers": s.needs.brokers, "overrides": s.needs.overrides_dict,
                                   **({"log_dirs": s.needs.log_dirs} if s.needs.log_dirs != 1 else {})}
                          for s in scenarios},
        "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(options).items()}, "deflake": deflake,
        "kafka_defaults": kafka_defaults,
    }
    writer.write_run_info(info)
    keep_schedules(Path(results_dir), sources or {})
    print(f"kafka-chaos run {run_id}: {len(cases_planned)} scenario iteration(s), seed {seed}, "
          f"results in {results_dir}", flush=True)
    pool = ClusterPool(backend, distribution, progress, open_cluster=open_cluster,
                       settle_timeout=options.settle_timeout)
    tee = TeeWriter(writer)  # each case's records, for triage (--tolerate client)
    runner = Runner(options, pool, tee, progress, history=history, predictor=_predicting(predictor))
    cases: list[Case] = []
    rerun_records: list[Record] = []  # (their time is the run's too)
    status = "interrupted"
    try:
        for s, i in cases_planned:
            progress.case_started(f"{s.name}#{i}")
            progress(f"{s.name}#{i}: start ({s.needs.describe()})")
            first = len(tee.records)
            case = Case(runner.run(s, i), expects=s.expects)
            if tolerate == "client" and s.expects is None:
                case.tolerated = client_defects_only(case.outcome, tee.records[first:])
            for attempt in range(1, (s.expects.attempts if s.expects is not None else deflake + 1)):
                if case.verdict in ("pass", "flaky", "caught"):
                    break
                rerun, records = _rerun_once(options, pool, progress, predictor, s, i, attempt)
                case.reruns.append(rerun)
                rerun_records += records
            cases.append(case)
            progress.case_done()
            ok, bad, unknown = case.outcome.counts
            progress(f"{s.name}#{i}: {case.verdict.upper()} ({ok} passed, {bad} failed, {unknown} unknown) "
                     f"in {case.outcome.seconds:.1f}s" + (f"; {len(case.reruns)} rerun(s)" if case.reruns else ""))
        status = "finished"
    finally:
        progress.close()
        pool.release()
        writer.close()
        history.close()
        info.update(status=status, finished_at=time.time(), wall_seconds=round(time.monotonic() - t0, 1),
                    passed=bool(cases) and all(c.verdict != "fail" for c in cases) and status == "finished",
                    tolerate=tolerate, time_ledger=summed(counted_ledgers(tee.records + rerun_records)).as_dict(),
                    outcomes=[{"scenario": c.outcome.scenario, "iteration": c.outcome.iteration,
                               "passed": c.outcome.passed, "verdict": c.verdict, "tolerated": c.tolerated,
                               "reruns": len(c.reruns),
                               "seconds": round(c.outcome.seconds, 1), "error": c.outcome.error} for c in cases])
        writer.write_run_info(info)
        write_rerun_file(Path(results_dir), seed, backend, cases, sources or {}, kafka_defaults)
        if junit is not None:
            write_junit(junit, [JUnitCase(c.outcome.scenario, c.outcome.iteration, c.outcome.seconds, c.outcome.results,
                                          c.outcome.error, tuple((r.results, r.error) for r in c.reruns), c.tolerated,
                                          c.expects)
                                for c in cases])
    print(summary_table(cases), flush=True)
    print(time_table(counted_ledgers(tee.records + rerun_records), time.monotonic() - t0), flush=True)
    print(f"wall time {time.monotonic() - t0:.1f}s; records in {Path(results_dir) / 'records.jsonl'}", flush=True)
    if report:
        write_report(Path(results_dir))
    return 0 if info["passed"] else 1


def kafka_defaults_stated(scenarios: list[Scenario], sources: dict[str, str],
                          release: str | None = None) -> list[Scenario]:
    """Each catalogue scenario with Kafka's defaults stated where it states nothing
    (:func:`~scenarios.plans.spec.with_kafka_defaults`, for the run's ``release``); a schedule
    file's (named in ``sources``) as the file says, so that its kept copy replays the run."""
    from kafka_chaos.scenarios.plans.spec import with_kafka_defaults

    return [s if s.name in sources else with_kafka_defaults(s, release) for s in scenarios]


RERUN_FILE = "rerun.json"


def client_defects_only(outcome: ScenarioOutcome, records: list[Record]) -> str | None:
    """Why every failed check of a scenario iteration is a known client-library defect (the
    triage's ``client`` class, with its evidence), or None when any is not (or it broke)."""
    from kafka_chaos.scenarios.checks.triage import CLIENT, triage

    if outcome.passed or outcome.error is not None:
        return None
    triaged = triage(records)
    if not triaged or any(t.klass != CLIENT for t in triaged):
        return None
    return "; ".join(dict.fromkeys(f"{t.check}: {t.evidence}" for t in triaged))[:2000]


def _predicting(predictor: Predictor | None) -> Predictor:
    """The Runner's predictor: the real oracle unless a test injects another."""
    from kafka_chaos.oracle import predict

    return predictor if predictor is not None else predict


def _rerun_once(options: RunOptions, pool: ClusterPool, progress: Callable[[str], None], predictor: Predictor | None,
                scenario: Scenario, iteration: int, attempt: int) -> tuple[ScenarioOutcome, list[Record]]:
    """One rerun in ``reruns/<scenario>-<iteration>-<attempt>/``: its own history and records
    (``rerun.jsonl``, which reports over the results dir leave out), the same seeded choices."""
    directory = Path(options.results_dir) / "reruns" / f"{scenario.name}-{iteration}-{attempt}"
    why = (f"not caught yet, attempt {attempt + 1} of {scenario.expects.attempts} (an intermittent known bug)"
           if scenario.expects is not None else "(--deflake)")
    progress(f"{scenario.name}#{iteration}: rerun {attempt} {why} into {directory}")
    return run_in_directory(options, pool, progress, predictor, scenario, iteration, directory, "rerun.jsonl",
                            attempt)


def run_in_directory(options: RunOptions, pool: ClusterPool, progress: Callable[[str], None],
                     predictor: Predictor | None, scenario: Scenario, iteration: int, directory: Path,
                     records_file: str, attempt: int = 0, on_healed: Healed | None = None
                     ) -> tuple[ScenarioOutcome, list[Record]]:
    """One scenario iteration with its history and records in ``directory`` (``records_file``:
    another name than records.jsonl keeps it out of reports over the parent), on the caller's
    pool; the outcome and the records written. ``on_healed``: :class:`~scenarios.run.runner.Runner`'s."""
    from dataclasses import replace

    from kafka_chaos.records.writer import RecordWriter
    from kafka_chaos.scenarios.history.observations import HistoryWriter
    from kafka_chaos.scenarios.run.runner import Runner

    history = HistoryWriter(directory)
    with RecordWriter(directory, records_file) as records:
        tee = TeeWriter(records)
        try:
            outcome = Runner(replace(options, results_dir=directory), pool, tee, progress, history=history,
                             on_healed=on_healed, predictor=_predicting(predictor)).run(scenario, iteration, attempt)
        finally:
            history.close()
    return outcome, tee.records


@dataclass
class TeeWriter:
    """Writes records durably and keeps them for the caller's own verdicts (explore's shrinker)."""

    writer: RecordSink
    records: list[Record] = field(default_factory=list)

    def write(self, record: Record) -> None:
        self.write_all((record,))

    def write_all(self, records: Iterable[Record]) -> None:
        batch = list(records)
        self.writer.write_all(batch)
        self.records += batch


def keep_schedules(results_dir: Path, sources: dict[str, str]) -> None:
    """Each schedule file the run reads, as ``DIR/schedules/<name>.json`` (as ``explore`` keeps
    its schedules): the report's replay command names it there, where the results are."""
    if not sources:
        return
    kept = results_dir / "schedules"
    kept.mkdir(parents=True, exist_ok=True)
    for name, path in sources.items():
        target = kept / f"{name}.json"
        if not (target.exists() and target.samefile(path)):  # a replay from the kept file into the same dir
            shutil.copyfile(path, target)


def write_rerun_file(results_dir: Path, seed: int, backend: str, cases: list[Case], sources: dict[str, str],
                     kafka_defaults: bool = False) -> None:
    """``rerun.json``: the failing and flaky scenario iterations, replayed by ``run --rerun``
    (with Kafka's defaults when the run had them: ``kafka_defaults``)."""
    listed = [{"scenario": c.outcome.scenario, "iteration": c.outcome.iteration, "verdict": c.verdict,
               "schedule": sources.get(c.outcome.scenario)} for c in cases if c.verdict not in ("pass", "caught")]
    (results_dir / RERUN_FILE).write_text(json.dumps({"seed": seed, "backend": backend, "kafka_defaults": kafka_defaults,
                                                      "cases": listed}, indent=2) + "\n", encoding="utf-8")


def write_report(results_dir: Path) -> None:
    """The Spark report of ``results_dir`` into its ``report/``; a report problem is one line,
    the verdict stands."""
    try:
        from kafka_chaos.results.report import run_report

        summary = run_report([results_dir], out=results_dir / "report")
    except Exception as exc:  # noqa: BLE001 - Spark/JVM failures too: the records are already safe
        logging.getLogger(__name__).debug("report failed", exc_info=True)
        first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        print(f"report: not written ({type(exc).__name__}: {first_line}); "
              f"retry with: kafka-chaos report {results_dir}", flush=True)
        return
    # The terminal table ends with the report's path.
    print(summary.terminal or f"report: {summary.html}", flush=True)
