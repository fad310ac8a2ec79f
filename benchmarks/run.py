"""fleetchaos speed and memory figures, each printed next to its target.

    .venv/bin/python benchmarks/run.py             # every figure (about 1.5 minutes on 2 cores)
    .venv/bin/python benchmarks/run.py --quick     # smaller sizes, to check the script itself
    .venv/bin/python benchmarks/run.py --only ratio,scaling
    .venv/bin/python benchmarks/run.py --profile   # where a full run spends its time (cProfile)
    .venv/bin/python benchmarks/run.py --sample    # the same by sampling (pyinstrument, the bench extra)
    .venv/bin/python benchmarks/run.py --json out.json

Figures (see docs/performance.md for the latest ones and the machine they came from):

1. ratio: simulated tool calls per second of a full run (world, faults, formats, policy
   decisions, ledger, oracle and metrics) against the issue's bare-SimPy skeleton (one
   process per task; per tool call one request and release of the worker's slot Resource
   and one timeout; benchmarks/skeleton.py), in one process.  Target: at least 0.5x.  Also
   printed, without a target: the ratio against a leaner per-step skeleton (a fan-out
   step's calls share one request, timeout and release).
2. scaling: the default scenario's fleet and workload scaled from 12 nodes / 10k tool calls
   to 1,000 nodes / 1M tool calls, each size in a fresh process on one core.  Targets:
   cost per call flat (largest within 1.5x of smallest), 1M calls under 60 s, peak RSS
   under 1 GiB.
3. speedup: a 200-run sweep with 2 local processes against in-process serial.  Target: at
   least 1.8x.
4. demo: wall time of `make demo`'s command once installed.  Target: under 60 s.

These are measurements, never tests: nothing here fails the build.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

GIB = 1024**3
#: Calls per task of the default workload, to size scaled runs (measured, about 5.4).
CALLS_PER_TASK = 5.4


def scaled(workers: int, calls: int) -> dict:
    """The default scenario with ``workers`` workers and a workload of about ``calls`` tool calls.

    The API rate and burst grow with the fleet, so the load per worker (and so the mix of
    faults and rate limits per call) stays that of the default scenario.
    """
    import yaml

    import fleetchaos.catalogue as catalogue

    doc = yaml.safe_load(catalogue.path("default").read_text())
    factor = workers / doc["fleet"]["workers"]
    doc["name"] = f"scaled-{workers + doc['fleet']['orchestrators']}n-{calls}"
    doc["fleet"]["workers"] = workers
    doc["fleet"]["api_rate_per_s"] = doc["fleet"]["api_rate_per_s"] * factor
    doc["fleet"]["api_burst"] = max(1, int(doc["fleet"]["api_burst"] * factor))
    doc["workload"]["tasks_per_day"] = round(calls / CALLS_PER_TASK)
    return doc


def _scenario(doc: dict):
    from fleetchaos.scenario.load import Scenario

    return Scenario.model_validate(doc)


# -- 1. throughput ratio ---------------------------------------------------------------


def ratio(seeds: int, workers: int, calls: int) -> dict:
    """Tool calls per second of full runs against the skeleton, same scenario and seeds."""
    from skeleton import run_skeleton, skeleton_tasks

    from fleetchaos.runs.runner import run_one

    spec = _scenario(scaled(workers, calls))
    run_one(spec, "structured", "structured", 0)  # warm caches (Faker, imports)
    h_calls = s_calls = p_calls = 0
    h_time = s_time = p_time = 0.0
    for seed in range(1, seeds + 1):
        tasks = skeleton_tasks(spec, seed)  # task generation is not charged to the skeleton
        t0 = time.process_time()  # CPU time: less sensitive to other load on the machine
        s_calls += run_skeleton(spec, tasks, seed)
        s_time += time.process_time() - t0
        t0 = time.process_time()
        p_calls += run_skeleton(spec, tasks, seed, per_call=True)
        p_time += time.process_time() - t0
        t0 = time.process_time()
        result = run_one(spec, "structured", "structured", seed)
        h_time += time.process_time() - t0
        h_calls += int(result.metrics["tool_calls"] or 0)
    harness_rate, skeleton_rate, per_call_rate = h_calls / h_time, s_calls / s_time, p_calls / p_time
    return {
        "nodes": workers + 2,
        "seeds": seeds,
        "harness_calls": h_calls,
        "harness_calls_per_s": round(harness_rate),
        "harness_us_per_call": round(1e6 / harness_rate, 2),
        # Named for their skeleton: before the third pass "ratio" meant the per-step one.
        "per_call_skeleton_calls_per_s": round(per_call_rate),
        "ratio_per_call_skeleton": round(harness_rate / per_call_rate, 3),
        "per_step_skeleton_calls_per_s": round(skeleton_rate),
        "ratio_per_step_skeleton": round(harness_rate / skeleton_rate, 3),
    }


# -- 2. scaling --------------------------------------------------------------------------


def _scaling_child(workers: int, calls: int, policy: str, errors: str) -> None:
    """Runs in a fresh process: one full run, then its figures as JSON on stdout."""
    from fleetchaos.runs.runner import run_one

    spec = _scenario(scaled(workers, calls))
    t0, c0 = time.perf_counter(), time.process_time()
    result = run_one(spec, policy, errors, 1)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kB on Linux
    print(
        json.dumps(
            {
                "calls": int(result.metrics["tool_calls"] or 0),
                "tasks": int(result.metrics["tasks"] or 0),
                "seconds": seconds,
                "cpu_s": cpu,
                "peak_rss": rss,
            }
        )
    )


def scaling(points: list[tuple[int, int]]) -> list[dict]:
    """One fresh single-core process per (workers, target calls)."""
    rows = []
    for workers, calls in points:
        cmd = [sys.executable, __file__, "--child-scaling", f"{workers},{calls}"]
        pin = ["taskset", "-c", "0"] if _have("taskset") else []
        out = subprocess.run(pin + cmd, capture_output=True, text=True, check=True, cwd=ROOT).stdout
        row = json.loads(out.strip().splitlines()[-1])
        row.update(nodes=workers + 2, us_per_call=round(row["cpu_s"] / max(1, row["calls"]) * 1e6, 2))
        rows.append(row)
    return rows


def _have(tool: str) -> bool:
    from shutil import which

    return which(tool) is not None


# -- 3. parallel speed-up --------------------------------------------------------------


def speedup(runs: int) -> dict:
    """A sweep of ``runs`` runs of the default scenario, serial and on 2 local processes."""
    from fleetchaos.runs.executors import LocalProcessExecutor, SerialExecutor
    from fleetchaos.runs.sweep import SweepSpec, plan_sweep, run_sweep

    seeds = max(1, runs // 20)
    spec = SweepSpec(
        policies=["blind-retry", "structured"],
        seeds=seeds,
        params={"faults[0].probability": [0.0, 0.05, 0.1, 0.2, 0.5]},
    )
    plan = plan_sweep(spec)
    t0, c0 = time.perf_counter(), time.process_time()
    serial = run_sweep(plan, executor=SerialExecutor())
    t_serial, cpu_serial = time.perf_counter() - t0, time.process_time() - c0
    before = os.times()
    t0 = time.perf_counter()
    with LocalProcessExecutor(2) as pool:  # pool start-up is charged to the parallel run
        parallel = run_sweep(plan, executor=pool)
    t_parallel = time.perf_counter() - t0
    after = os.times()
    cpu_parallel = sum(after[i] - before[i] for i in range(4))  # this process and its workers
    assert serial.model_dump_json() == parallel.model_dump_json(), "parallel results differ from serial"
    return {
        "runs": len(plan.jobs),
        "serial_s": round(t_serial, 2),
        "parallel_s": round(t_parallel, 2),
        "speedup": round(t_serial / t_parallel, 2),
        "serial_cpu_s": round(cpu_serial, 2),
        "parallel_cpu_s": round(cpu_parallel, 2),
    }


# -- 4. make demo --------------------------------------------------------------------------


def demo() -> dict:
    """Wall time of the demo's command (the comparison behind `make demo`), installed."""
    exe = Path(sys.executable).with_name("fleetchaos")
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, FLEETCHAOS_HISTORY=str(Path(tmp) / "history.db"))
        cmd = [str(exe), "compare", "--scenario", "default", "--seeds", "10", "--report", str(Path(tmp) / "demo")]
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, cwd=tmp, env=env)
        return {"seconds": round(time.perf_counter() - t0, 2)}


# -- profile -------------------------------------------------------------------------------


def profile(seeds: int, workers: int, calls: int, top: int = 25) -> None:
    """cProfile of full runs: functions by own time, with their share of the total."""
    import cProfile
    import pstats

    from fleetchaos.runs.runner import run_one

    spec = _scenario(scaled(workers, calls))
    run_one(spec, "structured", "structured", 0)
    prof = cProfile.Profile()
    prof.enable()
    for seed in range(1, seeds + 1):
        run_one(spec, "structured", "structured", seed)
    prof.disable()
    stats = pstats.Stats(prof)
    total = sum(v[2] for v in stats.stats.values())  # type: ignore[attr-defined]
    rows = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)[:top]  # type: ignore[attr-defined]
    print(f"{'own %':>6} {'cum %':>6} {'calls':>9}  function")
    for (file, line, name), (_, ncalls, tottime, cumtime, _) in rows:
        where = f"{Path(file).parent.name}/{Path(file).name}:{line}" if file != "~" else "builtin"
        print(f"{100 * tottime / total:6.1f} {100 * cumtime / total:6.1f} {ncalls:9d}  {name} ({where})")


def profile_sampled(seeds: int, workers: int, calls: int, top: int = 25) -> int:
    """pyinstrument (0.2 ms sampling) of full runs: own time by file, then by function.

    A sampling profiler does not inflate small functions the way cProfile does, so these
    shares are the ones docs/performance.md quotes.  Needs the ``bench`` extra.
    """
    try:
        from pyinstrument import Profiler
    except ImportError:
        print("--sample needs pyinstrument: .venv/bin/pip install -e '.[bench]'", file=sys.stderr)
        return 2
    from collections import Counter

    from fleetchaos.runs.runner import run_one

    spec = _scenario(scaled(workers, calls))
    run_one(spec, "structured", "structured", 0)
    profiler = Profiler(interval=0.0002)
    profiler.start()
    for seed in range(1, seeds + 1):
        run_one(spec, "structured", "structured", seed)
    profiler.stop()
    root = profiler.last_session.root_frame()
    by_file: Counter[str] = Counter()
    by_function: Counter[tuple[str, str]] = Counter()

    def synthetic(frame) -> bool:  # pyinstrument's "[self]" leaves hold a frame's own time
        return (frame.identifier or "").startswith("[self]")

    def where(path: str | None) -> str:
        path = path or "builtin"
        for marker, label in (
            ("site-packages/simpy", "simpy"),
            ("/simulated_fleet/", "simulated_fleet/"),
            ("/harness/", "harness/"),
        ):
            if marker in path:
                return label if label == "simpy" else label + path.split(marker, 1)[1]
        if "site-packages/" in path:
            return path.split("site-packages/", 1)[1].split("/", 1)[0]
        return "stdlib:" + Path(path).name if path.endswith(".py") else path

    stack = [root]
    while stack:
        frame = stack.pop()
        children = [c for c in frame.children if not synthetic(c)]
        own = frame.time - sum(c.time for c in children)
        by_file[where(frame.file_path)] += own
        by_function[(where(frame.file_path), frame.function)] += own
        stack.extend(children)
    total = root.time
    print(f"own time by file ({seeds} runs, {workers + 2} nodes, ~{calls:,} calls each)")
    for name, own in by_file.most_common(15):
        print(f"{100 * own / total:6.1f}%  {name}")
    print("own time by function")
    for (name, function), own in by_function.most_common(top):
        print(f"{100 * own / total:6.1f}%  {function} ({name})")
    return 0


# -- report --------------------------------------------------------------------------------


def machine() -> dict:
    """The machine and versions the figures come from."""
    from importlib.metadata import version

    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    libs = {}
    for name in ("fleetchaos", "simpy", "pydantic", "faker", "distributed"):
        try:
            libs[name] = version(name)
        except Exception:
            libs[name] = "not installed"
    return {"nproc": os.cpu_count(), "cpu": model, "python": platform.python_version(), **libs}


def _line(name: str, value: str, target: str, ok: bool | None) -> None:
    mark = "" if ok is None else ("ok" if ok else "MISSED")
    aim = f"target {target:14s} {mark}" if target else ""
    print(f"  {name:44s} {value:>16s}   {aim}".rstrip())


def main(argv: list[str] | None = None) -> int:
    """Run the chosen benchmarks and print each figure next to its target."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes: checks the script, not the targets")
    parser.add_argument("--only", default="ratio,scaling,speedup,demo", help="comma-separated figures")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of full runs and stop")
    parser.add_argument(
        "--sample",
        action="store_true",
        help="print a pyinstrument (sampling) profile of full runs and stop (the bench extra)",
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--child-scaling", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child_scaling:
        workers, calls = map(int, args.child_scaling.split(","))
        _scaling_child(workers, calls, "structured", "structured")
        return 0
    if args.sample:
        return profile_sampled(seeds=1 if args.quick else 3, workers=100, calls=32_500)
    if args.profile:
        profile(seeds=2 if args.quick else 5, workers=100, calls=50_000 if not args.quick else 10_000)
        return 0
    only = set(args.only.split(","))
    out: dict = {"machine": machine()}
    m = out["machine"]
    print(
        f"machine: {m['nproc']} cores, {m['cpu']}; Python {m['python']}; simpy {m['simpy']}, "
        f"pydantic {m['pydantic']}, faker {m['faker']}, distributed {m['distributed']}"
    )
    load = os.getloadavg()[0]
    out["load_before"] = round(load, 2)
    if load > 0.5:
        print(
            f"WARNING: the machine is busy (1-minute load {load:.1f} on {m['nproc']} cores): wall-clock figures "
            "(speed-up, demo, 1M-call wall time) are unreliable; CPU-time figures hold better"
        )

    if "ratio" in only:
        print("1. throughput, one process (structured policy on structured errors)")
        for label, (seeds, workers, calls) in {
            "default scenario (12 nodes, ~3k calls/run)": (5 if args.quick else 10, 10, 3_250),
            "scaled x10 (102 nodes, ~32k calls/run)": (1 if args.quick else 3, 100, 32_500),
        }.items():
            r = ratio(seeds, workers, calls)
            out.setdefault("ratio", []).append(r)
            _line(f"{label}", f"{r['ratio_per_call_skeleton']:.2f}x", ">= 0.50x", r["ratio_per_call_skeleton"] >= 0.5)
            _line("  against the per-step skeleton (no target)", f"{r['ratio_per_step_skeleton']:.2f}x", "", None)
            print(
                f"  {'':44s} harness {r['harness_calls_per_s']:,} calls/s ({r['harness_us_per_call']} us/call); "
                f"skeleton {r['per_call_skeleton_calls_per_s']:,} calls/s, per-step skeleton "
                f"{r['per_step_skeleton_calls_per_s']:,}"
            )

    if "scaling" in only:
        print("2. scaling, one core, one fresh process per size")
        points = [(10, 10_000), (100, 100_000), (998, 100_000), (998, 1_000_000)]
        if args.quick:
            points = [(10, 10_000), (100, 30_000)]
        rows = scaling(points)
        out["scaling"] = rows
        base = rows[0]["us_per_call"]
        for r in rows:
            flat = r["us_per_call"] <= 1.5 * base
            _line(
                f"{r['nodes']:>5} nodes, {r['calls']:>9,} calls: cost per call",
                f"{r['us_per_call']:.1f} us",
                "flat (<=1.5x)",
                flat,
            )
            _line(
                f"{'':>5}        {'':>9}  wall time / peak RSS",
                f"{r['seconds']:.1f} s / {r['peak_rss'] / 2**20:.0f} MiB",
                "",
                None,
            )
        big = [r for r in rows if r["nodes"] >= 1000 and r["calls"] >= 900_000]
        for r in big:
            _line("1,000 nodes, 1M calls: wall time", f"{r['seconds']:.1f} s", "< 60 s", r["seconds"] < 60)
            _line(
                "1,000 nodes, 1M calls: peak RSS", f"{r['peak_rss'] / 2**20:.0f} MiB", "< 1024 MiB", r["peak_rss"] < GIB
            )

    if "speedup" in only:
        print("3. parallel sweep (median of 3 measurements)")
        tries = sorted(
            (speedup(40 if args.quick else 200) for _ in range(1 if args.quick else 3)), key=lambda r: r["speedup"]
        )
        s = tries[len(tries) // 2]
        out["speedup"] = {**s, "all": [t["speedup"] for t in tries]}
        _line(f"{s['runs']}-run sweep, 2 processes vs serial", f"{s['speedup']:.2f}x", ">= 1.80x", s["speedup"] >= 1.8)
        print(f"  {'':44s} all measurements: {', '.join(f'{t:.2f}x' for t in out['speedup']['all'])}")
        print(
            f"  {'':44s} serial {s['serial_s']} s, 2 processes {s['parallel_s']} s (wall); "
            f"CPU {s['serial_cpu_s']} s serial, {s['parallel_cpu_s']} s parallel (all processes)"
        )

    if "demo" in only:
        print("4. make demo")
        d = demo()
        out["demo"] = d
        _line("compare --seeds 10 --report (installed)", f"{d['seconds']:.1f} s", "< 60 s", d["seconds"] < 60)

    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
