"""Asks one question with choices and returns the answer; an unanswered question fails the task."""
from backchannel_subagent import run_agent


def work(task):
    return {"answer": task.ask("Quelle branche ? 哪个分支?", choices=["main", "développement"])}


run_agent(work)
