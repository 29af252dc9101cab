"""A tool that runs other tools: ``ctx.execute_tool`` and ``ctx.tools``.

    pi -e examples/extensions/tool_runner.py

``file_report`` reads a file with the built-in ``read`` tool, asks for a tool that does not
exist and runs ``bash`` with ``on_update`` (its partial results as it streams). Each nested call goes through the same pipeline as the model's calls (validation, the
``tool_call``/``tool_result`` handlers, ``tool_execution_*`` events with ``parentToolCallId`` and
ids ``<call id>/<n>``) and never raises: failures come back with ``isError``. The calls are kept
as ``nestedCalls`` on ``file_report``'s result message, not as transcript entries.
"""


async def setup(pi):
    async def file_report(tool_call_id, params, signal, on_update, ctx):
        callable_names = sorted(tool["name"] for tool in ctx.tools)
        read = await ctx.execute_tool("read", {"path": params["path"]})
        text = "".join(block.get("text", "") for block in read["result"]["content"] if block["type"] == "text")
        missing = await ctx.execute_tool("no_such_tool", {})
        updates = []
        await ctx.execute_tool("bash", {"command": "echo streamed"}, on_update=updates.append)
        streamed = any("streamed" in b.get("text", "") for u in updates for b in u["content"])
        lines = len(text.splitlines())
        return {"content": [{"type": "text", "text": f"{lines} lines; read failed: {str(read['isError']).lower()}; "
                                                     f"missing failed: {str(missing['isError']).lower()}; "
                                                     f"bash streamed: {str(streamed).lower()}; "
                                                     f"can call: {','.join(callable_names)}"}]}

    pi.register_tool(name="file_report", label="File report", description="Report on one file",
                     parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
                     execute=file_report)
