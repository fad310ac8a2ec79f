"""fleetchaos speed and memory figures, each printed next to its target.

    .venv/bin/python benchmarks/run.py             # every figure (about 4 minutes on 2 cores)
    .venv/bin/python benchmarks/run.py --quick     # smaller sizes and fewer repeats, to check the script
    .venv/bin/python benchmarks/run.py --only startup,ratio
    .venv/bin/python benchmarks/run.py --profile   # where a full run spends its time (cProfile)
    .venv/bin/python benchmarks/run.py --sample    # the same by sampling (pyinstrument, the bench extra)
    .venv/bin/python benchmarks/run.py --json out.json

Figures (docs/performance.md has the latest ones, the machine and its load):

1. startup: whole commands as a user starts them (fresh processes, bytecode cached, taken
   in turn): ``fleetchaos --help`` (target under 0.25 s), ``import fleetchaos`` and bare
   Python for context, the one-shot fleet-day ``fleetchaos run --scenario default``
   (target under 0.6 s), and which of SciPy, matplotlib, Faker and hypothesis the import
   and the run load (target: none).
2. fleetday: a fleet-day in process: ``run_one`` per catalogue scenario over the six
   default arms, median wall and CPU milliseconds (no target: context for the one-shot).
3. ratio: simulated tool calls per CPU second of full runs (``run_one``: world, faults,
   formats, policy decisions, ledger, oracle and metrics) against bare-SimPy skeletons of
   the same tasks (benchmarks/skeleton.py), with each one's SimPy events per call.  The
   like-for-like skeleton has the harness's own event pattern (about 1.25 events per
   call).  No target: what a model this rich can reach in pure Python was measured and is
   tracked (docs/performance.md); the study times, the 1M-call run, peak memory and the
   one-shot run are the targets users feel.  The per-call skeleton (3.6 events per call, a
   request, timeout and release per call) and the per-step one are printed beside it.
4. scaling: the default scenario's fleet and workload scaled from 12 nodes / 10k tool
   calls to 1,000 nodes / 1M tool calls, each size in a fresh process on one core: cost
   per call (target: the largest within 1.5x of the smallest), and the 1M-call run's wall
   time (target under 10 s) and peak RSS (target under 256 MiB).
5. parallel: ``fleetchaos compare --seeds 10`` at ``--jobs 2`` against ``--jobs 1``, whole
   commands taken in turn (target at least 1.6x), and a 200-run sweep in one process, two
   worker processes against serial (target at least 1.8x).
6. demo: the command behind ``make demo`` once installed (a 10-seed comparison with its
   report folder; target under 4 s), and the same repeated with its run cache warm (target
   under 3 s).  Every other command here runs with the run cache off.
7. studies: ``tune`` on generic errors (run cache empty), ``compare --tune`` after it (served
   from that cache), and ``compare --tune`` with no cache (target under 90 s on 2 cores),
   each with the runs the cache served.

Wall-clock figures need a quiet machine: the script prints the 1-minute load before each
section.  ``benchmarks/instructions.py`` gives the like-for-like ratio without the clock
(machine instructions per call, counted by valgrind), and ``benchmarks/digest.py`` checks
that a speed change left every result byte-identical.  These are measurements, never
tests: nothing here fails the build.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import commands  # noqa: E402  (benchmarks/ is on the path only now)
import inprocess  # noqa: E402

MIB = 1024**2
SECTIONS = ("startup", "fleetday", "ratio", "scaling", "parallel", "demo", "studies")


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
    for name in ("fleetchaos", "simpy", "pydantic", "faker", "matplotlib", "distributed"):
        try:
            libs[name] = version(name)
        except Exception:
            libs[name] = "not installed"
    return {"nproc": os.cpu_count(), "cpu": model, "python": platform.python_version(), **libs}


def _line(name: str, value: str, target: str = "", ok: bool | None = None) -> None:
    mark = "" if ok is None else ("ok" if ok else "MISSED")
    aim = f"target {target:14s} {mark}" if target else ""
    print(f"  {name:50s} {value:>18s}   {aim}".rstrip())


def _note(text: str) -> None:
    print(f"  {'':50s} {text}")


def _section(out: dict, number: int, title: str) -> None:
    load = round(os.getloadavg()[0], 2)
    out.setdefault("load", {})[title] = load
    print(f"{number}. {title} (1-minute load {load:.2f})")


def _s(seconds: float) -> str:
    return f"{seconds:.3f} s" if seconds < 1 else f"{seconds:.2f} s"


def startup(out: dict, quick: bool) -> None:
    """Section 1: start-up and the one-shot fleet-day."""
    s = commands.startup(runs=3 if quick else 7)
    out["startup"] = s
    _line("fleetchaos --help: wall", _s(s["help"]["wall_s"]), "< 0.25 s", s["help"]["wall_s"] < 0.25)
    _note(f"cpu {_s(s['help']['cpu_s'])}, peak {s['help']['peak_mib']:.0f} MiB")
    _line("python -c 'import fleetchaos': wall", _s(s["import"]["wall_s"]))
    _line("python -c pass: wall (the interpreter alone)", _s(s["python"]["wall_s"]))
    none = "none"
    _line("import fleetchaos loads (of scipy, matplotlib, ...)", ", ".join(s["import_loads"]) or none, none,
          not s["import_loads"])  # fmt: skip
    _line("fleetchaos run --scenario default: wall", _s(s["run"]["wall_s"]), "< 0.6 s", s["run"]["wall_s"] < 0.6)
    _note(f"cpu {_s(s['run']['cpu_s'])}, peak {s['run']['peak_mib']:.0f} MiB; every wall: {s['run']['walls']}")
    _line("fleetchaos run loads (of scipy, matplotlib, ...)", ", ".join(s["run_loads"]) or none, none,
          not s["run_loads"])  # fmt: skip


def fleetday(out: dict, quick: bool) -> None:
    """Section 2: a fleet-day in process."""
    from fleetchaos.catalogue import names

    scenarios = ["default"] if quick else list(names())
    f = inprocess.fleet_day(scenarios)
    out["fleetday"] = f
    d = f["scenarios"]["default"]
    _line("default scenario (12 nodes): run_one", f"{d['wall_ms']:.0f} ms", "(context)")
    _note(f"cpu {d['cpu_ms']:.0f} ms; median of the {f['runs_per_scenario']} default arms")
    if len(scenarios) > 1:
        _line(f"{len(scenarios)} catalogue scenarios: median of medians", f"{f['median_wall_ms']:.0f} ms", "(context)")


def ratio(out: dict, quick: bool) -> None:
    """Section 3: throughput against the skeletons."""
    for label, (seeds, workers, calls) in {
        "default scenario (12 nodes, ~7k calls/run)": (3 if quick else 10, 10, 6_840),
        "scaled x10 (102 nodes, ~70k calls/run)": (1 if quick else 3, 100, 68_400),
    }.items():
        r = inprocess.ratio(seeds, workers, calls)
        out.setdefault("ratio", []).append(r)
        print(f"  {label}: harness {r['harness_us_per_call']} us/call, {r['harness_events_per_call']:.2f} events/call")
        like = r["ratio_fleetchaos_skeleton"]
        _line("  like for like (the harness's own event pattern; tracked)", f"{like:.2f}x")
        _note(f"skeleton {r['fleetchaos_skeleton_us_per_call']} us/call, "
              f"{r['fleetchaos_skeleton_events_per_call']:.2f} events/call")  # fmt: skip
        per_call = r["ratio_per_call_skeleton"]
        _line("  per-call skeleton (Resource per call; tracked)", f"{per_call:.2f}x")
        _note(f"skeleton {r['per_call_skeleton_us_per_call']} us/call, "
              f"{r['per_call_skeleton_events_per_call']:.2f} events/call")  # fmt: skip
        _line("  per-step skeleton (no target)", f"{r['ratio_per_step_skeleton']:.2f}x")


def scaling(out: dict, quick: bool) -> None:
    """Section 4: scaling to 1,000 nodes and 1M calls."""
    points = (
        [(10, 10_000), (100, 30_000)] if quick else [(10, 10_000), (100, 100_000), (998, 100_000), (998, 1_000_000)]
    )
    rows = inprocess.scaling(points, Path(__file__).resolve())
    out["scaling"] = rows
    for r in rows:
        _line(f"{r['nodes']:>5} nodes, {r['calls']:>9,} calls: cost per call", f"{r['us_per_call']:.1f} us")
        _note(f"wall {r['seconds']:.1f} s, cpu {r['cpu_s']:.1f} s, peak RSS {r['peak_rss'] / MIB:.0f} MiB")
    growth = rows[-1]["us_per_call"] / rows[0]["us_per_call"]
    out["scaling_growth"] = round(growth, 2)
    _line("cost per call, largest against smallest", f"{growth:.2f}x", "flat (<=1.5x)", growth <= 1.5)
    for r in (r for r in rows if r["nodes"] >= 1000 and r["calls"] >= 900_000):
        _line("1,000 nodes, 1M calls: wall time", f"{r['seconds']:.1f} s", "< 10 s", r["seconds"] < 10)
        _line(
            "1,000 nodes, 1M calls: peak RSS", f"{r['peak_rss'] / MIB:.0f} MiB", "< 256 MiB", r["peak_rss"] < 256 * MIB
        )


def parallel(out: dict, quick: bool) -> None:
    """Section 5: two worker processes against one, for a compare and a sweep."""
    c = commands.compare_speedup(runs=2 if quick else 5)
    out["compare"] = c
    _line("compare --seeds 10: --jobs 2 against --jobs 1", f"{c['speedup']:.2f}x", ">= 1.60x", c["speedup"] >= 1.6)
    _note(f"wall {_s(c['jobs1']['wall_s'])} against {_s(c['jobs2']['wall_s'])} (medians); cpu "
          f"{_s(c['jobs1']['cpu_s'])} against {_s(c['jobs2']['cpu_s'])} (all processes)")  # fmt: skip
    _note(f"every wall, taken in turn: --jobs 1 {c['jobs1']['walls']}, --jobs 2 {c['jobs2']['walls']}")
    tries = sorted((inprocess.sweep_speedup(40 if quick else 200) for _ in range(1 if quick else 3)),
                   key=lambda r: r["speedup"])  # fmt: skip
    s = tries[len(tries) // 2]
    out["sweep"] = {**s, "all": [t["speedup"] for t in tries]}
    _line(f"{s['runs']}-run sweep in process: 2 processes vs serial", f"{s['speedup']:.2f}x", ">= 1.80x",
          s["speedup"] >= 1.8)  # fmt: skip
    _note(f"all: {', '.join(f'{t:.2f}x' for t in out['sweep']['all'])}; serial {s['serial_s']} s, 2 processes "
          f"{s['parallel_s']} s; cpu {s['serial_cpu_s']} s against {s['parallel_cpu_s']} s")  # fmt: skip


def demo(out: dict, quick: bool) -> None:
    """Section 6: the demo, cold (every run made) and warm (repeated: its runs and charts from the run cache)."""
    d = commands.demo(runs=1 if quick else 3)
    out["demo"] = d
    _line("make demo's command (compare --seeds 10 --report)", _s(d["wall_s"]), "< 4 s", d["wall_s"] < 4)
    _note(f"cpu {_s(d['cpu_s'])} (all processes), peak {d['peak_mib']:.0f} MiB; every wall: {d['walls']}")
    w = d["warm"]
    _line("the same repeated (run cache warm)", _s(w["wall_s"]), "< 3 s", w["wall_s"] < 3)
    _note(f"cpu {_s(w['cpu_s'])} (all processes), peak {w['peak_mib']:.0f} MiB; every wall: {w['walls']}")


def studies(out: dict, quick: bool) -> None:
    """Section 7: the studies users wait for (default scenario, racing tuners, two processes)."""
    if quick:
        _note("skipped with --quick (minutes of runs)")
        return
    st = commands.studies(jobs=2)
    out["studies"] = st
    for name, f in st.items():
        target = "< 90 s" if name == "compare --tune, no cache" else ""
        ok = f["wall_s"] < 90 if target else None
        _line(name, _s(f["wall_s"]), target, ok)
        _note(
            f"cpu {_s(f['cpu_s'])} (all processes), peak {f['peak_mib']:.0f} MiB; runs served by the cache: {f['served']}"
        )


def main(argv: list[str] | None = None) -> int:
    """Run the chosen benchmarks and print each figure next to its target."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats: checks the script, not targets")
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"comma-separated, of: {', '.join(SECTIONS)}")
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
        inprocess.scaling_child(workers, calls)
        return 0
    if args.sample or args.profile:
        import profiles

        if args.sample:
            return profiles.profile_sampled(seeds=1 if args.quick else 3, workers=100, calls=68_400)
        profiles.profile(seeds=2 if args.quick else 5, workers=100, calls=10_000 if args.quick else 50_000)
        return 0
    only = [s for s in SECTIONS if s in set(args.only.split(","))]
    unknown = set(args.only.split(",")) - set(SECTIONS)
    if unknown:
        parser.error(f"--only: unknown {', '.join(sorted(unknown))}; choose from {', '.join(SECTIONS)}")
    out: dict = {"machine": machine()}
    m = out["machine"]
    print(
        f"machine: {m['nproc']} cores, {m['cpu']}; Python {m['python']}; simpy {m['simpy']}, pydantic "
        f"{m['pydantic']}, faker {m['faker']}, matplotlib {m['matplotlib']}, distributed {m['distributed']}"
    )
    print("wall-clock figures need a quiet machine: read them with the load printed for each section")
    titles = {
        "startup": "start-up and the one-shot fleet-day",
        "fleetday": "a fleet-day in process",
        "ratio": "throughput, one process (structured policy on structured errors)",
        "scaling": "scaling, one core, one fresh process per size",
        "parallel": "parallel: two worker processes against one",
        "demo": "make demo",
        "studies": "studies: tune and compare --tune on the default scenario (racing, the run cache)",
    }
    steps = {"startup": startup, "fleetday": fleetday, "ratio": ratio, "scaling": scaling, "parallel": parallel,
             "demo": demo, "studies": studies}  # fmt: skip
    for number, name in enumerate(SECTIONS, 1):
        if name in only:
            _section(out, number, titles[name])
            steps[name](out, args.quick)
    out["load"]["end"] = round(os.getloadavg()[0], 2)
    print(f"1-minute load at the end: {out['load']['end']:.2f}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
