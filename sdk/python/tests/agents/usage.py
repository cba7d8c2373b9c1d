"""Reports its usage during the run, 50 tokens (and $0.01) more per step, then finishes after 20 steps.

input.via: "meta" reports with ``task.meta(token_usage=…, cost_usd=…)``; "partial" with
``task.partial(data, meta=…)``. Its first partial is a step; usage reports after it carry no data.
"""
from backchannel_subagent import run_agent


def work(task):
    via = (task.input or {}).get("via", "meta")
    task.progress(10, step="started")
    for step in range(1, 21):
        usage = {"token_usage": {"input": 30 * step, "output": 20 * step}, "cost_usd": round(0.01 * step, 2)}
        if via == "partial":
            task.partial({"step": f"step {step}"}, meta=usage)
        else:
            task.meta(**usage)
        task.sleep(0.1)
    return {"steps": 20}


run_agent(work)
