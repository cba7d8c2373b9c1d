"""Bridge mode through the official Python SDKs (openai, anthropic): for each API, streamed and not,
the agent's tool call comes back in the API's shape, the client runs the tool and sends the result,
and the same task answers. Prints one JSON report: per case the calls' arguments, the final text and
the task ids seen. Usage: bridge_client.py <base url> <key> <model>
"""
import json
import sys

import anthropic
import openai

base, key, model = sys.argv[1], sys.argv[2], sys.argv[3]
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
TASK = "x-backchannel-task-id"
report = {}


def output(args):
    return "contents of " + (json.loads(args) if isinstance(args, str) else args)["path"]


def chat(stream):
    client = openai.OpenAI(base_url=base + "/v1", api_key=key, max_retries=0)
    tools = [{"type": "function", "function": {"name": "read_file", "parameters": SCHEMA}}]
    messages = [{"role": "user", "content": "Read both. PARALLEL"}]
    calls, tasks = [], set()
    for _ in range(4):
        if stream:
            with client.chat.completions.stream(model=model, messages=messages, tools=tools) as s:
                for _event in s:
                    pass
                completion = s.get_final_completion()
            raw_task = None
        else:
            raw = client.chat.completions.with_raw_response.create(model=model, messages=messages, tools=tools)
            raw_task = raw.headers.get(TASK)
            completion = raw.parse()
        tasks.add(raw_task)
        choice = completion.choices[0]
        if choice.finish_reason == "stop":
            return {"calls": sorted(calls), "text": choice.message.content, "tasks": len(tasks - {None})}
        assert choice.finish_reason == "tool_calls", choice.finish_reason
        message = choice.message
        messages.append(
            {
                "role": "assistant",
                "content": message.content,
                "tool_calls": [
                    {"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments}}
                    for c in message.tool_calls
                ],
            }
        )
        for c in message.tool_calls:
            calls.append(json.loads(c.function.arguments)["path"])
            messages.append({"role": "tool", "tool_call_id": c.id, "content": output(c.function.arguments)})
    raise AssertionError("too many steps")


def responses(stream):
    client = openai.OpenAI(base_url=base + "/v1", api_key=key, max_retries=0)
    tools = [{"type": "function", "name": "read_file", "parameters": SCHEMA, "strict": False}]
    items = [{"role": "user", "content": "Read it."}]
    calls = []
    for _ in range(3):
        if stream:
            with client.responses.stream(model=model, input=items, tools=tools) as s:
                for _event in s:
                    pass
                response = s.get_final_response()
        else:
            response = client.responses.create(model=model, input=items, tools=tools)
        fcalls = [o for o in response.output if o.type == "function_call"]
        if not fcalls:
            return {"calls": calls, "text": response.output_text}
        for c in fcalls:
            calls.append(json.loads(c.arguments)["path"])
            items.append({"type": "function_call", "call_id": c.call_id, "name": c.name, "arguments": c.arguments})
            items.append({"type": "function_call_output", "call_id": c.call_id, "output": output(c.arguments)})
    raise AssertionError("too many steps")


def messages(stream):
    client = anthropic.Anthropic(base_url=base, api_key=key, max_retries=0)
    tools = [{"name": "read_file", "input_schema": SCHEMA}]
    history = [{"role": "user", "content": "Read it."}]
    calls, thinking = [], []
    for _ in range(3):
        params = dict(model=model, max_tokens=1000, tools=tools, messages=history, thinking={"type": "enabled", "budget_tokens": 1024})
        if stream:
            with client.messages.stream(**params) as s:
                message = s.get_final_message()
        else:
            message = client.messages.create(**params)
        thinking += [b.thinking for b in message.content if b.type == "thinking"]
        uses = [b for b in message.content if b.type == "tool_use"]
        if message.stop_reason == "end_turn":
            return {"calls": calls, "text": "".join(b.text for b in message.content if b.type == "text"), "thinking": thinking}
        assert message.stop_reason == "tool_use", message.stop_reason
        history.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]})
        history.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": u.id, "content": output(u.input)} for u in uses]})
        calls += [u.input["path"] for u in uses]
    raise AssertionError("too many steps")


for name, run in (("chat", chat), ("responses", responses), ("messages", messages)):
    for stream in (False, True):
        report[f"{name}{' stream' if stream else ''}"] = run(stream)
print(json.dumps(report))
