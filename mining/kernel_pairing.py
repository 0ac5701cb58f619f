"""Kernel pairs that matching functions by name misses: kernels replaced under a new name, kernels fused into one,
and a kernel launched with another configuration.

mining.functions pairs the definitions of one name on both sides of a commit. When a commit fuses two kernels
into a new one, or rewrites a kernel under a new name, only the host launcher keeps its name, and the kernels,
what users mine for, were lost. The launches say what replaced what:

- Replacement. For every function defined on both sides, the kernels of the file it launches (directly, or
  through calls to the file's other functions) are listed in launch order on each side and aligned
  (difflib.SequenceMatcher, the launches that stayed as anchors). Where a run of launches is replaced, the
  kernels it no longer launches at all are paired with the one kernel new to the file (not defined before the
  commit) launched in their place; a run that gains several new kernels is left alone (which old kernel went
  where is not known). Each new kernel gathers what it replaced over every function showing it: one kernel is
  RENAMED, several are FUSED. A renamed kernel whose code differs only by its name is no change and gives no
  pair.
- Launch configuration. A changed function that launches the same kernels, in the same order, as before, one of
  them with another configuration (the chevrons' grid, block, shared memory and stream, Triton's grid and launch
  options, or a statement computing their values) while that kernel's code is unchanged, is a LAUNCH_CONFIG
  change of that kernel.

The Pairing is the pair's `pairing` field (launch_config pairs name their kernels in `launched_kernels`); an
evidence entry, `pairing_<value>: <detail>`, says what was replaced or launched, by which function.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from difflib import SequenceMatcher

from mining.functions import Function, FunctionChange
from mining.launches import calls, launch_shapes, launches, short_name
from perfforge.records import KernelKind, Pairing, normalise_code

# Kinds that a launch starts. OpenCL kernels are launched through cl_kernel objects, not by name, and __device__
# functions are called, not launched.
LAUNCHED_KINDS = frozenset({KernelKind.CUDA_KERNEL, KernelKind.TRITON_KERNEL})
# Calls deeper than this are not followed into. Launch paths in a file are a few calls deep; the limit only stops
# a pathological chain from exhausting Python's recursion.
_MAX_CALL_DEPTH = 16


@dataclass(frozen=True)
class KernelReplacement:
    """Kernels a commit stopped launching and the new kernel launched in their place."""

    before: tuple[Function, ...]  # the replaced kernels' definitions, in before-file order
    after: tuple[Function, ...]  # the new kernel's definitions (several for overloads or #ifdef variants)
    launchers: tuple[str, ...]  # the functions, defined on both sides, whose launches show the replacement

    @property
    def pairing(self) -> Pairing:
        return Pairing.FUSED if len({function.name for function in self.before}) > 1 else Pairing.RENAMED

    @property
    def name(self) -> str:
        return self.after[0].name

    @property
    def code_before(self) -> str:
        return "\n\n".join(function.code for function in self.before)

    @property
    def code_after(self) -> str:
        return "\n\n".join(function.code for function in self.after)

    def evidence(self) -> str:
        replaced = " + ".join(dict.fromkeys(function.name for function in self.before))
        return _evidence(self.pairing, f"{replaced} -> {self.name}, launched in place by {', '.join(self.launchers)}")


@dataclass(frozen=True)
class LaunchConfigChange:
    """A changed function launching kernels whose code did not change with another configuration."""

    launcher: str
    kernels: tuple[str, ...]  # in launch order

    @property
    def pairing(self) -> Pairing:
        return Pairing.LAUNCH_CONFIG

    def evidence(self) -> str:
        return _evidence(self.pairing, f"{self.launcher} launches {', '.join(self.kernels)} with another "
                                       "configuration; the kernel code, unchanged, is in file_before and file_after")


def _evidence(pairing: Pairing, detail: str) -> str:
    """The pair's evidence entry: what the launches showed. Keep its form: perfforge.records reads the pairing of
    schema 2.0 records, which had no field for it, from this entry."""
    return f"pairing_{pairing.value}: {detail}"


class KernelPairer:
    """The kernel pairs of one modified file, from its functions before and after the commit."""

    def __init__(self, before: list[Function], after: list[Function], language: str) -> None:
        self._before = _LaunchPaths(before, language)
        self._after = _LaunchPaths(after, language)
        self._language = language

    def replacements(self) -> list[KernelReplacement]:
        """Kernels replaced by a new kernel (see the module docstring), in after-file order."""
        added = {name for name in self._after.kernel_names if name not in self._before.definitions}
        if not added:
            return []  # the common commit: no new kernel, nothing to follow
        replaced: dict[str, dict[str, None]] = defaultdict(dict)  # new kernel -> old kernels (an ordered set)
        launchers: dict[str, dict[str, None]] = defaultdict(dict)
        for name in self._after.definitions:
            if name not in self._before.definitions:
                continue
            for olds, new in _replaced_runs(self._before.sequence(name), self._after.sequence(name), added):
                replaced[new].update(dict.fromkeys(olds))
                launchers[new][name] = None
        found = [self._replacement(new, list(olds), tuple(launchers[new])) for new, olds in replaced.items()]
        return sorted((r for r in found if r is not None), key=lambda r: r.after[0].start_line)

    def launch_config_change(self, change: FunctionChange) -> LaunchConfigChange | None:
        """The kernels of unchanged code that the changed function launches with another configuration; None
        when there are none, or when it does not launch the same kernels in the same order on both sides."""
        if not self._before.kernels:
            return None  # no kernel in the file: nothing to launch
        before = launches(change.before.code, self._language, self._before.kernels)
        after = launches(change.after.code, self._language, self._after.kernels)
        if not before or [launch.kernel for launch in before] != [launch.kernel for launch in after]:
            return None
        shapes = zip(launch_shapes(change.before.code, self._language, before),
                     launch_shapes(change.after.code, self._language, after), strict=True)
        kernels = [launch.kernel for launch, (shape_before, shape_after) in zip(before, shapes, strict=True)
                   if shape_before != shape_after and self._unchanged(launch.kernel)]
        return LaunchConfigChange(change.name, tuple(dict.fromkeys(kernels))) if kernels else None

    def _replacement(self, new: str, olds: list[str], launchers: tuple[str, ...]) -> KernelReplacement | None:
        before = tuple(sorted((f for old in olds for f in self._before.definitions[old]), key=lambda f: f.start_line))
        replacement = KernelReplacement(before, tuple(self._after.definitions[new]), launchers)
        if replacement.pairing == Pairing.RENAMED:
            renamed = re.sub(rf"\b{re.escape(short_name(olds[0]))}\b", short_name(new), replacement.code_before)
            if normalise_code(renamed, self._language) == normalise_code(replacement.code_after, self._language):
                return None  # the name alone changed: not a change of the code
        return replacement

    def _unchanged(self, kernel: str) -> bool:
        codes = [[normalise_code(f.code, self._language) for f in side.definitions.get(kernel, [])]
                 for side in (self._before, self._after)]
        return bool(codes[0]) and codes[0] == codes[1]


def _replaced_runs(before: tuple[str, ...], after: tuple[str, ...],
                   added: set[str]) -> list[tuple[list[str], str]]:
    """(old kernels, new kernel) of each replaced run of launches in which one new kernel took the place of
    kernels no longer launched."""
    runs = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag != "replace":
            continue
        olds = [kernel for kernel in before[i1:i2] if kernel not in after]
        news = [kernel for kernel in after[j1:j2] if kernel in added]
        if olds and len(news) == 1:
            runs.append((olds, news[0]))
    return runs


class _LaunchPaths:
    """The kernels each function of one file version launches, directly or through the file's other functions."""

    def __init__(self, functions: list[Function], language: str) -> None:
        self.language = language
        self.definitions: dict[str, list[Function]] = defaultdict(list)  # in file order
        for function in functions:
            self.definitions[function.name].append(function)
        launched = {f.name: None for f in functions if f.kind in LAUNCHED_KINDS}  # an ordered set
        self.kernel_names = list(launched)
        self.kernels = {short_name(name): name for name in self.kernel_names}  # what launches write -> name
        self._callables: dict[str, list[str]] = defaultdict(list)  # what calls write -> the non-kernel names
        for name in self.definitions:
            if name not in launched:
                self._callables[short_name(name)].append(name)
        self._sequences: dict[str, tuple[str, ...]] = {}
        self._visiting: set[str] = set()

    def sequence(self, name: str, depth: int = 0) -> tuple[str, ...]:
        """The kernels the function(s) of this name launch, each once, in the order first launched."""
        if name in self._sequences:
            return self._sequences[name]
        if name in self._visiting or depth > _MAX_CALL_DEPTH:
            return ()  # recursion, or too deep: cut here
        self._visiting.add(name)
        kernels: dict[str, None] = {}
        for function in self.definitions.get(name, []):
            for _, kind, target in self._events(function):
                kernels.update(dict.fromkeys([target] if kind == "launch" else self.sequence(target, depth + 1)))
        self._visiting.discard(name)
        self._sequences[name] = tuple(kernels)
        return self._sequences[name]

    def _events(self, function: Function) -> list[tuple[int, str, str]]:
        """(offset, "launch" or "call", kernel or function name) of the function's code, in order."""
        found = [(launch.offset, "launch", launch.kernel)
                 for launch in launches(function.code, self.language, self.kernels)]
        found += [(offset, "call", callee)
                  for offset, callee in calls(function.code, self.language, self._callables, function.name)]
        return sorted(found)
