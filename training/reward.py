"""A reward function for trl's GRPOTrainer that calls the pipeline: the verified speedup of a completion, zero
for anything that is not proven correct and faster.

    from training.reward import PipelineReward
    reward = PipelineReward({"matvec_colwalk": "tasks/matvec"}, work_dir="perfforge-out/grpo")
    trainer = GRPOTrainer(model=..., reward_funcs=reward, train_dataset=ds, ...)   # ds has a "task" column

Each completion is read with perfforge.prompt.parse_answer and judged by profiling.judge.judge_candidates, i.e.
by profiling.validate in its sandboxed subprocesses (generated code runs nowhere else). The reward is
log2(speedup) for an improved verdict, so a 2x gain scores 1 and gains compose additively; 0 for a correct
candidate that is not faster, held for review, incorrect, failed, or unreadable. docs/training.md has the recipe.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from perfforge import prompt
from perfforge.task import Task, load_task
from perfforge.verdict import Status, Verdict


class PipelineReward:
    """Callable as trl reward functions are: (prompts, completions, **dataset columns) -> one float each."""

    __name__ = "pipeline_speedup"  # trl logs reward functions by name

    def __init__(self, tasks: dict[str, str | Path | Task], work_dir: str | Path) -> None:
        self.tasks = {name: t if isinstance(t, Task) else load_task(t) for name, t in tasks.items()}
        self.work_dir = Path(work_dir)
        self.calls = 0

    def __call__(self, prompts: list[Any], completions: list[Any], task: list[str], **_: Any) -> list[float]:
        return [self.score(name, completion) for name, completion in zip(task, completions, strict=True)]

    def score(self, task_name: str, completion: Any) -> float:
        from profiling.judge import judge_candidates

        task = self.tasks[task_name]
        text = completion[-1]["content"] if isinstance(completion, list) else str(completion)
        answer = prompt.parse_answer(text, language=task.language)
        if not answer.ok:
            return 0.0
        self.calls += 1
        candidate = self.work_dir / f"candidate-{self.calls}" / task.source_path.name
        candidate.parent.mkdir(parents=True, exist_ok=True)
        candidate.write_text(answer.code, encoding="utf-8")
        verdict = judge_candidates(task, [("c", candidate)], self.work_dir / "judge", profile_improved=False,
                                   log=lambda _message: None)["c"].verdict
        return reward_of(verdict)


def reward_of(verdict: Verdict) -> float:
    """log2 of the verified speedup for an improved verdict; 0 otherwise."""
    if verdict.status is not Status.IMPROVED or not verdict.speedup:
        return 0.0
    return max(0.0, math.log2(verdict.speedup))
