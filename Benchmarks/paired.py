#!/usr/bin/env python3
"""Pairs two builds of the benchmark executable: runs each benchmark on both, in turn, several
times, and prints the median wall-clock time of each and their ratio. For a change whose effect
is smaller than the machine's drift between two `ratios.py` runs (Benchmarks/History.md, the performance pass).

    # Build each state and keep its executable (the library comes from the checkout):
    swift build -c release --package-path Benchmarks
    cp Benchmarks/.build/release/OrchestraBenchmarks /tmp/after
    git stash -u; swift build -c release --package-path Benchmarks
    cp Benchmarks/.build/release/OrchestraBenchmarks /tmp/before; git stash pop
    # Then, five rounds (the order of the two alternates from round to round):
    python3 Benchmarks/paired.py /tmp/after /tmp/before 5 \\
        'Graph deep 10k/TaskGraph run$' 'Graph deep 100k/TaskGraph run$'

The executables need the malloc interposer package-benchmark builds beside them
(`Benchmarks/.build/release/libMallocInterposerSwift.so`), found through LD_LIBRARY_PATH.
"""
import os
import statistics
import subprocess
import sys


def median_wall_clock(output: str, name: str) -> float:
    """The p50 of "Time (wall clock)" in the executable's own output, in nanoseconds."""
    if "Time (wall clock):" not in output:
        sys.exit(f"paired.py: no wall-clock result for {name!r}; does the filter match a benchmark?")
    block = output.split("Time (wall clock):", 1)[1]
    for line in block.splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[1].startswith("0.5000"):
            return float(fields[0])
    sys.exit(f"paired.py: no median in the wall-clock result of {name!r}")


def main() -> None:
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    first, second, rounds, filters = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
    library = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".build", "release")
    environment = dict(os.environ, LD_LIBRARY_PATH=library)
    times = {(build, name): [] for build in (first, second) for name in filters}
    for round_ in range(rounds):
        for name in filters:
            for build in (first, second) if round_ % 2 == 0 else (second, first):
                run = subprocess.run([build, "--filter", name], capture_output=True, text=True, env=environment)
                if run.returncode != 0:
                    sys.exit(f"paired.py: {build} --filter {name!r} exited {run.returncode}:\n{run.stderr}")
                times[(build, name)].append(median_wall_clock(run.stdout, name))
    for name in filters:
        a, b = statistics.median(times[(first, name)]), statistics.median(times[(second, name)])
        print(f"{name}: {os.path.basename(first)} {a / 1e6:.2f} ms, {os.path.basename(second)} {b / 1e6:.2f} ms, "
              f"ratio {a / b:.3f} (medians of {rounds})")


if __name__ == "__main__":
    main()
