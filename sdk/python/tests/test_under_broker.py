"""The SDK against a real Backchannel broker: every promise of docs/protocol.md that an agent keeps."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Dict

from conftest import NODE, REPO, Broker, agent, kill_if_alive, pid_alive, wait_until

GRACE_S = 3.0  # the broker's default cancel grace (DEFAULTS.cancelGraceMs)


def test_progress_arrives_in_order_and_the_result_keeps_its_characters(broker: Broker, agent_env: Dict[str, str]) -> None:
    task_id = broker.submit(agent("progress"), env=agent_env, input={"name": "Zoë 张"})
    snapshot = broker.finished(task_id)
    assert snapshot["state"] == "succeeded", snapshot
    partials = [u["payload"]["data"] for u in broker.updates(task_id, "partial")]
    assert [p["progress"] for p in partials] == list(range(0, 101, 10))
    assert partials[3]["step"] == "étape 30 ✓ 步骤"
    result = snapshot["result"]
    assert result["data"] == {"greeting": "你好, Zoë 张", "channel": "socket", "child_env": ""}
    assert result["meta"]["model_used"] == "模型-ü"
    assert result["meta"]["channel"] == "socket"
    assert isinstance(result["meta"]["duration_ms"], int)
    assert snapshot["exitCode"] == 0


def test_a_10_mb_input_and_a_10_mb_result_arrive_whole(broker: Broker, agent_env: Dict[str, str]) -> None:
    blob = "é✓中" * (10 * 1024 * 1024 // 8) + "末"  # 10 MiB of UTF-8 (2, 3 and 3 bytes) and one more
    assert len(blob.encode("utf-8")) == 10 * 1024 * 1024 + 3
    task_id = broker.submit(agent("echo"), env=agent_env, input={"blob": blob})
    snapshot = broker.finished(task_id, timeout=120)
    assert snapshot["state"] == "succeeded", snapshot.get("message")
    assert snapshot["result"]["data"]["chars"] == len(blob)
    assert snapshot["result"]["data"]["blob"] == blob


def test_a_question_is_answered_by_the_person(broker: Broker, agent_env: Dict[str, str]) -> None:
    task_id = broker.submit(agent("ask"), env=agent_env)
    ask = broker.wait_for(lambda e: e["ev"] == "update" and e["taskId"] == task_id and e["kind"] == "ask")
    assert ask["question"]["question"] == "Quelle branche ? 哪个分支?"
    assert ask["question"]["choices"] == ["main", "développement"]
    broker.send({"op": "answer", "id": task_id, "askId": ask["question"]["askId"], "answer": "développement"})
    snapshot = broker.finished(task_id)
    assert snapshot["result"]["data"] == {"answer": "développement"}


READ_TOOL = {"name": "Read", "description": "Lit un fichier", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}


def _pending_call(broker: Broker, task_id: str) -> Dict[str, Any]:
    update = broker.wait_for(lambda e: e["ev"] == "update" and e["taskId"] == task_id and e["kind"] == "tool_call")
    return update["toolCall"]


def test_call_tool_returns_the_callers_content(broker: Broker, agent_env: Dict[str, str]) -> None:
    task_id = broker.submit(agent("tool_caller"), env=agent_env, input={"name": "Read", "arguments": {"path": "é.txt"}}, tools=[READ_TOOL])
    call = _pending_call(broker, task_id)
    assert (call["name"], call["arguments"]) == ("Read", {"path": "é.txt"})
    broker.send({"op": "answerToolCall", "id": task_id, "callId": call["callId"], "answer": {"content": "contenu ✓"}})
    assert broker.wait_for(lambda e: e["ev"] == "answered" and e["id"] == task_id)["ok"] is True
    assert broker.finished(task_id)["result"]["data"] == {"offered": ["Read"], "content": "contenu ✓"}


def test_call_tool_raises_tool_call_error_on_an_error_answer_and_on_an_unoffered_tool(broker: Broker, agent_env: Dict[str, str]) -> None:
    task_id = broker.submit(agent("tool_caller"), env=agent_env, input={"name": "Read"}, tools=[READ_TOOL])
    call = _pending_call(broker, task_id)
    broker.send({"op": "answerToolCall", "id": task_id, "callId": call["callId"], "answer": {"error": "EACCES"}})
    assert broker.finished(task_id)["result"]["data"] == {"offered": ["Read"], "error": "tool call Read failed: EACCES", "tool": "Read"}
    unoffered = broker.finished(broker.submit(agent("tool_caller"), env=agent_env, input={"name": "Bash"}, tools=[READ_TOOL]))
    assert unoffered["result"]["data"]["error"] == 'tool call Bash failed: tool "Bash" was not offered to this task (offered: Read)'


def test_call_tool_gives_up_after_its_timeout(broker: Broker, agent_env: Dict[str, str]) -> None:
    snapshot = broker.finished(broker.submit(agent("tool_caller"), env=agent_env, input={"name": "Read", "timeout": 0.2}, tools=[READ_TOOL]))
    assert snapshot["result"]["data"]["error"] == "tool call Read got no result within 0.2 s"


def test_an_unanswered_question_fails_the_task_with_ask_error(broker: Broker, agent_env: Dict[str, str]) -> None:
    snapshot = broker.finished(broker.submit(agent("ask"), env=agent_env))  # the broker's ask timeout: 2 s
    assert snapshot["state"] == "failed"
    assert snapshot["result"]["data"]["name"] == "AskError"
    assert snapshot["result"]["data"]["message"].startswith("AskError: ")


def cancel_when_working(broker: Broker, task_id: str) -> float:
    """Waits for the agent's first progress, cancels, and returns when the cancel was sent."""
    broker.wait_for(lambda e: e["ev"] == "update" and e["taskId"] == task_id and e["kind"] == "partial")
    sent = time.monotonic()
    broker.send({"op": "cancel", "id": task_id, "reason": "assez ✋"})
    return sent


def assert_cancelled_in_time(broker: Broker, task_id: str, within: float) -> Dict[str, Any]:
    sent = cancel_when_working(broker, task_id)
    pid = broker.updates(task_id, "partial")[0]["payload"]["data"]["pid"]
    try:
        snapshot = broker.finished(task_id)
        took = time.monotonic() - sent
    finally:
        kill_if_alive(pid)
    assert snapshot["state"] == "cancelled"
    assert snapshot["message"].endswith("assez ✋")
    assert "broker: the agent confirmed the cancel" in snapshot["log"], "its own cancelled payload arrived"
    assert snapshot["exitCode"] == 130 and snapshot["signal"] is None, "it exited by itself, not killed"
    assert took < within, f"took {took:.2f} s"
    return snapshot


def test_a_sync_handler_stops_at_the_cancel_well_within_the_grace_period(broker: Broker, agent_env: Dict[str, str]) -> None:
    assert_cancelled_in_time(broker, broker.submit(agent("wait_cancel"), env=agent_env), within=GRACE_S)


def test_an_async_handler_is_cancelled_through_asyncio(broker: Broker, agent_env: Dict[str, str]) -> None:
    assert_cancelled_in_time(broker, broker.submit([*agent("wait_cancel"), "--async"], env=agent_env), within=GRACE_S)


def test_a_handler_that_ignores_the_cancel_is_ended_by_the_runtime_before_the_grace_runs_out(
    broker: Broker, agent_env: Dict[str, str]
) -> None:
    snapshot = assert_cancelled_in_time(broker, broker.submit(agent("ignore_cancel"), env=agent_env), within=GRACE_S)
    assert any("did not stop within 1.5 s of the cancel" in line for line in snapshot["log"]), snapshot["log"]


def test_usage_reported_with_meta_counts_against_the_budget_during_the_run(broker: Broker, agent_env: Dict[str, str]) -> None:
    # 50 tokens a step: the third report (150) is over 120, long before the 20th step and the result.
    task_id = broker.submit(agent("usage"), env=agent_env, input={"via": "meta"}, maxTokens=120)
    snapshot = broker.finished(task_id)
    assert (snapshot["state"], snapshot["reason"]) == ("failed", "budget_exceeded"), snapshot.get("message")
    assert "used 150 tokens, over the budget of 120" in snapshot["message"]
    assert snapshot["usage"]["input"] + snapshot["usage"]["output"] < 1000
    # A usage report carries no data: the last partial's data stays what the agent said.
    assert snapshot["lastPartial"] == {"step": "started", "progress": 10}
    # The SDK answered the stop with `cancelled`; the failure keeps it.
    assert snapshot["result"]["status"] == "cancelled"


def test_usage_in_a_partials_meta_counts_its_cost_during_the_run(broker: Broker, agent_env: Dict[str, str]) -> None:
    task_id = broker.submit(agent("usage"), env=agent_env, input={"via": "partial"}, maxCostUsd=0.025)
    snapshot = broker.finished(task_id)
    assert (snapshot["state"], snapshot["reason"]) == ("failed", "budget_exceeded"), snapshot.get("message")
    assert "spent $0.03, over the budget of $0.025" in snapshot["message"]
    assert snapshot["lastPartial"] == {"step": "step 3"}


def test_an_exception_becomes_an_error_payload_with_the_traceback_tail(broker: Broker, agent_env: Dict[str, str]) -> None:
    snapshot = broker.finished(broker.submit(agent("fails"), env=agent_env))
    data = snapshot["result"]["data"]
    assert data["message"] == "ValueError: données invalides ✗ 输入"
    assert data["name"] == "ValueError"
    assert 'in parse\n    raise ValueError(f"données invalides ✗ {text}")' in data["traceback"]
    assert snapshot["exitCode"] == 1
    assert "données invalides" in (snapshot.get("stderrTail") or "")


def test_an_agent_error_is_final_and_carries_its_data(broker: Broker, agent_env: Dict[str, str]) -> None:
    snapshot = broker.finished(broker.submit(agent("fails"), env=agent_env, input={"final": True}, retries=2))
    assert snapshot["attempt"] == 1, "retryable=False: no retry"
    assert snapshot["result"]["retryable"] is False
    assert snapshot["result"]["data"]["message"] == "pas de branche « main »"
    assert snapshot["result"]["data"]["branches"] == ["dév"]
    # As the README's table says: the class name and the traceback's tail beside the message.
    assert snapshot["result"]["data"]["name"] == "AgentError"
    assert "raise AgentError" in snapshot["result"]["data"]["traceback"]


def test_connect_task_as_a_context_manager(broker: Broker, agent_env: Dict[str, str]) -> None:
    ok = broker.finished(broker.submit(agent("manual"), env=agent_env))
    assert ok["result"]["data"] == {"manual": True} and ok["result"]["meta"]["model_used"] == "none"
    failed = broker.finished(broker.submit(agent("manual"), env=agent_env, input={"explode": True}))
    assert failed["result"]["data"]["message"] == "RuntimeError: boum 💥"


def test_without_a_socket_it_reports_on_stdout(broker: Broker, agent_env: Dict[str, str]) -> None:
    task_id = broker.submit(["env", "-u", "CURSOR_IPC_PATH", *agent("progress")], env=agent_env)
    snapshot = broker.finished(task_id)
    assert snapshot["state"] == "succeeded", snapshot
    assert snapshot["result"]["meta"]["channel"] == "stdout"
    assert snapshot["result"]["data"]["greeting"] == "你好, nobody"  # no input over stdout
    assert [u["payload"]["data"]["progress"] for u in broker.updates(task_id, "partial")] == list(range(0, 101, 10))


def test_the_result_is_spooled_when_the_broker_is_killed_and_the_next_broker_adopts_it(
    start_broker: Callable[..., Broker], broker_dirs: Dict[str, str], agent_env: Dict[str, str]
) -> None:
    first = start_broker()
    task_id = first.submit(agent("outlive"), env=agent_env)
    pid = first.wait_for(lambda e: e["ev"] == "update" and e["taskId"] == task_id and e["kind"] == "partial")["payload"]["data"]["pid"]
    try:
        first.kill()
        wait_until(lambda: not pid_alive(pid), 30, "the agent to finish without its broker")
    finally:
        kill_if_alive(pid)
    spooled_files = list(Path(broker_dirs["ipcDir"]).rglob(f"{task_id}.json"))  # in the broker's endpoint directory
    assert len(spooled_files) == 1, spooled_files
    spool = spooled_files[0]
    assert stat.S_IMODE(spool.stat().st_mode) == 0o600
    spooled = json.loads(spool.read_text(encoding="utf-8"))
    assert spooled["status"] == "success"
    assert spooled["data"] == {"survived": "überlebt ✓", "channel": "stdout"}

    second = start_broker()
    # Its journal says the task was interrupted; the spool file decides it.
    second.wait_for(lambda e: e["ev"] == "update" and e["taskId"] == task_id and e["kind"] == "ended" and e["state"] != "interrupted")
    adopted = second.snapshot(task_id)
    assert adopted["state"] == "succeeded"
    assert adopted["result"]["meta"]["channel"] == "spool"
    assert adopted["result"]["data"]["survived"] == "überlebt ✓"


def test_an_agent_whose_broker_is_killed_keeps_logging_and_printing_exits_0_and_its_result_is_adopted(
    start_broker: Callable[..., Broker], broker_dirs: Dict[str, str], agent_env: Dict[str, str], tmp_path: Path
) -> None:
    # A shell between broker and agent records the agent's exit code: nobody else can see it once the broker is gone.
    record = tmp_path / "exit-code"
    command = ["sh", "-c", f'"$@"; echo $? > {shlex.quote(str(record))}', "sh", *agent("outlive"), "--chatty"]
    first = start_broker()
    task_id = first.submit(command, env=agent_env, heartbeatTimeoutMs=600)  # a heartbeat every 200 ms
    pid = first.wait_for(lambda e: e["ev"] == "update" and e["taskId"] == task_id and e["kind"] == "partial")["payload"]["data"]["pid"]
    try:
        first.kill()
        wait_until(lambda: record.exists() and record.read_text().strip() != "", 30, "the agent to finish without its broker")
    finally:
        kill_if_alive(pid)
    # 1 was a BrokenPipeError from task.log() failing the handler; 120, stdout's last flush failing at exit.
    assert record.read_text().strip() == "0"
    spooled = json.loads((Path(broker_dirs["ipcDir"]) / f"{task_id}.json").read_text(encoding="utf-8"))
    assert spooled["status"] == "success", spooled
    assert spooled["data"]["steps_after_the_broker_died"] > 10

    second = start_broker()
    second.wait_for(lambda e: e["ev"] == "update" and e["taskId"] == task_id and e["kind"] == "ended" and e["state"] != "interrupted")
    adopted = second.snapshot(task_id)
    assert adopted["state"] == "succeeded"
    assert adopted["result"]["meta"]["channel"] == "spool"


def test_backchannel_run_prints_the_result_of_a_python_agent(agent_env: Dict[str, str], tmp_path: Path) -> None:
    cli = [NODE, str(REPO / "bin" / "backchannel.js"), "run", "--json", "--input", json.dumps({"name": "Ünïcødé 世界"}), "--"]
    env = {**agent_env, "CURSOR_IPC_DIR": str(tmp_path)}
    done = subprocess.run([*cli, *agent("progress")], capture_output=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    payload = json.loads(done.stdout.decode("utf-8").strip().splitlines()[-1])
    assert payload["status"] == "success"
    assert payload["data"]["greeting"] == "你好, Ünïcødé 世界"


def test_without_a_task_id_it_exits_with_a_usage_error(agent_env: Dict[str, str]) -> None:
    env = {k: v for k, v in agent_env.items() if not k.startswith("CURSOR_")}
    done = subprocess.run(agent("progress"), capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 2
    assert "no task id" in done.stderr
    assert os.path.basename(agent("progress")[1]) == "progress.py"


def test_heartbeats_keep_a_silent_handler_alive_past_the_watchdog(broker: Broker, agent_env: Dict[str, str]) -> None:
    # 4.5 s of silence against a 3 s watchdog (roomy: it also covers Python's start-up on a loaded machine).
    snapshot = broker.finished(broker.submit(agent("silent"), env=agent_env, input={"seconds": 4.5}, heartbeatTimeoutMs=3000))
    assert snapshot["state"] == "succeeded", snapshot.get("message")
    assert snapshot["result"]["data"] == {"slept": 4.5}


def test_attachments_arrive_whole_on_the_socket_and_on_stdout(agent_env: Dict[str, str], tmp_path: Path) -> None:
    size = 40_000  # as agents/attacher.py: 400 KB of text and 10 MB of bytes, with newlines and every byte value
    text = "# Report\n" + "é✓中\n" * size
    for channel, prefix in (("socket", []), ("stdout", ["env", "-u", "CURSOR_IPC_PATH"])):
        saved = tmp_path / channel
        cli = [NODE, str(REPO / "bin" / "backchannel.js"), "run", "--json", "--save-attachments", str(saved)]
        env = {**agent_env, "CURSOR_IPC_DIR": str(tmp_path / f"ipc-{channel}")}
        done = subprocess.run([*cli, "--", *prefix, *agent("attacher")], capture_output=True, env=env, timeout=120)
        assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
        payload = json.loads(done.stdout.decode("utf-8").strip().splitlines()[-1])
        assert payload["meta"]["channel"] == channel
        assert payload["data"] == {"summary": "two attachments"}
        assert sorted(a["name"] for a in payload["attachments"]) == ["bytes.bin", "report.md"]
        assert (saved / "report.md").read_bytes() == text.encode("utf-8")
        assert (saved / "bytes.bin").read_bytes() == bytes(range(256)) * size


def test_attach_refuses_a_name_that_is_not_a_plain_file_name_and_a_value_that_is_not_text_or_bytes(sdk_site: Path) -> None:
    import sys

    sys.path.insert(0, str(sdk_site))
    from backchannel_subagent import AgentRuntimeError, Task
    from backchannel_subagent._locate import TaskLocation

    task = Task(TaskLocation(task_id="t", ipc_path=None, token=None, attempt=1, heartbeat_ms=None, spool_dir=None), agent="test", ack_timeout=0.1, heartbeat_ms=0)
    for bad in ("", ".", "..", "a/b", "a\\b", "line\nbreak", "x" * 201):
        try:
            task.attach(bad, "x")
        except AgentRuntimeError as error:
            assert "not a plain file name" in str(error)
        else:
            raise AssertionError(f"{bad!r} was accepted")
    try:
        task.attach("n.txt", 42)  # type: ignore[arg-type]
    except AgentRuntimeError as error:
        assert "str or bytes" in str(error)
    else:
        raise AssertionError("a number was accepted")
