"""The gateway's wire values against the official Python SDKs' pydantic models, in strict mode.

Usage: python strict_wire.py SAMPLES.json BASE_URL KEY FAILING_MODEL

1. Every sample (`{"kind", "label", "value"}`, written by test/gateway/wire.ts) is validated with
   `model_validate(value, strict=True)` (an event against the member of the SDK's event union that
   its `type` names): a missing required field or a wrong type fails. The models allow extra fields; the TypeScript check
   (test/helpers/sdk-types.ts) is the one that refuses those.
2. The SDK clients themselves, with their defaults, call each API streamed and not.
3. Each SDK, with its default retries, calls FAILING_MODEL (the caller counts the agent's runs).

Prints one JSON object: {"errors": [...], "texts": {...}, "failures": {...}}.
"""

import json
import sys
import typing

import anthropic
import openai
from anthropic.types import ErrorResponse, Message, MessageTokensCount, RawMessageStreamEvent
from openai.types import Model
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import ValidationError

def by_type(union):
    """The members of a stream-event union by their `type` literal: each event is checked against its own model."""
    members = {}
    for member in typing.get_args(typing.get_args(union)[0] if typing.get_origin(union) is typing.Annotated else union):
        for literal in typing.get_args(member.model_fields["type"].annotation):
            members[literal] = member
    return members


EVENTS = {"response.event": by_type(ResponseStreamEvent), "message.event": by_type(RawMessageStreamEvent)}

MODELS = {
    "chat.completion": ChatCompletion,
    "chat.completion.chunk": ChatCompletionChunk,
    "response": Response,
    "model": Model,
    "message": Message,
    "message.error": ErrorResponse,
    "count_tokens": MessageTokensCount,
}


def model_for(sample):
    if sample["kind"] in MODELS:
        return MODELS[sample["kind"]]
    return EVENTS[sample["kind"]].get(sample["value"].get("type"))


def strict_errors(samples):
    errors = []
    for sample in samples:
        model = model_for(sample)
        if model is None:
            errors.append(f"{sample['label']}: no {sample['kind']} has the type {sample['value'].get('type')!r}")
            continue
        try:
            model.model_validate(sample["value"], strict=True)
        except ValidationError as error:
            lines = [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors()]
            errors.append(f"{sample['label']} ({model.__name__}): {'; '.join(lines)}")
    return errors


def sdk_texts(base_url, key):
    """Each API through its SDK client, default settings, streamed and not."""
    oai = openai.OpenAI(base_url=base_url, api_key=key)
    ant = anthropic.Anthropic(base_url=base_url[: -len("/v1")], api_key=key)
    user = [{"role": "user", "content": "ping"}]
    texts = {}
    texts["chat"] = oai.chat.completions.create(model="echo", messages=user).choices[0].message.content
    texts["chat stream"] = "".join(
        chunk.choices[0].delta.content or ""
        for chunk in oai.chat.completions.create(model="echo", messages=user, stream=True)
        if chunk.choices
    )
    texts["responses"] = oai.responses.create(model="echo", input="ping").output_text
    with oai.responses.stream(model="echo", input="ping") as stream:
        texts["responses stream"] = stream.get_final_response().output_text
    texts["messages"] = ant.messages.create(model="echo", max_tokens=64, messages=user).content[0].text
    with ant.messages.stream(model="echo", max_tokens=64, messages=user) as stream:
        texts["messages stream"] = "".join(stream.text_stream)
    return texts


def sdk_failures(base_url, key, model):
    """A failing model through each SDK with its default retries: the status, and the x-should-retry it was told."""
    user = [{"role": "user", "content": "fail"}]
    calls = {
        "openai": lambda: openai.OpenAI(base_url=base_url, api_key=key).chat.completions.create(model=model, messages=user),
        "anthropic": lambda: anthropic.Anthropic(base_url=base_url[: -len("/v1")], api_key=key).messages.create(
            model=model, max_tokens=8, messages=user
        ),
    }
    failures = {}
    for name, call in calls.items():
        try:
            call()
            failures[name] = {"status": 200}
        except (openai.APIStatusError, anthropic.APIStatusError) as error:
            failures[name] = {"status": error.status_code, "should_retry": error.response.headers.get("x-should-retry")}
    return failures


def main():
    samples_file, base_url, key, failing_model = sys.argv[1:5]
    with open(samples_file, encoding="utf-8") as f:
        samples = json.load(f)
    report = {
        "errors": strict_errors(samples),
        "texts": sdk_texts(base_url, key),
        "failures": sdk_failures(base_url, key, failing_model),
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
