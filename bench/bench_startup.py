"""Start-up: time from spawning `pi --mode rpc` to the response of its first `get_state`.

Run by hand: `.venv/bin/python bench/bench_startup.py [runs]`. Prints the median of each side and the
ratio ours/reference (target < 0.4). Also reports the idle RSS after start-up.
"""

from __future__ import annotations

import sys
import time

from common import cleanup, env_for, median, ours_cmd, peak_rss_mb, reference_cmd, scratch_home, spawn


def measure(cmd: list[str], runs: int) -> tuple[float, float]:
    times, rss = [], []
    for _ in range(runs):
        home = scratch_home()
        start = time.perf_counter()
        proc = spawn([*cmd, "--mode", "rpc", "--no-session"], env_for(cmd, home), cwd=home)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(b'{"id":"s","type":"get_state"}\n')
        proc.stdin.flush()
        line = proc.stdout.readline()
        times.append(time.perf_counter() - start)
        assert b'"get_state"' in line, line
        time.sleep(0.2)
        rss.append(peak_rss_mb(proc.pid))
        proc.stdin.close()
        proc.wait(timeout=10)
        cleanup(home)
    return median(times), median(rss)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    ours_t, ours_rss = measure(ours_cmd(), runs)
    print(f"ours       start-up median {ours_t * 1000:7.1f} ms   idle RSS {ours_rss:6.1f} MB")
    ref = reference_cmd()
    if ref is None:
        print("reference pi not installed (run ../shared/tools/reference-pi.sh)")
        return
    ref_t, ref_rss = measure(ref, runs)
    print(f"reference  start-up median {ref_t * 1000:7.1f} ms   idle RSS {ref_rss:6.1f} MB")
    print(f"ratio ours/reference: start-up {ours_t / ref_t:.2f}   idle RSS {ours_rss / ref_rss:.2f}")


if __name__ == "__main__":
    main()
