"""``/resume`` with 500 sessions in one process, headless (``App.run_test``, 120x40): the CPU time from
the Enter on ``/resume`` to the end of the first frame that shows the picker, for comparing trees
without tmux and the reference pi (``bench_resume.py`` is the side-by-side figure). Each frame is
also turned into the terminal's escape codes, which a headless app skips and a terminal pays for.

``--profile FILE`` writes a cProfile of the measured windows (all rounds) to FILE.

Usage: .venv/bin/python bench/bench_resume_headless.py [--rounds 8] [--profile out.prof]
(another tree: ``env PYTHONPATH=<tree>/src .venv/bin/python bench/bench_resume_headless.py``)
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import tempfile
import time
from pathlib import Path
from typing import Any

import common
from bench_interactive import PROBE, SESSIONS, write_session
from common import median


def write_home(root: Path) -> tuple[Path, Path]:
    """(cwd, agent dir) with a model and ``SESSIONS`` sessions of the cwd's project."""
    from pi_coding_agent.coding import paths

    cwd, agent = root / "project", root / "agent"
    cwd.mkdir()
    common.write_models_json(agent, "http://127.0.0.1:9")  # never contacted: no prompt is sent
    directory = paths.default_session_dir(agent, cwd)
    directory.mkdir(parents=True)
    for i in range(SESSIONS):
        write_session(directory / f"2026-01-01T00-00-00-000Z_{i:04d}.jsonl", cwd, 20,
                      session_id=f"bench-{i:04d}", first=f"{PROBE} {i} ", start_ms=i * 60_000)
    return cwd, agent


async def measure(rounds: int, profile: cProfile.Profile | None) -> list[float]:
    from textual.app import App

    from pi_coding_agent.coding.bootstrap import create_session
    from pi_coding_agent.coding.modes.interactive import build_app
    from pi_coding_agent.coding.modes.interactive.extension_ui import TuiExtensionUI
    from pi_coding_agent.coding.options import CliArgs

    with tempfile.TemporaryDirectory() as tmp:
        cwd, agent = write_home(Path(tmp))
        args = CliArgs(provider=common.PROVIDER, model=common.MODEL)
        ui = TuiExtensionUI()
        session = await create_session(args, "interactive", ui, cwd=cwd, agent_dir=agent)
        app = build_app(session, ui, args)
        frames: list[float] = []
        display = App._display

        def timed_display(self: Any, screen: Any, renderable: Any) -> None:
            display(self, screen, renderable)
            if renderable is not None and not self._batch_count:
                renderable.render_segments(self.console)  # what a terminal's frame costs on top
                if self._pickers and not frames:
                    frames.append(time.process_time())
                    if profile is not None:
                        profile.disable()

        App._display = timed_display  # type: ignore[method-assign]
        samples = []
        try:
            async with app.run_test(size=(120, 40)) as pilot:
                await pilot.pause(0.5)
                for _ in range(rounds):
                    await pilot.press(*"/resume")
                    await pilot.pause(0.3)
                    frames.clear()
                    if profile is not None:
                        profile.enable()
                    start = time.process_time()
                    await pilot.press("enter")
                    while not frames:
                        await pilot.pause(0.01)
                    samples.append((frames[0] - start) * 1000)
                    await pilot.pause(0.3)
                    await pilot.press("escape")
                    await pilot.pause(0.3)
        finally:
            App._display = display  # type: ignore[method-assign]
            await session.shutdown()
        return samples


def main(rounds: int, profile_path: str | None) -> None:
    profile = cProfile.Profile() if profile_path else None
    samples = asyncio.run(measure(rounds, profile))
    print(f"CPU Enter to the picker's first frame: median {median(samples):.1f} ms "
          f"{sorted(round(s, 1) for s in samples)}")
    if profile is not None and profile_path:
        profile.dump_stats(profile_path)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--profile")
    options = parser.parse_args()
    main(options.rounds, options.profile)
