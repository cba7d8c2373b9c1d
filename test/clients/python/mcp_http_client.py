"""The official Python MCP SDK as a 2025-era client of Backchannel's MCP over Streamable HTTP.

Usage: mcp_http_client.py <url> <bearer token> <node> <agent script>
Initializes (the legacy handshake), lists the tools and calls run_task to completion; prints one JSON line of
what it saw (or {"error": ...}).
"""

import asyncio
import json
import sys
from typing import Any

from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


async def main() -> dict[str, Any]:
    url, token, node, script = sys.argv[1:5]
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                init = await session.initialize()
                tools = (await session.list_tools()).tools
                result = await session.call_tool("run_task", {"command": node, "args": [script], "input": {"n": 3}})
                dumped = result.model_dump(mode="json", by_alias=True, exclude_none=True)
                return {
                    "protocol": init.protocol_version,
                    "tools": sorted(tool.name for tool in tools),
                    "result": dumped.get("structuredContent"),
                    "is_error": dumped.get("isError", False),
                }


if __name__ == "__main__":
    try:
        print(json.dumps(asyncio.run(main())))
    except BaseException as error:  # noqa: BLE001 - reported to the test as data
        print(json.dumps({"error": f"{type(error).__name__}: {error}"}))
        sys.exit(1)
