"""The official Python `mcp` SDK as a strict MCP 2025-11-25 Tasks client of `backchannel mcp`.

Run by test/clients/mcp-python.clients.ts with the venv it made: python mcp_tasks_client.py <scenario> <command> <arg>...
(the server's command line). Every result is validated with the SDK's own pydantic models; the script prints one
JSON object with what it saw and exits 0, or prints the failure and exits 1. The Python SDK defines the Tasks types
(2025-11-25) but sends no tasks/* requests itself, so they go through ClientSession.send_request with those types.
"""

import asyncio
import json
import os
import sys
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp.client.extension import NotificationBinding
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
RELATED_TASK_META_KEY = "io.modelcontextprotocol/related-task"  # the Python SDK names no constant for it


async def poll(session: ClientSession, task_id: str, until: set[str], attempts: int = 600) -> types.GetTaskResult:
    for _ in range(attempts):
        task = await session.send_request(
            types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id)), types.GetTaskResult
        )
        if task.status in until:
            return task
        await anyio.sleep((task.poll_interval or 500) / 1000)
    raise RuntimeError(f"task {task_id} never reached {until}")


async def run(scenario: str, server: list[str], fixtures: str) -> dict[str, Any]:
    statuses: list[dict[str, Any]] = []
    elicited: list[dict[str, Any]] = []

    async def on_status(params: types.TaskStatusNotificationParams) -> None:
        statuses.append(params.model_dump(mode="json", by_alias=True, exclude_none=True))

    async def on_elicit(_context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        elicited.append({"message": params.message, "meta": dict(params.meta or {})})
        return types.ElicitResult(action="accept", content={"answer": "dev"})

    parameters = StdioServerParameters(command=server[0], args=server[1:], env=dict(os.environ))
    async with stdio_client(parameters) as (read, write):
        async with ClientSession(
            read,
            write,
            elicitation_callback=on_elicit,
            notification_bindings=[
                NotificationBinding(
                    method="notifications/tasks/status", params_type=types.TaskStatusNotificationParams, handler=on_status
                )
            ],
        ) as session:
            init = await session.initialize()
            seen: dict[str, Any] = {"protocol": init.protocol_version}
            tasks_capability = init.capabilities.tasks
            assert tasks_capability is not None and tasks_capability.requests is not None, init.capabilities
            tools = (await session.list_tools()).tools
            seen["task_support"] = {tool.name: tool.execution.task_support if tool.execution else None for tool in tools}

            async def create(arguments: dict[str, Any], ttl: int | None = 60_000) -> types.CreateTaskResult:
                # send_request checks a tools/call result as a CallToolResult, so the task-augmented call goes out
                # raw through the session's dispatcher; its answer is validated with the SDK's CreateTaskResult.
                params = {"name": "run_task", "arguments": arguments, "task": types.TaskMetadata(ttl=ttl).model_dump(exclude_none=True)}
                raw = await session._dispatcher.send_raw_request("tools/call", params, {})
                return types.CreateTaskResult.model_validate(raw, by_name=False)

            if scenario == "tasks":
                # MCP Tasks end to end, with an elicitation inside the task and status notifications.
                created = await create({"command": os.path.join(fixtures, "asker.mjs")})
                task_id = created.task.task_id
                seen["created"] = created.task.model_dump(mode="json", by_alias=True)
                done = await poll(session, task_id, {"completed", "failed", "cancelled"})
                seen["done"] = done.model_dump(mode="json", by_alias=True)
                payload = await session.send_request(
                    types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task_id)),
                    types.CallToolResult,
                )
                seen["result"] = payload.structured_content
                seen["result_meta"] = dict(payload.meta or {})
                for _ in range(100):
                    if any(s["status"] == "completed" for s in statuses):
                        break
                    await anyio.sleep(0.1)
                seen["statuses"] = statuses
                seen["elicited"] = elicited
                seen["related_task_key"] = RELATED_TASK_META_KEY
            elif scenario == "pagination":
                # More tasks than one page holds (the test says how many), started with the plain tool.
                for n in range(int(os.environ["MCP_TEST_TASKS"])):
                    started = await session.call_tool("start_task", {"command": os.path.join(fixtures, "quick.mjs"), "input": {"n": n}})
                    assert not started.is_error, started
                first = await session.send_request(types.ListTasksRequest(), types.ListTasksResult)
                pages = [first]
                while pages[-1].next_cursor is not None and len(pages) < 20:
                    request = types.ListTasksRequest(params=types.PaginatedRequestParams(cursor=pages[-1].next_cursor))
                    pages.append(await session.send_request(request, types.ListTasksResult))
                seen["pages"] = [[task.task_id for task in page.tasks] for page in pages]
                try:
                    bad = types.ListTasksRequest(params=types.PaginatedRequestParams(cursor="not-a-real-cursor"))
                    await session.send_request(bad, types.ListTasksResult)
                    seen["bad_cursor"] = None
                except Exception as error:  # noqa: BLE001 — the MCPError is what is checked
                    seen["bad_cursor"] = {"code": getattr(getattr(error, "error", None), "code", None), "message": str(error)}
            elif scenario == "cancel":
                created = await create({"command": os.path.join(fixtures, "cancellable.mjs")})
                task_id = created.task.task_id
                await poll(session, task_id, {"working"})
                for _ in range(300):
                    task = await poll(session, task_id, {"working"})
                    if (task.status_message or "").startswith("1%"):
                        break
                    await anyio.sleep(0.1)
                cancelled = await session.send_request(
                    types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=task_id)), types.CancelTaskResult
                )
                seen["cancelled"] = cancelled.model_dump(mode="json", by_alias=True)
                seen["task_id"] = task_id
                for _ in range(100):
                    if any(s["status"] == "cancelled" for s in statuses):
                        break
                    await anyio.sleep(0.1)
                seen["statuses"] = statuses
            else:
                raise ValueError(f"unknown scenario {scenario}")
            return seen


def main() -> int:
    scenario, fixtures, *server = sys.argv[1:]
    try:
        print(json.dumps(asyncio.run(run(scenario, server, fixtures))))
        return 0
    except BaseException as error:  # noqa: BLE001 — reported to the test, whatever it is
        while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
            error = error.exceptions[0]
        print(json.dumps({"error": f"{type(error).__name__}: {error}"}))
        return 1


if __name__ == "__main__":
    sys.exit(main())
