"""Static checks on a candidate's source, before anything is built (VALIDATION.md rules 8, 9, 17).

Each check names the hack it stops and the targets it applies to, and is registered in STATIC_CHECKS (a
perfforge.registry.Registry: a name registered twice is an error). `strict` checks reject the candidate; the
others are warnings carried into the verdict. Comments are removed before matching so that a comment mentioning
cuBLAS does not trip a check; string literals are kept only where a check needs them (an #include of the
reference).
"""

from __future__ import annotations

import ast
import enum
import io
import re
import tokenize
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from perfforge.records import blank_comments
from perfforge.registry import Registry
from perfforge.targets import TARGETS
from perfforge.task import Task
from profiling.python_policy import host_library_uses, policy_problems, qualified_names
from profiling.python_precision import low_precision_uses


@dataclass(frozen=True)
class StaticFinding:
    check: str
    message: str
    strict: bool
    line: int = 0


class Reads(enum.Enum):
    """What text a check is given."""

    CODE = "code"  # the candidate with comments (and Python docstrings) blanked
    # that, and for Python also the syntax tree written out again (ast.unparse, docstrings dropped): what the
    # interpreter runs, whatever the spacing, continuations or compound lines (`torch .sum`, `if 1: import os`)
    CODE_AND_TREE = "code and tree"
    SOURCE = "source"  # the file as written, comments included


@dataclass(frozen=True)
class StaticCheck:
    name: str
    stops: str  # the hack it stops
    targets: tuple[str, ...]
    strict: bool
    run: Callable[[str, Task], list[tuple[int, str]]]  # (line, message) per problem, on the text `reads` names
    reads: Reads = Reads.CODE


STATIC_CHECKS: Registry[StaticCheck] = Registry("static check", entry_type=StaticCheck)


def _register(name: str, stops: str, targets: tuple[str, ...], strict: bool = True, reads: Reads = Reads.CODE):
    def wrap(run: Callable[[str, Task], list[tuple[int, str]]]) -> Callable:
        STATIC_CHECKS.register(name, StaticCheck(name, stops, targets, strict, run, reads))
        return run
    return wrap


# Which targets a check applies to, by what the check looks at, so that a new target gets the checks of its kind.
_ALL = TARGETS.names()
_PYTHON = tuple(spec.name for spec in TARGETS.values() if "python" in spec.languages)  # Python code (Triton)
# compiled into one binary with the C harness (perfforge_harness.h), whose functions a candidate could replace
_C_LIKE = tuple(name for name in _ALL if name not in _PYTHON)
_GPU = tuple(spec.name for spec in TARGETS.values() if spec.gpu)  # must launch a device kernel
_GPU_C_LIKE = tuple(name for name in _GPU if name in _C_LIKE)  # CUDA/HIP host code: streams
# Some targets' objects pass the binary policy (profiling/binary_policy.py), which reads what the compiler made of
# the source: the word checks below that it replaces (escapes, interposition, precision) are not run on them.
_UNSERVED_C_LIKE = tuple(name for name in _C_LIKE if not TARGETS.get(name).binary_policy)


def strip_comments(code: str, language: str) -> str:
    """Comments replaced by spaces, newlines kept, so line numbers still hold (perfforge.records.blank_comments);
    in Python, comments as its tokenizer finds them and docstrings too (a string standing alone as a statement never
    runs: an answer's docstring that wrote "x @ w.T" was refused as a matmul on the H100). Other strings stay:
    load_inline's CUDA sources are read, and a string handed to eval would run."""
    if language != "python":
        return blank_comments(code, language)
    return _blank_docstrings(_blank_python_comments(code))


def _line_starts(code: str) -> list[int]:
    r"""Where each line begins, as Python's tokenizer counts lines (\r\n, \r or \n): str.splitlines also breaks at
    form feeds and other separators, and a candidate's \x0c in a string would shift every later position onto
    another line."""
    return [0, *(match.end() for match in re.finditer(r"\r\n|\r|\n", code))]


def _blank_python_comments(code: str) -> str:
    """Python's comments (the tokenizer's COMMENT tokens) replaced by spaces; the code as it is where it does not
    tokenize (the `parses` check refuses it). A pattern cannot tell a '#' inside a string from a comment: a '#'
    before a string's closing quotes blanked the red team's code after them on the same line, and an honest
    docstring ending in "(issue #3)." lost its closing quotes, so the file no longer parsed and the docstring's
    words were read as calls."""
    try:
        comments = [token for token in tokenize.generate_tokens(io.StringIO(code, newline="").readline)
                    if token.type == tokenize.COMMENT]
    except (tokenize.TokenError, SyntaxError, ValueError):
        return code
    starts = _line_starts(code)
    text = list(code)
    for token in comments:  # one line each; the tokenizer's columns count characters
        begin = starts[token.start[0] - 1] + token.start[1]
        text[begin:begin + len(token.string)] = " " * len(token.string)
    return "".join(text)


def _blank_docstrings(code: str) -> str:
    """Every string that stands alone as a statement replaced by spaces (newlines kept); the code as it is when it
    does not parse."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return code
    starts = _line_starts(code)
    text = list(code)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
                and node.end_lineno is not None and node.end_col_offset is not None):
            # ast's columns count UTF-8 bytes; the lines here are characters: map through the line's bytes
            begin = _offset(code, starts, node.lineno, node.col_offset)
            end = _offset(code, starts, node.end_lineno, node.end_col_offset)
            for index in range(begin, end):
                if text[index] != "\n":
                    text[index] = " "
    return "".join(text)


def _offset(code: str, starts: list[int], line: int, byte_column: int) -> int:
    """The character offset of a (1-based line, UTF-8 byte column) position."""
    begin = starts[line - 1]
    end = starts[line] if line < len(starts) else len(code)
    return begin + len(code[begin:end].encode("utf-8")[:byte_column].decode("utf-8", errors="ignore"))


def _matches(code: str, pattern: str, message: str) -> list[tuple[int, str]]:
    return [(code.count("\n", 0, m.start()) + 1, message.format(m.group(0).strip()))
            for m in re.finditer(pattern, code, re.MULTILINE)]


@_register("parses", "Python the checks cannot read (a tokenizer or parser error) but that might still be read "
           "differently by the interpreter", _PYTHON, reads=Reads.SOURCE)
def _parses(source: str, task: Task) -> list[tuple[int, str]]:
    try:
        ast.parse(source)
    except SyntaxError as error:
        return [(error.lineno or 0, f"does not parse as Python: {error.msg}")]
    except ValueError as error:  # null bytes
        return [(0, f"does not parse as Python: {error}")]
    return []


@_register("source_encoding", "a source encoding other than UTF-8, under which the interpreter reads other code than "
           "the checks (utf-7 spelled torch.sum as `torch.+AHM-um`; unicode_escape hid imports behind \\x escapes)",
           _PYTHON, reads=Reads.SOURCE)
def _source_encoding(source: str, task: Task) -> list[tuple[int, str]]:
    # the encoding as import finds it (importlib.util.decode_source calls the same function): a pattern over
    # str.splitlines missed a coding line after a form feed on line 1, which Python still honours
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source.encode("utf-8", "surrogatepass")).readline)
    except SyntaxError as error:
        return [(1, f"declares a source encoding Python refuses ({error.msg}): write the kernel in UTF-8")]
    if encoding in ("utf-8", "utf-8-sig"):
        return []
    return [(1, f"declares the source encoding {encoding}: write the kernel in UTF-8 without a coding line")]


@_register("python_policy", "a Python candidate that imports what a kernel does not need (pydoc, posix, marshal, "
           "operator: the process and files by other names) or walks dunder attributes to the interpreter's "
           "internals", _PYTHON)
def _python_policy(code: str, task: Task) -> list[tuple[int, str]]:
    return policy_problems(code)


@_register("includes_reference", "a candidate that includes, imports or calls the task's known fast version",
           _ALL, reads=Reads.CODE_AND_TREE)
def _includes_reference(code: str, task: Task) -> list[tuple[int, str]]:
    names = [n for n in (task.reference,) if n]
    problems = []
    for name in names:
        stem = re.escape(Path(name).stem)
        pattern = (rf"^\s*(from\s+{stem}\s+import|import\s+{stem}\b)" if task.language == "python"
                   else rf"^\s*#\s*include\s*[\"<][^\">]*{re.escape(name)}[\">]")
        problems += _matches(code, pattern, "uses the task's reference version: {}")
    return problems


@_register("library_fallback", "a candidate that hands the whole job to a library routine (cuBLAS, thrust, BLAS, "
           "torch) instead of writing the kernel", _ALL, reads=Reads.CODE_AND_TREE)
def _library_fallback(code: str, task: Task) -> list[tuple[int, str]]:
    # each target's spec names the library routines of its kind (perfforge/targets.py)
    spec = TARGETS.get(task.target)
    problems = _matches(code, spec.library_pattern, "calls library routine {}")
    if task.language == "python" and (spec.library_methods or spec.library_matmul_operator or spec.host_allowlist):
        problems += host_library_uses(code, spec.library_methods, spec.library_matmul_operator,
                                      host_allowlist=spec.host_allowlist)
    return problems


@_register("swallows_errors", "a candidate that wraps the work in try/except and falls back or hides a failure",
           _PYTHON, reads=Reads.CODE_AND_TREE)
def _swallows_errors(code: str, task: Task) -> list[tuple[int, str]]:
    return _matches(code, r"^\s*(try\s*:|except\b[^\n]*:)", "catches exceptions: {}")


_LOW_PRECISION = {
    # type and intrinsic names only: `half` or `tf32` as a variable's name is innocent
    "c_like": r"\b(__half2?|__nv_bfloat16\w*|__float2half\w*|__float2bfloat16\w*|_Float16|__fp16|__bf16|"
              r"nv_bfloat16|wmma::precision::tf32|__float_to_tf32|fast-math|ffast-math|__fmul_rn_fast)\b",
    # only where the source does not parse (python_precision reads the tree otherwise)
    "python": r"(tl\.(float16|bfloat16|float8\w*)|torch\.(float16|half|bfloat16)|allow_tf32\s*=\s*True|"
              r"input_precision\s*=\s*[\"'](tf32|tf32x3)[\"'])",
}


@_register("precision_downgrade", "a candidate that computes in a lower precision than the task declares "
           "(fp16/bf16/tf32 inside an fp32 task, fast-math)", _PYTHON + _UNSERVED_C_LIKE)
def _precision_downgrade(code: str, task: Task) -> list[tuple[int, str]]:
    declared = {o.dtype for o in task.outputs}
    if not declared & {"float32", "float64"}:
        return []  # a half-precision task may use half types
    tree_uses = low_precision_uses(code) if task.language == "python" else None
    if tree_uses is not None:  # the tree knows what a name is bound to: `half = n // 2` is innocent
        problems = [(line, f"lower precision than declared: {what}") for line, what in tree_uses]
    else:
        pattern = _LOW_PRECISION["python" if task.language == "python" else "c_like"]
        problems = _matches(code, pattern, "lower precision than declared: {}")
    dot = re.search(r"\btl\.dot\s*\(", code) if task.language == "python" else None
    if dot and not re.search(r"input_precision\s*=\s*[\"']ieee[\"']", code):
        line = code.count("\n", 0, dot.start()) + 1
        problems.append((line, "tl.dot on fp32 defaults to tf32 on NVIDIA GPUs: pass input_precision=\"ieee\""))
    return problems


@_register("no_device_kernel", "a GPU candidate that does the work on the host and launches no device kernel",
           _GPU)
def _no_device_kernel(code: str, task: Task) -> list[tuple[int, str]]:
    if task.language == "python":
        triton = re.search(r"@triton\.(jit|autotune)", code) and re.search(r"\w+\s*\[[^\]]+\]\s*\(", code)
        if task.target == "torch":  # KernelBench's answers: Triton, or CUDA compiled inline
            inline = re.search(r"\bload_inline\s*\(", code) and re.search(r"__global__", code)
            return [] if triton or inline else [(1, "defines no custom kernel (a @triton.jit kernel it launches, "
                                                  "or CUDA with a __global__ kernel through load_inline): "
                                                  "PyTorch operators alone are not an answer")]
        return [] if triton else [(1, "defines or launches no @triton.jit kernel")]
    has_kernel = re.search(r"__global__", code) and re.search(r"<<<|cudaLaunch\w*|hipLaunch\w*", code)
    return [] if has_kernel else [(1, "defines or launches no __global__ kernel")]


_ESCAPES = {
    # calls, and the bare names of the worst (so a function pointer `= fopen;` or a macro argument counts too)
    "c_like": r"\b(f?open(64)?|freopen(64)?|openat(64)?|creat(64)?|fdopen|opendir|popen|system|fork|vfork|execv\w*|"
              r"execl\w*|posix_spawnp?|socket|connect|getenv|setenv|putenv|getcwd|chdir|readlink|dlopen|dlsym|"
              r"mmap(64)?|ptrace|setrlimit|kill|remove|unlink|rename|truncate|ftruncate|link|symlink|chmod|chown|"
              r"syscall)\s*\(|\b(fopen(64)?|freopen|popen|dlopen|dlsym|posix_spawnp?|execv\w*|execl\w*|"
              r"syscall)\b|\b[io]?fstream\b|\bstd::filesystem\b|__attribute__\s*\(\(\s*(constructor|destructor)|"
              # token pasting hides any name from these patterns (fo##pen); an asm label renames a function to a
              # symbol the harness uses (clock_gettime) without writing its name as a definition
              r"##|\)\s*(__asm__|__asm|asm)\s*\(\s*\"",
    # the harness module (perfforge_harness) and __main__ share the candidate's process: touching them, or
    # assigning to an attribute of a module the harness times with (time, torch), rewrites the clock; numpy and
    # torch file I/O reads other runs' outputs
    # an import of a denied module, or of a denied name from any module (`from torch.serialization import os`),
    # also after a `;` or across a backslash continuation (the red team's evasions of a line-anchored pattern);
    # perfforge_serve holds the filter the harness installs, mmap and pkgutil reach memory and modules by name;
    # doctest, code, codeop and timeit run code held in a string (a docstring, which the checks blank)
    "python": r"(?:^|;)[ \t]*(import[\s\\]+[^\n]*|from[\s\\]+|from[\s\\]+[\w.]+[\s\\]+import[\s\\(]+[^\n]*)\b(os|sys|"
              r"subprocess|socket|shutil|pathlib|ctypes|importlib|pickle|multiprocessing|threading|signal|builtins|"
              r"inspect|gc|io|glob|tempfile|time|perfforge_harness|perfforge_serve|mmap|pkgutil|runpy|doctest|code|"
              r"codeop|timeit|__main__)\b|\b(open|eval|exec|__import__|globals|vars|getattr|setattr|breakpoint)\s*\(|"
              r"(?<![\w.])compile\s*\(|\.(os|sys|builtins|subprocess)\b|\.modules\b(?!\s*\()|"
              r"\b(np|numpy|torch)\.(load|save|fromfile|memmap|loadtxt|genfromtxt)\b|\.tofile\s*\(|"
              r"\b__(builtins|globals|subclasses|code|dict|doc)__\b|"
              # assigning to a module's attribute rewrites what the harness calls; switching TF32 off is innocent
              r"^\s*(torch|triton|tl|np|numpy)(?!\.backends\.[\w.]+\s*=\s*False\s*$)(\.\w+)+\s*=(?!=)",
}


@_register("escapes_sandbox", "a candidate that reads files, the environment or the network, starts processes, "
           "or runs code at load time (how a cached or stolen answer gets in)", _PYTHON + _UNSERVED_C_LIKE,
           reads=Reads.CODE_AND_TREE)
def _escapes_sandbox(code: str, task: Task) -> list[tuple[int, str]]:
    pattern = _ESCAPES["python" if task.language == "python" else "c_like"]
    return _matches(code, pattern, "not allowed in a kernel: {}")


_TIMER_SYMBOLS = (r"\b(clock_gettime|gettimeofday|time|clock|cudaEventRecord|cudaEventElapsedTime|cudaEventSynchronize|"
                  r"cudaDeviceSynchronize|cudaMemset|cudaMemcpy|cudaGetLastError|nvtxRangePushA|malloc|free|"
                  r"aligned_alloc|memset|memcpy)\s*\([^;{)]*\)\s*\{")


@_register("interposes_harness", "a candidate that defines a function the harness calls (timer, synchronisation, "
           "allocation, copy), replacing it at link time", _UNSERVED_C_LIKE)
def _interposes_harness(code: str, task: Task) -> list[tuple[int, str]]:
    return _matches(code, _TIMER_SYMBOLS, "redefines a function the harness relies on: {}")


@_register("line_directive", "a candidate that tells the compiler its lines come from another file (#line, or a "
           "line marker: the policy reads the candidate's own lines of the preprocessed source by those markers)",
           _C_LIKE)
def _line_directive(code: str, task: Task) -> list[tuple[int, str]]:
    # the sixteenth red team's `#line 1 "/usr/include/..."` before `#pragma GCC optimize("Ofast")` put the pragma
    # in a header's lines, where the binary policy does not look, and it took effect; the seventeenth's spelled the
    # `#` as the digraph `%:` or split the directive with a backslash-newline: read as the preprocessor reads
    # (eighteenth: a vertical tab or form feed is whitespace in a directive as well, `#\vline`, `\f#line`)
    return _matches(directive_text(code), r"^[ \t\v\f\r]*#[ \t\v\f\r]*(line\b|\d)[^\n]*",
                    "renames its lines' file: {}")


# What the C preprocessor reads a directive's `#` from: trigraph `??=` (with -std=c*, -trigraphs), the digraph
# `%:` (C95 and C++, always), and lines joined by a backslash-newline (translation phase 2), in that order.
_TRIGRAPHS = {"=": "#", "/": "\\", "(": "[", ")": "]", "'": "^", "<": "{", ">": "}", "!": "|", "-": "~"}


def directive_text(code: str) -> str:
    """`code` as the preprocessor reads its directives: trigraphs replaced, backslash-newlines joined (each joined
    line's newline put back at the end of the logical line, so line numbers hold), and `%:` read as `#`."""
    code = re.sub(r"\?\?([=/()'<>!-])", lambda m: _TRIGRAPHS[m.group(1)], code)
    out, joined = [], 0
    for piece in re.split(r"(\\[ \t\v\f\r]*\n|\n)", code):  # gcc joins a backslash followed by blanks too
        if piece.startswith("\\"):
            joined += 1
        elif piece == "\n":
            out.append("\n" * (1 + joined))
            joined = 0
        else:
            out.append(piece)
    return ("".join(out) + "\n" * joined).replace("%:", "#")


@_register("extra_streams", "work launched on other streams to escape the timer (the harness synchronises the "
           "whole device, so this is only a warning)", _GPU_C_LIKE, strict=False)
def _extra_streams(code: str, task: Task) -> list[tuple[int, str]]:
    return _matches(code, r"\b(cudaStreamCreate\w*|hipStreamCreate\w*)\s*\(", "creates a stream: {}")


_ORIGINAL_IS_THE_REFERENCE = ("torch",)


def run_static_checks(candidate: str, task: Task) -> list[StaticFinding]:
    """Every applicable check's findings on the candidate source text. What the task's original source does
    itself (a library call, a half type, a getenv) is the task's own business and is not held against the
    candidate: findings whose message the original also produces are dropped."""
    # a UTF-8 byte-order mark is what Python's import skips: an honest file saved with one did not "parse"
    candidate_texts = _texts(candidate.removeprefix("\ufeff"), task.language)
    original_texts = _texts(task.source_path.read_text(errors="replace"), task.language)
    findings = []
    for check in STATIC_CHECKS.values():
        if task.target not in check.targets:
            continue
        # a torch task's original is the PyTorch reference an answer must replace: what it does (operators, no
        # kernel of its own) is exactly what a candidate may not do, so nothing is exempted by it
        exempted = task.target not in _ORIGINAL_IS_THE_REFERENCE
        allowed = {message for _, message in _run(check, original_texts, task)} if exempted else set()
        findings += [StaticFinding(check.name, message, check.strict, line)
                     for line, message in _run(check, candidate_texts, task) if message not in allowed]
    return findings


def _texts(source: str, language: str) -> dict[Reads, list[str]]:
    """The texts each kind of check reads: the source, the comment-free code, and that with (Python) the syntax tree
    written out again."""
    code = strip_comments(source, language)
    tree = _unparsed(code) if language == "python" else None
    return {Reads.SOURCE: [source], Reads.CODE: [code], Reads.CODE_AND_TREE: [code] + ([tree] if tree else [])}


def _run(check: StaticCheck, texts: dict[Reads, list[str]], task: Task) -> list[tuple[int, str]]:
    """A check's problems over the texts it reads, each message once: the line where the code as written shows it,
    0 where only the tree does (`torch .sum`, an import after `if 1:`)."""
    seen: dict[str, int] = {}
    for text in texts[check.reads]:
        for line, message in check.run(text, task):
            seen.setdefault(message, line if text is texts[check.reads][0] else 0)
    return [(line, message) for message, line in seen.items()]


class _DropDocstrings(ast.NodeTransformer):
    """Strings standing alone as statements (docstrings) replaced by `pass`, as strip_comments blanks them."""

    def visit_Expr(self, node: ast.Expr) -> ast.AST:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return ast.copy_location(ast.Pass(), node)
        return node


def _unparsed(code: str) -> str | None:
    """The code as Python's parser reads it, written out again without docstrings and with imported aliases in full
    (`s(x)` after `from torch import sum as s` reads `torch.sum(x)`); None when it does not parse."""
    try:
        return ast.unparse(qualified_names(_DropDocstrings().visit(ast.parse(code))))
    except (SyntaxError, ValueError, RecursionError):
        return None
