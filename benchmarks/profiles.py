"""Where full runs spend their time: cProfile by own time, or pyinstrument by sampling (the bench extra)."""

from __future__ import annotations

import sys
from pathlib import Path

from inprocess import scaled, scenario_of


def profile(seeds: int, workers: int, calls: int, top: int = 25) -> None:
    """cProfile of full runs: functions by own time, with their share of the total."""
    import cProfile
    import pstats

    from fleetchaos.runs.runner import run_one

    spec = scenario_of(scaled(workers, calls))
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

    spec = scenario_of(scaled(workers, calls))
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
