"""Extensions' tool renderers (``register_tool_renderer``, ``register_tool(render_call=, render_result=)``)
in the terminal UI: they draw live and restored tool calls, and a failing renderer leaves the default
drawing and one notice, never a broken screen."""

from __future__ import annotations

from tests.coding.interactive.test_interactive import SIZE, make_app, screen_text, type_text, until  # noqa: F401
from tests.coding.interactive.test_interactive_commands import flat_text

EXTENSION = '''
import asyncio
import os

from rich.text import Text


def setup(pi):
    async def slow(tool_call_id, params, signal, on_update, ctx):
        on_update({"content": [{"type": "text", "text": "halfway"}]})
        while not os.path.exists(params["until"]):  # the test creates it
            await asyncio.sleep(0.02)
        return {"content": [{"type": "text", "text": "finished"}]}

    pi.register_tool(name="slow", description="Take a while", execute=slow,
                     parameters={"type": "object", "properties": {"until": {"type": "string"}}},
                     render_result=lambda result, options, theme: (
                         f"{result['content'][0]['text']} partial={options['isPartial']}"))

    def shout(tool_call_id, params, signal, on_update, ctx):
        return {"content": [{"type": "text", "text": params["word"].upper()}], "details": {"length": len(params["word"])}}

    def shout_call(args, theme):
        return Text(f"SHOUTING {args['word']!r}", style=theme["accent"])

    def shout_result(result, options, theme):
        return (f"heard {result['content'][0]['text']} ({result['details']['length']} letters) "
                f"expanded={options['expanded']} partial={options['isPartial']} error={options['isError']} "
                f"args={options['args']['word']}")

    pi.register_tool(name="shout", description="Shout a word", execute=shout,
                     parameters={"type": "object", "properties": {"word": {"type": "string"}}},
                     render_call=shout_call, render_result=shout_result)

    class Exploding:
        def __rich_console__(self, console, options):
            raise ValueError("cannot draw this")

    def broken_result(result, options, theme):
        raise RuntimeError("renderer failed on purpose")

    pi.register_tool_renderer("bash", render_call=lambda args, theme: Exploding(), render_result=broken_result)
    pi.register_tool_renderer("read", render_call=lambda args, theme: {"not": "renderable"})
'''


async def _send(pilot, text: str) -> None:
    await type_text(pilot, text)
    await pilot.press("enter")


async def _with_extension(make_app, tmp_path):  # noqa: F811
    """The app with this file's extension loaded."""
    extension = tmp_path / "renderers.py"
    extension.write_text(EXTENSION)
    return await make_app(extensions=[str(extension)])


async def test_tool_renderers_draw_calls_and_results_and_failures_fall_back(make_app, fake_llm, tmp_path):  # noqa: F811
    (tmp_path / "listed-file.txt").write_text("x")
    fake_llm.add({"content": [{"type": "toolCall", "id": "c1", "name": "shout", "arguments": {"word": "hello"}},
                              {"type": "toolCall", "id": "c2", "name": "bash", "arguments": {"command": "echo bash-out"}},
                              {"type": "toolCall", "id": "c3", "name": "read",
                               "arguments": {"path": "listed-file.txt"}}]},
                 {"content": [{"type": "text", "text": "All done."}]})
    app = await _with_extension(make_app, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await _send(pilot, "go")
        await until(pilot, lambda: "All done." in screen_text(app))
        await until(pilot, lambda: "renderer failed on purpose" in flat_text(app) and "cannot draw this" in flat_text(app))
        text = screen_text(app)
        assert "SHOUTING 'hello'" in text and "shout {" not in text  # the extension's title, not the generic one
        assert "heard HELLO (5 letters) expanded=False partial=False error=False args=hello" in text
        assert "$ echo bash-out" in text and "bash-out" in text.replace("$ echo bash-out", "")  # defaults
        assert "read listed-file.txt" in text and "1 lines" in text  # a non-renderable answer: the default title
        assert "not a Rich renderable" in flat_text(app)
        for failure in ("renderer failed on purpose", "cannot draw this", "not a Rich renderable"):
            assert flat_text(app).count(failure) == 1  # reported once, though every frame draws the row again
        await app.transcript.restore(app.session.get_messages())  # a reopened session draws them the same way
        await until(pilot, lambda: "SHOUTING 'hello'" in screen_text(app) and "heard HELLO" in screen_text(app))
        assert "$ echo bash-out" in screen_text(app)


async def test_a_result_renderer_sees_live_output_as_partial(make_app, fake_llm, tmp_path):  # noqa: F811
    release = tmp_path / "release"
    fake_llm.add({"content": [{"type": "toolCall", "id": "c1", "name": "slow", "arguments": {"until": str(release)}}]},
                 {"content": [{"type": "text", "text": "All done."}]})
    app = await _with_extension(make_app, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await _send(pilot, "go")
        await until(pilot, lambda: "halfway partial=True" in screen_text(app))
        assert "slow {" in screen_text(app)  # no call renderer: the default title
        release.write_text("")
        await until(pilot, lambda: "finished partial=False" in screen_text(app))
