"""The `perfforge` command: one subcommand per stage, each a small object whose flags come from its config
dataclass (perfforge.config). Errors a user can fix print one line and exit 2; an interrupted long job
keeps its finished work, says how to resume, and exits 130.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

from perfforge import __version__
from perfforge.config import add_arguments, from_namespace
from perfforge.errors import PerfforgeError


@dataclasses.dataclass(frozen=True)
class Subcommand:
    name: str
    help: str
    config_cls: Callable[[], type]  # imported lazily: `perfforge card` should not import the miner
    run: Callable[[Any], int]


def _mine_config() -> type:
    from mining.config import MineConfig
    return MineConfig


def _run_mine(config: Any) -> int:
    from mining.commands import run_mine
    return run_mine(config)


def _card_config() -> type:
    from mining.card import CardConfig
    return CardConfig


def _run_card(config: Any) -> int:
    from mining.commands import run_card
    return run_card(config)


def _validate_config() -> type:
    from profiling.config import ValidateConfig
    return ValidateConfig


def _run_validate(config: Any) -> int:
    from profiling.commands import run_validate
    return run_validate(config)


def _profile_config() -> type:
    from profiling.config import ProfileConfig
    return ProfileConfig


def _run_profile(config: Any) -> int:
    from profiling.commands import run_profile
    return run_profile(config)


def _diagnose_config() -> type:
    from profiling.config import DiagnoseConfig
    return DiagnoseConfig


def _run_diagnose(config: Any) -> int:
    from profiling.commands import run_diagnose
    return run_diagnose(config)


def _synth_patterns_config() -> type:
    from synth.config import SynthPatternsConfig
    return SynthPatternsConfig


def _run_synth_patterns(config: Any) -> int:
    from synth.commands import run_synth_patterns
    return run_synth_patterns(config)


def _synth_list_config() -> type:
    from synth.config import SynthListConfig
    return SynthListConfig


def _run_synth_list(config: Any) -> int:
    from synth.commands import run_synth_list
    return run_synth_list(config)


def _synth_commits_config() -> type:
    from synth.config import SynthCommitsConfig
    return SynthCommitsConfig


def _run_synth_commits(config: Any) -> int:
    from synth.commands import run_synth_commits
    return run_synth_commits(config)


def _synth_recipe_config() -> type:
    from synth.config import SynthRecipeConfig
    return SynthRecipeConfig


def _run_synth_recipe(config: Any) -> int:
    from synth.commands import run_synth_recipe
    return run_synth_recipe(config)


def _import_kernelbench_config() -> type:
    from synth.config import ImportKernelbenchConfig
    return ImportKernelbenchConfig


def _run_import_kernelbench(config: Any) -> int:
    from synth.commands import run_import_kernelbench
    return run_import_kernelbench(config)


def _baseline_kernelbench_config() -> type:
    from synth.config import BaselineKernelbenchConfig
    return BaselineKernelbenchConfig


def _run_baseline_kernelbench(config: Any) -> int:
    from synth.commands import run_baseline_kernelbench
    return run_baseline_kernelbench(config)


def _optimize_config() -> type:
    from inference.config import OptimizeConfig
    return OptimizeConfig


def _run_optimize(config: Any) -> int:
    from inference.commands import run_optimize
    return run_optimize(config)


def _train_config() -> type:
    from training.config import TrainConfig
    return TrainConfig


def _run_train(config: Any) -> int:
    from training.commands import run_train
    return run_train(config)


def _iterate_config() -> type:
    from iteration.config import IterateConfig
    return IterateConfig


def _run_iterate(config: Any) -> int:
    from iteration.commands import run_iterate
    return run_iterate(config)


def _eval_config() -> type:
    from eval.config import EvalConfig
    return EvalConfig


def _run_eval(config: Any) -> int:
    from eval.commands import run_eval
    return run_eval(config)


def _serve_config() -> type:
    from inference.config import ServeConfig
    return ServeConfig


def _run_serve(config: Any) -> int:
    from inference.commands import run_serve
    return run_serve(config)


# A name with a space is a command of a group: "synth patterns" is `perfforge synth patterns`.
SUBCOMMANDS = {
    command.name: command for command in (
        Subcommand("mine", "mine git histories into a dataset of performance commits and function pairs",
                   _mine_config, _run_mine),
        Subcommand("card", "write the dataset card of a mined dataset (a Hugging Face README)", _card_config,
                   _run_card),
        Subcommand("profile", "build, time and profile a task (or the top kernels of an application) into a "
                   "profile record with diagnoses", _profile_config, _run_profile),
        Subcommand("diagnose", "rank the bottlenecks of a task or a profile.json, with evidence, and print the "
                   "prompt summary", _diagnose_config, _run_diagnose),
        Subcommand("validate", "judge a candidate against a task's original: correct or not, faster or not, with "
                   "reasons", _validate_config, _run_validate),
        Subcommand("optimize", "optimise a task with a local model: profile, diagnose, prompt, validate every "
                   "candidate, feed back, keep the best proven one", _optimize_config, _run_optimize),
        Subcommand("train", "fine-tune a model with LoRA on a dataset's pairs (sft) or on the optimisation loop's "
                   "preference pairs (dpo)", _train_config, _run_train),
        Subcommand("iterate", "expert iteration: sample candidates for training tasks, keep the judge-proven "
                   "improvements, fine-tune, repeat", _iterate_config, _run_iterate),
        Subcommand("serve", "serve a model (and LoRA adapters) with vLLM's OpenAI-compatible server",
                   _serve_config, _run_serve),
        Subcommand("eval", "evaluate models against the original and the human-optimised versions: correctness, "
                   "fast_p, speedups with CIs, roofline, ablations, a report", _eval_config, _run_eval),
        Subcommand("synth patterns", "generate pattern-catalogue tasks, check each through the pipeline, keep the "
                   "ones that pass as profiled records", _synth_patterns_config, _run_synth_patterns),
        Subcommand("synth list", "list the pattern catalogue", _synth_list_config, _run_synth_list),
        Subcommand("synth commits", "ask a model to turn mined performance pairs into runnable tasks; keep the ones "
                   "whose fast version is correct and faster", _synth_commits_config, _run_synth_commits),
        Subcommand("synth recipe", "profile the named kernels of a real repository at a commit's parent and at the "
                   "commit, from a recipe", _synth_recipe_config, _run_synth_recipe),
        Subcommand("import kernelbench", "turn the problems of your KernelBench checkout into torch-target tasks "
                   "(one per problem; nothing downloaded)", _import_kernelbench_config, _run_import_kernelbench),
        Subcommand("baseline kernelbench", "time the PyTorch reference of imported KernelBench tasks, eager or "
                   "compiled, in KernelBench's baseline JSON layout", _baseline_kernelbench_config,
                   _run_baseline_kernelbench),
    )
}
GROUP_HELP = {"synth": "synthesise runnable, profiled tasks: the pattern catalogue, tasks from mined commits",
              "import": "turn a benchmark's problems into tasks: KernelBench",
              "baseline": "time a benchmark's references on this machine: KernelBench"}


def build_parser() -> argparse.ArgumentParser:
    # allow_abbrev=False everywhere: a prefix of an option (--candidate for --candidates, --model for --models) is
    # an error, not silently another option.
    parser = argparse.ArgumentParser(prog="perfforge", description="GPU and CPU performance engineering "
                                     "with local models: datasets, profiles, validation, optimisation.",
                                     allow_abbrev=False)
    parser.add_argument("--version", action="version", version=f"perfforge {__version__}")
    commands = parser.add_subparsers(dest="subcommand", metavar="COMMAND", required=True)
    groups: dict[str, argparse._SubParsersAction] = {}
    for command in SUBCOMMANDS.values():
        group, _, name = command.name.rpartition(" ")
        if group and group not in groups:
            group_parser = commands.add_parser(group, help=GROUP_HELP[group], description=GROUP_HELP[group],
                                               allow_abbrev=False)
            groups[group] = group_parser.add_subparsers(dest=f"{group}_command", metavar="COMMAND", required=True)
        sub = (groups[group] if group else commands).add_parser(name, help=command.help, description=command.help,
                                                                allow_abbrev=False)
        sub.add_argument("--config", help="YAML file of options (flags override it)", default=None)
        add_arguments(sub, command.config_cls())
    return parser


def _command_of(args: argparse.Namespace) -> Subcommand:
    group_command = getattr(args, f"{args.subcommand}_command", None)
    return SUBCOMMANDS[f"{args.subcommand} {group_command}" if group_command else args.subcommand]


_INTERRUPTED_PID: list[int] = []  # the process whose SIGTERM takes the Ctrl-C path (main() installs the handler)


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM in the process that installed this: the Ctrl-C path. In a child forked before its own handlers were
    set (a pool worker between fork and its initializer, terminated in that window), the default: it dies at once,
    rather than printing a KeyboardInterrupt traceback into the parent's stderr from the middle of its start-up."""
    if os.getpid() not in _INTERRUPTED_PID:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
        return
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    command = _command_of(args)
    # SIGTERM (kill, timeout, CI cancellation, Slurm) takes the Ctrl-C path: every long command then keeps its
    # finished work, stops the processes it started (workers, a vLLM server in its own session) and exits 130,
    # instead of dying at once and leaving them behind. Python runs handlers in the main thread, where the commands
    # catch KeyboardInterrupt; the caller's handler comes back on return (tests call main in their process).
    in_main_thread = threading.current_thread() is threading.main_thread()
    if in_main_thread:
        _INTERRUPTED_PID[:] = [os.getpid()]
    previous = signal.signal(signal.SIGTERM, _interrupt) if in_main_thread else None
    try:
        return _run(command, args)
    finally:
        if in_main_thread:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def _run(command: Subcommand, args: argparse.Namespace) -> int:
    try:
        config = from_namespace(command.config_cls(), args)
        return command.run(config)
    except PerfforgeError as exc:
        print(f"perfforge: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`perfforge mine | head`): not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
