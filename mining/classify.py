"""Is a commit a performance change, of which kind, and why: a perf score in [0, 1] from message and diff.

Messages alone miss most real performance commits (they name a technique, "use x128 loads", or say nothing),
and words like "fast" or "optimizer" often mean something else. So the score adds evidence from three
places, each a named signal with a weight (log-odds):

- the message: outcome words (speedup, throughput, GB/s, "2.1x"), technique words (coalesce, bank conflict,
  float4, fuse, tile, occupancy, launch_bounds, cp.async, TMA, autotune), and words that mark other work
  (fix, revert, test, docs, "add support");
- the diff of kernel files: performance constructs that the change introduces (`__shared__`, float4/x128
  loads, warp shuffles replacing atomics, `#pragma unroll`, `__launch_bounds__`, OpenMP pragmas, SIMD
  intrinsics, Triton num_warps/num_stages/autotune), numeric retuning of launch and tile parameters, and
  the shape of the change (existing kernels edited rather than new files added);
- combinations: a technique in the message backed by the matching construct in the diff.

The weights were set by hand on bench/labels/dev and heldout1; heldout2-4 were held out, each evaluated once
frozen (bench/labels/README.md, bench/eval_classifier.py; the README has the figures: held-out F1 falls from
0.6 to 0.25 as repositories differ more from the development ones). The category is the technique with the
most evidence. Every signal that fired is returned as evidence, strongest first.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field

from mining.gitlog import FileDiff
from perfforge.records import Category

# Log-odds of the score before any evidence: about 15-20% of the labelled kernel-touching commits are perf.
PRIOR_LOG_ODDS = -2.0
# A commit is a performance change at or above this score (is_perf). 0.5 = evidence outweighs the prior.
PERF_THRESHOLD = 0.5

_OUTCOME_RE = re.compile(
    r"\b(speed[\s-]?ups?|speeds? up|sped up|faster|fastest|slowdown|perf\b|performance|throughput|"
    r"latency|bandwidth|[gt]b/s|[gt]flop|tok(en)?s?/s|t/s\b|\d+(\.\d+)?\s?x\b|"
    r"optimi[sz](e|ed|es|ing|ations?)\b|efficien(t|cy)|overhead|mfu\b|\d+(\.\d+)?\s?(ms|us|µs)\s*(->|→|to)|"
    r"(reduce|lower|less|save|saving)s?\s+(memory|time|latency|overhead|register|allocation)|"
    r"improve[sd]?\s+(the\s+)?(perf|speed|throughput|bandwidth)|"
    r"(more|big|bigger|significant|nice|huge|major|substantial)\s+improvements?|"
    r"(substantially|significantly|greatly|much)\s+(improved|better|faster))")

# Technique words in the message, per category: (specific, generic). Specific phrases are performance
# techniques and little else ("bank conflict", "float4", "online softmax"); generic ones also name features
# and fixes ("cache", "pipeline", "fp8", "streams") and count only with other evidence.
_TECHNIQUE_WORDS: dict[Category, tuple[str, str]] = {
    Category.MEMORY_ACCESS: (r"coalesc|access pattern|aligned (loads?|access)|memory access|"
                             r"\bpad(ded|ding)? (vocab|to)|loop (order|interchange)|\w-\w-\w loop order|"
                             r"\brestrict\b|aliasing",
                             r"strided?\b|contiguous|alignment|transpose[sd]? (the )?(weights?|layout)|\btma\b"),
    Category.SHARED_MEMORY: (r"shared mem|\bsmem\b|bank conflicts?|__shared__|swizzl|double[- ]?buffer",
                             r"\blds\b|local memory"),
    Category.ATOMICS: (r"atomic contention|(remove|avoid|fewer|no) atomic|atomic\w* per (block|warp)|"
                       r"per-element atomic|(block|warp|tree|shuffle) reduction",
                       r"\batomic\w*|contention|reduction"),
    Category.PARALLELISM: (r"occupancy|threads per block|launch (config|param|bound|(warp|block|grid|thread)s?\b)|"
                           r"persistent kernel|split-?k|"
                           r"all (available )?threads|more (blocks|warps|threads)|"
                           r"(remove|avoid|fewer|no) (waits?|sync)|"
                           r"warp speciali[sz]|\blpt\b|overlap|openmp|\bomp\b|(fewer|less|more) stages",
                           r"block ?size|grid size|\bstreams?\b|\bwaits?\b|pipelin|\bstages?\b|"
                           r"parallel(i[sz]e|ism)|\bnum_warps|scheduler"),
    Category.VECTORIZATION: (r"vectori[sz]|float4|\bx128\b|\bsimd\b|\bavx\d*|\bneon\b|vector (loads?|stores?)|"
                             r"half2|wide loads?|\bhsum\b",
                             r"\bsve\b|packed"),
    Category.TILING: (r"til(ed|ing)\b|tile sizes?|(larger|smaller|bigger) (block|tile|chunk)",
                      r"\btiles?\b|blocking|block_size|chunk size|\bmmvq?\b|coopmat"),
    Category.FUSION: (r"\bfus(e|ed|es|ing|ion)\b|single kernel|one kernel|merge (the )?kernels", r"combine"),
    Category.ALGORITHMIC: (r"online softmax|\bo\(n|avoid (re)?comput|early exit|fast path|lookup table|"
                           r"separat(e|ing) the loops|one pass|single pass|(reduce|fewer|less) \w+ calls|"
                           r"(remove|delete|avoid|drop|skip)s? (unnecessary|redundant|unneeded|extra)|"
                           r"less (index )?math|fewer instructions|hoist",
                           r"algorithm|redundant|skip(s|ping)? |\bcub\b|cublas|direct (conv|kernel)"),
    Category.PRECISION: (r"half precision (for|to) speed", r"\bbf16\b|\bfp16\b|\bfp8\b|\bint8\b|mixed precision|"
                         r"\btf32\b|\bmxfp"),
    Category.REGISTER_PRESSURE: (r"register (pressure|spill|usage)|\bspill|launch_bounds|maxrregcount",
                                 r"registers?\b"),
    Category.BRANCH_DIVERGENCE: (r"divergen|branchless|branch-free", r"branch"),
    Category.CACHING: (r"avoid (a )?(copy|copies|alloc)|memory (usage|footprint)|allocate less|lru.?cache|"
                       r"avoid repeated|(consolidate|reduce|save|saving|less|lower|smaller) (\w+ )?memory|"
                       r"memoi[sz]|don'?t return|no longer (return|materiali)|precompute",
                       r"\bcach(e|ed|es|ing)\b|\breuse|in-?place"),
    Category.OTHER: (r"auto-?tun|\btun(e|ed|es|ing)\b|use_fast_math|\br2p\b", r"heuristic|-o3"),
}
_TECHNIQUE_RES = {cat: (re.compile(strong), re.compile(weak)) for cat, (strong, weak) in _TECHNIQUE_WORDS.items()}

# Words that mark work other than a performance change. Matched on the subject line only: bodies of real
# perf commits often mention fixes, tests and docs in passing.
_OTHER_WORK_RE = re.compile(
    r"^(revert|merge|bump|release|version|docs?\b|readme|typo|lint|format|style|ci\b|test|tests\b|build|cmake)|"
    r"\b(fix(es|ed)?|bug|bug-?fix(es)?|hotfix(es)?|crash|segfault|typo|warning|nan|overflow|incorrect|wrong|"
    r"compile|build)\b|"
    r"\b(add|adds|added|support|implement|introduce)\b.*\b(op|ops|operator|support|model|backend|option|"
    r"feature|api|test|loss|layer)s?\b|"
    r"^(\[[^\]]*\]\s*)*(allow|enable|support|feat(ure)?)\b|\bfallback\b|\bsimplif(y|ies|ied|ication)\b|"
    r"\b(skeleton|scaffold\w*|wip|draft)\b|"
    # removing a technique undoes it; removing waste (redundant work, waits, copies) is the optimisation
    r"^(\S+\s?:\s*)?(rm|remove[sd]?|drop(s|ped)?|disable[sd]?|undo)\b"
    r"(?!.*\b(redundant|unnecessary|unneeded|extra|waits?|syncs?|synchroni[sz]\w*|copies|copy|overhead)\b)")
_REVERT_RE = re.compile(r"^(\S+\s?:\s*)?revert\b")
# Benchmark tables and before/after figures in a body: "| 1.23 | 2.34 |", "12.3 ms -> 8.1 ms", "+35%".
_MEASUREMENT_RE = re.compile(r"(\|\s*[\d.]+\s*(ms|us|t/s|gb/s|tflops?)?\s*\|)|([\d.]+\s*(->|→)\s*[\d.]+)|"
                             r"(\+\d+(\.\d+)?\s?%)|(\d+(\.\d+)?\s?%\s+(faster|speedup|improvement|better))")

# Constructs in kernel code whose introduction is a performance edit, per category.
_CONSTRUCTS: dict[Category, str] = {
    Category.SHARED_MEMORY: r"__shared__|extern __shared__|\bsmem\b|threadgroup\b|__local\b|tl\.local|LDS",
    Category.VECTORIZATION: r"float4|float2|int4|uint4|half2|bfloat162|\bx128\b|Packed128|__ldg|ld\.global\.v4|"
                            r"_mm\d*_|__m256|__m512|vld1q?_|vst1q?_|svld|vec4|\bv4f32\b|reinterpret_cast<\s*(float|int)4",
    Category.ATOMICS: r"__shfl_(xor|down|up)_sync|warpReduce|blockReduce|warp_reduce|block_reduce|simd_sum|"
                      r"subgroupAdd",
    Category.PARALLELISM: r"cudaStream|cudaMemcpyAsync|cudaGraph|#\s*pragma\s+omp|num_warps|num_stages|"
                          r"grid_constant|cooperative|cudaOccupancy|\bpipeline\b|__syncwarp|mbarrier",
    Category.TILING: r"\bTILE\w*|\bBLOCK_[MNK]\b|BLOCK_SIZE|\bBM\b|\bBN\b|\bBK\b|tile_size|split_k",
    Category.REGISTER_PRESSURE: r"__launch_bounds__|maxrregcount|#\s*pragma\s+unroll",
    Category.PRECISION: r"__nv_bfloat16|__half\b|__float2half|__bfloat162float|fp8|__nv_fp8|tf32|float16|bfloat16",
    Category.MEMORY_ACCESS: r"__restrict__|\brestrict\b|cp\.async|memcpy_async|cp_async|\bTMA\b|tma_load|"
                            r"tl\.make_block_ptr|cuda::memcpy_async|__builtin_prefetch|prefetch",
    Category.OTHER: r"triton\.autotune|triton\.Config|@autotune|-use_fast_math|-O3|wgmma|wmma|\bmma\b|tcgen05",
}
_CONSTRUCT_RES = {cat: re.compile(rx) for cat, rx in _CONSTRUCTS.items()}
# Diffs are cut into tokens once (identifiers with their `.`/`::` qualifiers, pragmas, a few flags) and each
# distinct token is matched against the construct patterns once: on the large diffs of real histories this is
# tens of times faster than running every pattern over every line.
_TOKEN_RE = re.compile(r"#\s*pragma\s+\w+|-O3\b|-use_fast_math|@?[A-Za-z_]\w*(?:(?:\.|::)[A-Za-z_]\w*)*")
_ATOMIC_RE = re.compile(r"\batomic(Add|_add|Max|Min)\b|\btl\.atomic_")
# Reductions that can take the place of atomics. cg::reduce (cooperative groups) is one, but it uses no atomics and
# is common in kernels that never had any (llm.c's layernorm), so it is not an atomics construct by itself: it
# counts only where atomics were removed beside it (_atomics_replaced).
_REDUCTION_RE = re.compile(_CONSTRUCTS[Category.ATOMICS] + r"|\bcg::reduce\b")
# A branch that lets one thread of a warp or block act: `if (threadIdx.x == 0)`, `(threadIdx.x & 31) == 0`.
_ONE_THREAD_GUARD_RE = re.compile(r"threadIdx\.x\s*(&\s*\d+\s*\)?\s*)?(%\s*\d+\s*\)?\s*)?==\s*0|\blane(_?id)?\s*==\s*0|"
                                  r"\btid\s*==\s*0")
# A line whose only change is a number, with a tuning parameter on it: `block_size = 256` -> `= 512`.
_TUNING_NAME_RE = re.compile(
    r"(?-i:\b(BLOCK|TILE|CHUNK|WARP|THREAD|STAGE)S?(_[A-Z]+)?\b)|\bblock_?(size|dim|[mnk])s?\b|"
    r"\btile_?(size|[mnk])?s?\b|"
    r"\bnum_?(warps|stages|threads|blocks|ctas)\b|\bn?threads\b|\bwarps\b|\bchunk_?size\b|\bunroll\b|"
    r"\bthreads?_?per_?block\b|\bsplit_?k\b|<<<|\b(BM|BN|BK|TM|TN)\b|launch_bounds", re.IGNORECASE)
_LINE_WITH_DIGIT_RE = re.compile(r"^[^\n\d]*\d[^\n]*$", re.MULTILINE)
_WORD_RE = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


def _words(line: str) -> tuple[str, ...]:
    """The words of a line in order, numbers and punctuation dropped."""
    return tuple(_WORD_RE.findall(line))
_TEST_OR_BENCH_FILE_RE = re.compile(r"(^|/)(test_|bench|benchmark|profile_)|_test\.\w+$|_bench\.\w+$", re.IGNORECASE)

# Signal weights (log-odds added when the signal fires). Set by hand on bench/labels/dev and heldout1.
WEIGHTS = {
    "message_outcome_subject": 3.0,  # "faster", "throughput", "2x", "optimize" in the subject line
    "message_outcome_body": 1.4,  # ... only in the body: PR templates and asides mention performance too
    "message_technique": 2.2,  # the subject names a specific performance technique ("bank conflict", "float4")
    "message_technique_body": 1.2,  # ... only the body does
    "message_technique_generic": 0.8,  # names a word that is often a technique ("cache", "pipeline", "fp8")
    "message_measurement": 1.0,  # a benchmark table or before/after figure in the message
    "technique_backed_by_diff": 1.2,  # the technique it names appears in the diff's added code
    "diff_constructs": 0.6,  # per kind of performance construct introduced by rewriting existing lines (max 3)
    "diff_constructs_added": 0.3,  # per kind introduced only in pure additions (new code beside the old; max 3)
    "diff_atomics_replaced": 1.5,  # atomics removed and warp/block reductions added
    "diff_numeric_tuning": 1.4,  # launch/tile parameters retuned, nothing else in those lines
    "other_work_subject": -2.0,  # subject says fix/revert/test/docs/"add support for X"
    "only_new_files": -1.5,  # every kernel file is new: a feature, not a before/after change
    "only_test_or_bench_files": -2.5,  # kernel files changed are tests or benchmarks
    "tiny_kernel_edit": -0.8,  # fewer than 3 changed lines in kernel files
}


@dataclass
class Classification:
    perf_score: float
    category: Category  # NONE when not is_perf
    evidence: list[str] = field(default_factory=list)
    threshold: float = PERF_THRESHOLD  # the score at which this run calls a commit a performance change

    @property
    def is_perf(self) -> bool:
        return self.perf_score >= self.threshold


@dataclass
class _Tally:
    log_odds: float = PRIOR_LOG_ODDS
    evidence: list[tuple[float, str]] = field(default_factory=list)
    technique_votes: dict[Category, float] = field(default_factory=dict)

    def add(self, signal: str, detail: str, times: float = 1.0) -> None:
        weight = WEIGHTS[signal] * times
        self.log_odds += weight
        self.evidence.append((weight, f"{signal} ({weight:+.1f}): {detail}"))

    def vote(self, category: Category, amount: float) -> None:
        self.technique_votes[category] = self.technique_votes.get(category, 0.0) + amount


def classify_commit(message: str, diffs: list[FileDiff], threshold: float = PERF_THRESHOLD) -> Classification:
    """Score one commit from its full message and the diffs of its kernel files; perf at or above threshold."""
    tally = _Tally()
    message_techniques = _score_message(message, tally)
    diff_constructs = _score_diff(diffs, tally)
    # Only specific technique words count as backed: "fp8" in the message and fp8 types in the diff is as
    # often a new feature as a speedup.
    backed = sorted(c.value for c in message_techniques & diff_constructs)
    if backed:
        tally.add("technique_backed_by_diff", ", ".join(backed))
    score = 1.0 / (1.0 + math.exp(-tally.log_odds))
    score = round(score, 4)
    category = _category(tally) if score >= threshold else Category.NONE
    evidence = [text for _, text in sorted(tally.evidence, key=lambda e: -abs(e[0]))]
    return Classification(perf_score=score, category=category, evidence=evidence, threshold=threshold)


@dataclass(frozen=True)
class _Lowered:
    """A text and its lower-case form. The message patterns are written in lower case and search the lower-case
    form, twice as fast as re.IGNORECASE; what they find is reported in the text's own case."""

    text: str
    lower: str

    @classmethod
    def of(cls, text: str) -> _Lowered:
        return cls(text, text.lower())

    def search(self, pattern: re.Pattern[str]) -> str | None:
        match = pattern.search(self.lower)
        if match is None:
            return None
        # lower() keeps the length except for a few letters (İ); then the lower-case words are reported
        return self.text[match.start():match.end()] if len(self.lower) == len(self.text) else match.group(0)


def _score_message(text: str, tally: _Tally) -> set[Category]:
    """Add the message's signals; return the categories of the specific technique words it names."""
    message = _Lowered.of(text)
    subject = _Lowered.of(text.strip().splitlines()[0] if text.strip() else "")
    subject_outcome = subject.search(_OUTCOME_RE)
    if subject_outcome is not None:
        tally.add("message_outcome_subject", repr(subject_outcome))
    elif (body_outcome := message.search(_OUTCOME_RE)) is not None:
        tally.add("message_outcome_body", repr(body_outcome))
    techniques: set[Category] = set()
    specific_hits: list[tuple[bool, str]] = []  # (in the subject, description)
    generic_hit = ""
    for category, (specific, generic) in _TECHNIQUE_RES.items():
        found = message.search(specific)
        if found is not None:
            specific_hits.append((subject.search(specific) is not None, f"{category.value}: {found!r}"))
            techniques.add(category)
            tally.vote(category, 2.0)
        elif (found := message.search(generic)) is not None:
            generic_hit = generic_hit or f"{category.value}: {found!r}"
            tally.vote(category, 1.0)
    if specific_hits:
        in_subject, description = max(specific_hits, key=lambda hit: hit[0])
        tally.add("message_technique" if in_subject else "message_technique_body", description)
    elif generic_hit:
        tally.add("message_technique_generic", generic_hit)
    measurement = message.search(_MEASUREMENT_RE)
    if measurement is not None:
        tally.add("message_measurement", repr(measurement))
    other = subject.search(_OTHER_WORK_RE)
    revert = subject.search(_REVERT_RE)  # quotes the reverted subject, performance words and all
    if revert is not None or other is not None and subject_outcome is None:
        tally.add("other_work_subject", repr(revert if revert is not None else other))
    return techniques


def _score_diff(diffs: list[FileDiff], tally: _Tally) -> set[Category]:
    text_diffs = [d for d in diffs if not d.is_binary]
    if not text_diffs:
        return set()
    if all(d.status == "added" for d in text_diffs):
        tally.add("only_new_files", ", ".join(d.path for d in text_diffs[:3]))
    if all(_TEST_OR_BENCH_FILE_RE.search(d.path) for d in text_diffs):
        tally.add("only_test_or_bench_files", ", ".join(d.path for d in text_diffs[:3]))
    modified = [d for d in text_diffs if d.status == "modified"]
    changed = sum(len(d.added_lines) + len(d.removed_lines) for d in text_diffs)
    if changed < 3:
        tally.add("tiny_kernel_edit", f"{changed} changed lines")
    hunks = [(_tokens(removed), _tokens(added), bool(removed and added))
             for d in modified for removed, added in d.hunks]
    introduced = _introduced_constructs([(r, a) for r, a, rewrites in hunks if rewrites])  # replaced lines
    appended = {c: e for c, e in _introduced_constructs([(r, a) for r, a, _ in hunks]).items()
                if c not in introduced}
    for category in (*introduced, *appended):
        tally.vote(category, 1.0)
    if introduced:
        kinds = ", ".join(f"{c.value} ({e})" for c, e in list(introduced.items())[:3])
        tally.add("diff_constructs", kinds, times=min(len(introduced), 3))
    if appended:
        kinds = ", ".join(f"{c.value} ({e})" for c, e in list(appended.items())[:3])
        tally.add("diff_constructs_added", kinds, times=min(len(appended), 3))
    if _atomics_replaced(modified):
        tally.add("diff_atomics_replaced", "atomic operations removed, warp/block reduction added")
        tally.vote(Category.ATOMICS, 3.0)
    tuning = _numeric_tuning(modified)
    if tuning:
        tally.add("diff_numeric_tuning", tuning)
        tally.vote(Category.OTHER if "num_" in tuning or "stage" in tuning else Category.PARALLELISM, 1.0)
    return set(introduced)


def _lines_matching(pattern: re.Pattern[str], lines: list[str]) -> int:
    return sum(1 for line in lines if pattern.search(line))


# Categories of each token seen so far: a plain dict, looked up for every token of every diff; emptied when it
# holds _MAX_KNOWN_TOKENS (ggml's whole history has 70,000 distinct tokens).
_TOKEN_CATEGORIES: dict[str, tuple[str, ...]] = {}
_MAX_KNOWN_TOKENS = 500_000


def _token_categories(token: str) -> tuple[str, ...]:
    categories = _TOKEN_CATEGORIES.get(token)
    if categories is None:
        categories = tuple(cat.value for cat, pattern in _CONSTRUCT_RES.items() if pattern.search(token))
        if len(_TOKEN_CATEGORIES) >= _MAX_KNOWN_TOKENS:
            _TOKEN_CATEGORIES.clear()
        _TOKEN_CATEGORIES[token] = categories
    return categories


def _tokens(lines: list[str]) -> Counter[str]:
    """How often each token (see _TOKEN_RE) occurs in lines, in order of first occurrence."""
    return Counter(_TOKEN_RE.findall("\n".join(lines))) if lines else Counter()


def _construct_counts(token_counts: list[Counter[str]]) -> tuple[dict[str, int], dict[str, str]]:
    """Occurrences of each category's constructs in the token counts, and the first construct of each."""
    counts: dict[str, int] = {}
    examples: dict[str, str] = {}
    for tokens in token_counts:
        for token, n in tokens.items():
            for name in _token_categories(token):
                counts[name] = counts.get(name, 0) + n
                examples.setdefault(name, token)
    return counts, examples


def _introduced_constructs(hunks: list[tuple[Counter[str], Counter[str]]]) -> dict[Category, str]:
    """Categories whose constructs occur more often in the added than in the removed lines of the hunks, given
    as (removed, added) token counts: each hunk is cut into tokens once for both of its uses."""
    added, examples = _construct_counts([tokens for _, tokens in hunks])
    removed, _ = _construct_counts([tokens for tokens, _ in hunks])
    return {Category(name): examples[name] for name, n in added.items() if n > removed.get(name, 0)}


def _atomics_replaced(modified: list[FileDiff]) -> bool:
    """Warp or block reductions added while atomics were removed, or fenced to one thread per warp/block."""
    removed = [line for d in modified for line in d.removed_lines]
    if "atomic" not in "\n".join(removed):  # every atomic of _ATOMIC_RE says so: one scan, not one per line
        return False
    added = [line for d in modified for line in d.added_lines]
    atomics_removed = _lines_matching(_ATOMIC_RE, removed)
    if not atomics_removed or not _lines_matching(_REDUCTION_RE, added):
        return False
    return atomics_removed > _lines_matching(_ATOMIC_RE, added) or _lines_matching(_ONE_THREAD_GUARD_RE, added) > 0


def _numeric_tuning(modified: list[FileDiff]) -> str:
    """The first removed/added line pair that changes only numbers on a tuning parameter, or "".

    "Only numbers" means the same words in the same order, numbers aside: `BLOCK = 1024` -> `BLOCK = 256`, and
    candidate lists that grow, `block_ns = range(16, 129, 8)` -> `block_ns = range(16, 129, 8) + (144, 160)`.
    """
    for diff in modified:  # cheap tests first: most changed lines of a large diff hold no number
        removed_shapes = {_words(line): line.strip() for line in _lines_with_digits(diff.removed_lines)}
        for line in _lines_with_digits(diff.added_lines):
            before = removed_shapes.get(_words(line))
            if before is not None and before != line.strip() and _TUNING_NAME_RE.search(line):
                return f"{before[:60]!r} -> {line.strip()[:60]!r}"
    return ""


def _lines_with_digits(lines: list[str]) -> list[str]:
    """The lines holding a digit, in order, found in one scan of their text."""
    return _LINE_WITH_DIGIT_RE.findall("\n".join(lines)) if lines else []


def _category(tally: _Tally) -> Category:
    """The technique with the most evidence."""
    if not tally.technique_votes:
        return Category.OTHER
    return max(tally.technique_votes.items(), key=lambda kv: kv[1])[0]
