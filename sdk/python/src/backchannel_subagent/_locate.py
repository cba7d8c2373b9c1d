"""Reading the broker's hand-off: argv first, then the environment (protocol §1)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping, MutableMapping, Optional, Sequence

from ._wire import (
    ARG_TASK_ID,
    ENV_HEARTBEAT_MS,
    ENV_IPC_PATH,
    ENV_IPC_TOKEN,
    ENV_SPOOL_DIR,
    ENV_TASK_ATTEMPT,
    ENV_TASK_ID,
    HAND_OFF_VARIABLES,
)
from .errors import AgentRuntimeError


@dataclass(frozen=True)
class TaskLocation:
    """Where this agent reports to, as handed over by the broker.

    Attributes:
        task_id: the task's id (``--task-id=`` or ``CURSOR_TASK_ID``).
        ipc_path: the task's endpoint (``CURSOR_IPC_PATH``); ``None`` means: report on stdout.
        token: the secret that authenticates the first line (``CURSOR_IPC_TOKEN``).
        attempt: the attempt number, from 1 (``CURSOR_TASK_ATTEMPT``).
        heartbeat_ms: how often the broker wants a heartbeat (``CURSOR_HEARTBEAT_MS``); ``None``: no watchdog.
        spool_dir: where the final payload goes when the broker is gone (``CURSOR_SPOOL_DIR``).
    """

    task_id: str
    ipc_path: Optional[str] = None
    token: Optional[str] = None
    attempt: int = 1
    heartbeat_ms: Optional[int] = None
    spool_dir: Optional[str] = None


def locate_task(argv: Sequence[str], env: Mapping[str, str]) -> TaskLocation:
    """Reads the hand-off from ``argv`` (``--task-id=``, the last one wins) and ``env``.

    The argument comes first because some frameworks wipe the environment. Raises
    :class:`AgentRuntimeError` when there is no task id: the agent is not running under Backchannel.
    """
    from_argv = [arg[len(ARG_TASK_ID) :] for arg in argv if arg.startswith(ARG_TASK_ID)]
    task_id = (from_argv[-1] if from_argv else "") or env.get(ENV_TASK_ID, "")
    if not task_id:
        raise AgentRuntimeError(
            f"no task id: neither {ARG_TASK_ID}<id> in argv nor {ENV_TASK_ID} in the environment. "
            "Run this agent under Backchannel, e.g. `npx backchannel run -- python3 agent.py`."
        )
    return TaskLocation(
        task_id=task_id,
        ipc_path=env.get(ENV_IPC_PATH) or None,
        token=env.get(ENV_IPC_TOKEN) or None,
        attempt=_positive_int(env.get(ENV_TASK_ATTEMPT)) or 1,
        heartbeat_ms=_positive_int(env.get(ENV_HEARTBEAT_MS)),
        spool_dir=env.get(ENV_SPOOL_DIR) or None,
    )


def remove_hand_off(env: MutableMapping[str, str] = os.environ) -> None:
    """Deletes the hand-off variables, so processes the agent starts do not report to this task by accident."""
    for name in HAND_OFF_VARIABLES:
        env.pop(name, None)


def _positive_int(text: Optional[str]) -> Optional[int]:
    try:
        value = int(float(text)) if text else 0
    except ValueError:
        return None
    return value if value > 0 else None
