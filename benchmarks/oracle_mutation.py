"""Mutation score of the oracle against real recorded histories: how many small wrong versions of
the controller models (``kafka_chaos/oracle``) the checks catch on runs already made.

    .venv/bin/python benchmarks/oracle_mutation.py RESULTS_DIR... [--sample N] [--seed S] [--json FILE]

A mutant changes one thing in one function of the oracle — a comparison (``<`` for ``<=``, ``==``
for ``!=``, ``in`` for ``not in``), ``and`` for ``or``, an integer constant plus one, ``True`` for
``False``, a ``not`` dropped — and is swapped into the running interpreter by replacing that
function's code object (every reference to the function sees it; nothing is re-imported). The
stored histories (``history.jsonl`` of each results dir) are then re-checked exactly as
``kafka-chaos check`` does (:func:`scenarios.checks.registry.check_history`), and the mutant is

* **killed** when any verdict differs from the unmutated oracle's (a check that passed fails, or
  the other way round), or the oracle raised (the check is then unknown: ``crashed``);
* **survived** when every verdict is the same: no recorded step exercises what it changed, or the
  checks are too loose to notice (docs/recall.md lists the survivors and what would kill them);
* **timeout** when re-checking took longer than ``--timeout`` (a mutated loop).

Figures only, no cluster: prints the score per module and the survivors, and with ``--json``
writes every mutant's outcome.
"""

from __future__ import annotations

import argparse
import ast
import copy
import importlib
import json
import logging
import random
import signal
import sys
import time
import types
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kafka_chaos.scenarios.checks.registry import check_history  # noqa: E402
from kafka_chaos.scenarios.history.observations import HISTORY_FILE, HistoryProblem, Observation, read_history  # noqa: E402

ORACLE = ROOT / "kafka_chaos" / "oracle"
# Not controller rules: the JSON reader and writer of `kafka-chaos predict` (a run never calls them).
NOT_RULES = frozenset({"jsonio.py"})
_SWAPS: dict[type, type] = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
                            ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot,
                            ast.IsNot: ast.Is}


class Timeout(BaseException):
    """Not an Exception: the check registry's crash guard must not swallow it."""


@dataclass(frozen=True)
class Mutant:
    module: str  # dotted name
    function: str  # qualified name of the top-level function or method whose code is replaced
    line: int
    what: str
    index: int  # the node's position in ast.walk order of the module


@dataclass
class Outcome:
    mutant: Mutant
    status: str  # killed, crashed, survived, timeout, skipped
    changed: int = 0  # verdicts that differ
    example: str = ""


def _mutation(node: ast.AST) -> str | None:
    """What one mutation of ``node`` would be, or None."""
    if isinstance(node, ast.Compare) and type(node.ops[0]) in _SWAPS:
        return f"{type(node.ops[0]).__name__} -> {_SWAPS[type(node.ops[0])].__name__}"
    if isinstance(node, ast.BoolOp):
        return "and -> or" if isinstance(node.op, ast.And) else "or -> and"
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        return f"{node.value} -> {not node.value}"
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and abs(node.value) < 1000:
        return f"{node.value} -> {node.value + 1}"
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return "not x -> x"
    return None


def _apply(node: ast.AST) -> ast.AST:
    """The mutated node (what :func:`_mutation` described)."""
    if isinstance(node, ast.Compare):
        node.ops[0] = _SWAPS[type(node.ops[0])]()
    elif isinstance(node, ast.BoolOp):
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
        node.value = not node.value
    elif isinstance(node, ast.Constant):
        node.value = node.value + 1
    elif isinstance(node, ast.UnaryOp):
        return node.operand
    return node


def _top_functions(tree: ast.Module) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """(qualified name, def) of module-level functions and of methods of module-level classes."""
    for item in tree.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield item.name, item
        elif isinstance(item, ast.ClassDef):
            for sub in item.body:
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield f"{item.name}.{sub.name}", sub


def _docstrings(tree: ast.Module) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body \
                and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant):
            ids.add(id(node.body[0].value))
    return ids


def mutants_of(path: Path) -> list[Mutant]:
    module = "kafka_chaos." + ".".join(path.relative_to(ROOT / "kafka_chaos").with_suffix("").parts)
    tree = ast.parse(path.read_text())
    order = {id(n): i for i, n in enumerate(ast.walk(tree))}
    skip = _docstrings(tree)
    found = []
    for qualname, fn in _top_functions(tree):
        decorators = {id(n) for d in fn.decorator_list for n in ast.walk(d)}
        defaults = {id(n) for a in [*fn.args.defaults, *fn.args.kw_defaults] if a is not None for n in ast.walk(a)}
        for node in ast.walk(fn):
            if id(node) in skip or id(node) in decorators or id(node) in defaults:
                continue
            what = _mutation(node)
            if what is not None:
                found.append(Mutant(module, qualname, getattr(node, "lineno", fn.lineno), what, order[id(node)]))
    return found


def _code_named(code: types.CodeType, qualname: str) -> types.CodeType | None:
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            if const.co_qualname == qualname:
                return const
            inner = _code_named(const, qualname)
            if inner is not None:
                return inner
    return None


def _live_function(module: types.ModuleType, qualname: str) -> types.FunctionType | None:
    owner: Any = module
    *outer, name = qualname.split(".")
    for part in outer:
        owner = getattr(owner, part, None)
    raw = (owner.__dict__ if isinstance(owner, type) else vars(owner)).get(name) if owner is not None else None
    if isinstance(raw, (staticmethod, classmethod)):
        raw = raw.__func__
    if isinstance(raw, property):
        raw = raw.fget
    while hasattr(raw, "__wrapped__"):
        raw = raw.__wrapped__
    return raw if isinstance(raw, types.FunctionType) else None


def mutated_code(m: Mutant) -> tuple[types.FunctionType, types.CodeType] | None:
    """The live function and its mutated code, or None when it cannot be swapped in."""
    module = importlib.import_module(m.module)
    path = Path(module.__file__ or "")
    tree = ast.parse(path.read_text())
    nodes = list(ast.walk(tree))
    target = nodes[m.index]
    parent = next((n for n in nodes for f, v in ast.iter_fields(n)
                   if v is target or (isinstance(v, list) and any(x is target for x in v))), None)
    if parent is None:
        return None
    replacement = _apply(copy.deepcopy(target))
    for field, value in ast.iter_fields(parent):
        if value is target:
            setattr(parent, field, replacement)
        elif isinstance(value, list):
            value[:] = [replacement if x is target else x for x in value]
    code = compile(ast.fix_missing_locations(tree), str(path), "exec")
    new = _code_named(code, m.function)
    live = _live_function(module, m.function)
    if new is None or live is None or new.co_freevars != live.__code__.co_freevars:
        return None
    return live, new


Verdicts = Counter[tuple[int, str, str | None, int | None, bool | None]]


def verdicts(observations: list[Observation]) -> tuple[Verdicts, list[str]]:
    counted: Verdicts = Counter()
    crashes = []
    for i, (_, results) in enumerate(check_history(observations)):
        for r in results:
            if r.is_measurement:
                continue
            counted[(i, r.check, r.topic, r.partition, r.passed)] += 1
            if r.passed is None and "crashed" in r.detail:
                crashes.append(r.detail)
    return counted, crashes


def _alarm(seconds: float) -> Callable[[], None]:
    def raise_timeout(*_: object) -> None:
        raise Timeout()

    signal.signal(signal.SIGALRM, raise_timeout)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    return lambda: signal.setitimer(signal.ITIMER_REAL, 0)


def run_mutant(m: Mutant, observations: list[Observation], baseline: Verdicts, timeout: float) -> Outcome:
    swap = mutated_code(m)
    if swap is None:
        return Outcome(m, "skipped")
    live, new = swap
    original = live.__code__
    live.__code__ = new
    cancel = _alarm(timeout)
    try:
        got, crashes = verdicts(observations)
    except Timeout:
        return Outcome(m, "timeout")
    finally:
        cancel()
        live.__code__ = original
    diff = (got - baseline) + (baseline - got)
    if not diff:
        return Outcome(m, "survived")
    example = crashes[0] if crashes else next(f"obs {k[0]} {k[1]} {k[2] or ''}-{k[3]}: {k[4]}" for k in diff)
    return Outcome(m, "crashed" if crashes else "killed", sum(diff.values()), example[:200])


def load(dirs: list[Path]) -> list[Observation]:
    observations: list[Observation] = []
    for d in dirs:
        path = d / HISTORY_FILE if d.is_dir() else d
        observations += [o for o in read_history(path) if not isinstance(o, HistoryProblem)]
    return observations


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path)
    parser.add_argument("--sample", type=int, default=0, help="run N mutants drawn at random (0: all)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per mutant")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # a crashing mutant's traceback per check: counted, not shown
    observations = load(args.results)
    started = time.monotonic()
    baseline, crashes = verdicts(observations)
    one = time.monotonic() - started
    if crashes:
        print(f"the unmutated oracle crashes on these histories: {crashes[0]}")
        return 2
    every = [m for path in sorted(ORACLE.rglob("*.py")) if path.name not in NOT_RULES for m in mutants_of(path)]
    chosen = random.Random(args.seed).sample(every, args.sample) if 0 < args.sample < len(every) else every
    print(f"{len(observations)} observations from {len(args.results)} run(s), re-checked in {one:.1f}s; "
          f"{len(every)} mutation points in kafka_chaos/oracle (without {', '.join(sorted(NOT_RULES))}), "
          f"running {len(chosen)}", flush=True)
    outcomes = []
    for n, m in enumerate(chosen, 1):
        outcomes.append(run_mutant(m, observations, baseline, args.timeout))
        if n % 25 == 0:
            print(f"  {n}/{len(chosen)} mutants, {time.monotonic() - started:.0f}s", flush=True)
    ran = [o for o in outcomes if o.status != "skipped"]
    killed = [o for o in ran if o.status in ("killed", "crashed", "timeout")]
    print(f"\nmutation score {len(killed)}/{len(ran)} = {100 * len(killed) / max(len(ran), 1):.1f} % "
          f"({Counter(o.status for o in outcomes)}) in {time.monotonic() - started:.0f}s")
    by_module: dict[str, Counter[str]] = {}
    for o in ran:
        by_module.setdefault(o.mutant.module, Counter())[o.status] += 1
    for module, c in sorted(by_module.items()):
        dead = c["killed"] + c["crashed"] + c["timeout"]
        print(f"  {module:42s} {dead:4d}/{sum(c.values()):4d} killed")
    print("\nsurvivors:")
    for o in sorted((o for o in ran if o.status == "survived"), key=lambda o: (o.mutant.module, o.mutant.line)):
        print(f"  {o.mutant.module}:{o.mutant.line} {o.mutant.function}: {o.mutant.what}")
    if args.json:
        args.json.write_text(json.dumps([{**asdict(o.mutant), "status": o.status, "changed": o.changed,
                                          "example": o.example} for o in outcomes], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
