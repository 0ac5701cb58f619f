"""The binary policy: what a candidate's compiled object may define, import and contain (VALIDATION.md rule 22).

The candidate's source is compiled alone into an object (profiling/build.py) and read with binutils before it is
linked or run, so macros, token pasting, asm labels and attributes cannot hide anything from it:

- definitions: its own functions and data only. No symbol that the harness or a runtime library (libc, libm,
  libgomp, libstdc++, libgcc_s, the loader) calls through the dynamic linker: a `clock_gettime`, `malloc` or
  `getenv` of its own would be bound in place of libc's, for the harness and for libgomp's start-up code too (run
  before main). A name the C library merely exports and nothing calls (`advance`, `index`) is the candidate's to
  use. No `main` or `_start`, no IFUNC (its resolver runs while the program loads);
- no constructor or destructor of any kind (.init_array, .ctors, .preinit_array, .init and their fini twins): code
  that runs before the first call, or after the last, runs outside the judge's protocol;
- imports: each must be on the target's allow-list (math, memory, formatted output, threads, OpenMP, the C++
  runtime, time, random numbers); files, processes, signals, the environment and dynamic loading are refused with
  the symbol named. The system-call filter (served.py) holds whatever still gets through at run time;
- no raw system call instruction (syscall, sysenter, int 0x80);
- precision: with float32 or float64 outputs, no half-precision arithmetic or conversion in the object (F16C and
  AVX512-FP16 instructions, libgcc's half helpers), and no optimize pragma or attribute that relaxes floating-point
  semantics (fast-math and its parts) in the preprocessed source: read from what the compiler saw, never from words.

Source regexes (static_checks.py) remain a fast first filter only.
"""

from __future__ import annotations

import functools
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from perfforge.targets import target_spec
from perfforge.task import Task
from profiling import elf, sandbox

# Libraries a program may load: the names they import through the dynamic linker are what a definition in the
# program would take over (their sonames, found through the compiler; one not installed imports nothing).
RUNTIME_LIBRARIES = ("libc.so.6", "libm.so.6", "libgomp.so.1", "libstdc++.so.6", "libgcc_s.so.1",
                     "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1")
# Interposable by design (glibc documents replacing them), and called by everything: never the candidate's.
ALLOCATOR = frozenset({"malloc", "free", "calloc", "realloc", "memalign", "aligned_alloc", "posix_memalign", "valloc",
                       "pvalloc", "malloc_usable_size", "reallocarray"})
# Names the C start-up files (crt1.o, crti.o, crtbegin.o) call or read: defined by the candidate, they run or are
# read before main (crti's _init calls __gmon_start__ when it is defined).
RESERVED_DEFINITIONS = frozenset({"main", "_start", "_init", "_fini", "__libc_csu_init", "__libc_csu_fini",
                                  "__gmon_start__", "_ITM_registerTMCloneTable", "_ITM_deregisterTMCloneTable",
                                  "__cxa_finalize", "__libc_start_main", "_dl_relocate_static_pie", "__TMC_END__",
                                  "__data_start", "data_start", "_IO_stdin_used", "__dso_handle"})
LOAD_TIME_SECTIONS = (".init_array", ".fini_array", ".preinit_array", ".ctors", ".dtors", ".init", ".fini")

# The imports a CPU kernel may use, each family with why it is harmless. Matched against the whole symbol name.
CPU_IMPORTS: tuple[tuple[str, str], ...] = (
    (r"(mem|str)(cpy|move|set|cmp|chr|rchr|len|ncpy|ncmp|cat|ncat|dup)|bzero|__(mem|str)\w*_chk|"
     r"malloc|calloc|realloc|free|aligned_alloc|posix_memalign|memalign|valloc", "memory and strings"),
    (r"(v?s?n?f?printf|puts|putchar|fputs|fputc|fwrite|fflush|__v?s?n?f?printf_chk|stdout|stderr)",
     "formatted output to the process's own stdout/stderr"),
    (r"abort|__assert_fail|__stack_chk_fail|exit|_exit|atexit", "ending the process (a deviation the judge reports)"),
    (r"__errno_location", "errno (strtol's and the threads' error reports)"),
    (r"(q|b)sort|bsearch|l?l?abs|l?l?div|strto\w+|ato[ifl]l?|rand|srand|rand_r|random|srandom|[dlme]rand48\w*",
     "the C library's pure helpers"),
    (r"clock_gettime|clock|time|gettimeofday|nanosleep|usleep|sleep", "clocks (the judge times calls with its own)"),
    (r"pthread_(create|join|detach|self|equal|exit|once|attr_\w+|mutex\w*|cond_\w+|rwlock\w*|spin_\w+|barrier\w*|"
     r"key_create|key_delete|getspecific|setspecific)|sched_yield|sched_getcpu|get_nprocs\w*|sysconf|"
     # C11's threads, pthreads underneath (a red team's honest thrd_create pool was refused)
     r"thrd_(create|join|detach|current|equal|exit|yield|sleep)|mtx_\w+|cnd_\w+|tss_\w+|call_once",
     "threads (the filter lets clone create threads only)"),
    (r"omp_\w+|GOMP_\w+|__kmpc_\w+", "OpenMP"),
    (r"_Zn[wa]\w*|_Zd[la]\w*|__cxa_\w+|__gxx_personality_v0|_Unwind_\w+|_ZSt\w*|_ZNSt\w*|_ZNKSt\w*|_ZTVN10__cxxabiv\w*|"
     r"_ZTI\w*|_ZTS\w*|__dso_handle|"
     # std::call_once's trampoline and its thread-local slots, the vtables of std's own classes (std::future_error
     # with std::async), and glibc's single-thread flag that shared_ptr's reference counts read (a red team's honest
     # C++ was refused for each)
     r"__once_proxy|__once_call(able)?|_ZTVSt\w*|_ZTVNSt\w*|__libc_single_threaded",
     "the C++ runtime and standard library"),
    (r"_GLOBAL_OFFSET_TABLE_|__tls_get_addr|__cpu_model|__cpu_indicator_init|__cpu_features\w*|"
     r"__(div|udiv|mod|umod|mul|popcount|clz|ctz|ffs|bswap|parity|ashl|ashr|lshr|neg|extend|trunc|fix|float)\w*",
     "compiler support routines (half-precision conversions are the precision rule's to judge)"),
)
CPU_IMPORT_RE = re.compile("|".join(f"(?:{pattern})" for pattern, _ in CPU_IMPORTS))
# What CUDA host code may import besides: the runtime API but its IPC, host-memory registration (the judge's
# buffers must not become device-visible), resets and profiler control; nvcc's launch and registration helpers.
# Not dlopen/dlsym: CUB's device-wide algorithms import them (refused anyway as a library doing the whole job),
# and dlsym would hand the candidate any libc function the allow-list keeps from it (signal, send, ...).
CUDA_IMPORTS: tuple[tuple[str, str], ...] = (
    (r"cuda(?!Ipc|HostRegister|HostUnregister|HostGetDevicePointer|DeviceReset|ThreadExit|Profiler|"
     r"SetValidDevices|SetDeviceFlags|Graphics|DeviceFlushGPUDirectRDMAWrites)\w+", "the CUDA runtime"),
    (r"__cuda\w+", "nvcc's kernel launch and registration"),
)
CUDA_IMPORT_RE = re.compile("|".join(f"(?:{pattern})" for pattern, _ in CPU_IMPORTS + CUDA_IMPORTS))
CUDA_REGISTRATION = "_ZL24__sti____cudaRegisterAllv"  # nvcc's constructor (static: `__sti____cudaRegisterAll()`)
REGISTRATION_CALLS_RE = re.compile(r"__cudaRegister\w*|atexit")
CALL_RELOCATIONS = frozenset({"R_X86_64_PLT32", "R_AARCH64_CALL26", "R_AARCH64_JUMP26"})
# SASS: "/*0040*/   OPCODE operands ;" (predicates before the opcode, "@P0")
SASS_INSTRUCTION_RE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Za-z0-9_.]*)\s*([^;]*);")
# Half and bfloat16 arithmetic (HADD2, HFMA2, HMUL2, HMNMX2, HSET2, HSETP2), tensor-core MMA of any reduced type
# (HMMA, HGMMA, IMMA, QGMMA), fp32 to half/bf16 conversion (F2FP), and any instruction with such a type suffix.
SASS_HALF_RE = re.compile(r"^(H[A-Z]+2|HMMA|HGMMA|IMMA|IGMMA|QGMMA|F2FP)\b|\.(F16|BF16|TF32|E4M3|E5M2)\b")
SASS_MOVE_OPERANDS_RE = re.compile(r"\s*R\d+,\s*-RZ,\s*RZ,")

# Half precision in an object: F16C conversions and AVX512-FP16 arithmetic (every such mnemonic ends in "ph" or
# "sh", packed or scalar, or converts to or from one), and libgcc's software conversions to half and bfloat16.
HALF_MNEMONIC_RE = re.compile(r"v\w*(ph|sh)x?|v?cvt\w*(ph|sh)\w*|\w*bf16\w*|tdp\w+")  # + AVX512-BF16, AMX
HALF_HELPER_RE = re.compile(r"__(extend|trunc)\w*(hf|bf)\d?")
SYSCALL_MNEMONICS = frozenset({"syscall", "sysenter"})
MNEMONIC_RE = re.compile(r"^\s*[0-9a-f]+:\t(\S+)(?:\s+(\S+))?", re.MULTILINE)
# Per-function optimisation switches, in any spelling: GCC's optimize pragma and attribute (first in an attribute
# list or not, __optimize__, [[gnu::optimize]]), clang's fp pragmas, float_control, FP_CONTRACT. Which of their
# options relax floating point cannot be read reliably from words (string pasting hides them), so any of them is
# refused: the task's build decides how the kernel is optimised.
OPTIMIZE_SWITCH_RE = re.compile(
    r"#\s*pragma\s+(GCC\s+(optimize|push_options)|clang\s+fp|float_control|STDC\s+FP_CONTRACT)|"
    r"\b(__)?optimize(__)?\s*\(|\bgnu::(__)?optimize(__)?\b|\bfp_contract\b", re.IGNORECASE)


@dataclass(frozen=True)
class Refusal:
    """One way the object breaks the policy, said so a model can act on it."""

    rule: str  # definitions, load_time_code, imports, raw_syscall, precision
    message: str


def check_object(task: Task, obj: Path, preprocessed: str, harness_obj: Path, original_obj: Path) -> list[Refusal]:
    """Every refusal of the candidate's object (empty: it passes). `preprocessed` is the candidate's source as the
    compiler saw it (gcc -E), for the optimize pragmas and attributes; `harness_obj` the harness's own object and
    `original_obj` the original's: what the harness calls of the original (the kernel) is the candidate's to
    define, the rest of what it calls is not. CUDA objects (nvcc -c) also carry the device code, read from their
    SASS, and nvcc's registration constructor, the one load-time function they may have."""
    cuda = task.build.compiler == "nvcc"
    symbols = _symbols(obj)
    mnemonics = _mnemonics(obj)
    original = _symbols(original_obj)
    interface = {s.name for s in original if s.kind not in "Uwv"}
    harness_calls = {s.name for s in _symbols(harness_obj) if s.kind in "Uwv"} - interface
    taken = (dynamic_imports() | ALLOCATOR | harness_calls | (cuda_runtime_imports() if cuda else frozenset())
             ) - interface
    futex_waits = not cuda and "syscall" in _imported(symbols) and _syscalls_are_futex_waits(obj)
    refusals = (_definitions(symbols, taken) + (_cuda_load_time_code(obj) if cuda else _load_time_code(obj)) +
                _imports(symbols, cuda, futex_waits=futex_waits) + _raw_syscalls(mnemonics))
    # an optimize switch of its own is refused in every task: integer outputs are often computed from floats (an
    # argmax, a histogram's bins), and `Ofast` on an argmax with an int32 output read correct (sixteenth red team)
    refusals += _relaxed_fp(preprocessed, task.source) + _fp_control(mnemonics, executable_bytes(obj), symbols)
    refusals += _library_fallback(task, symbols, original)
    if {o.dtype for o in task.outputs} & {"float32", "float64"}:
        refusals += _half_precision(symbols, mnemonics)
        if cuda:
            refusals += _device_half_precision(obj)
    return refusals


@dataclass(frozen=True)
class _Symbol:
    name: str
    kind: str  # nm's type letter


def _symbols(obj: Path) -> list[_Symbol]:
    out = _tool(["nm", "-P", "--no-sort", str(obj)])
    found = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            found.append(_Symbol(parts[0], parts[1]))
    return found


def imported_names(obj: Path) -> set[str]:
    """The unversioned names an object imports."""
    return _imported(_symbols(obj))


def _imported(symbols: Sequence[_Symbol]) -> set[str]:
    return {_unversioned(s.name) for s in symbols if s.kind in "Uwv"}


def _definitions(symbols: list[_Symbol], taken: frozenset[str] | set[str]) -> list[Refusal]:
    refusals = []
    for symbol in symbols:
        # undefined, or local to the object; 'u' (GNU unique) and 'i' (IFUNC) are lowercase yet bound as globals
        if symbol.kind in "Uwv" or not symbol.kind.isupper() and symbol.kind not in "iu":
            continue
        if symbol.kind == "i":
            refusals.append(Refusal("load_time_code", f"defines {symbol.name} as an IFUNC: its resolver runs while "
                                                      "the program loads, before the judge's protocol"))
        elif symbol.name in RESERVED_DEFINITIONS or _unversioned(symbol.name) in taken:
            refusals.append(Refusal("definitions", f"defines {symbol.name}, which the harness or a runtime library "
                                                   "calls: a kernel defines only its own functions (rename it, or "
                                                   "make it static)"))
    return refusals


def _load_time_code(obj: Path, allowed: frozenset[str] = frozenset()) -> list[Refusal]:
    sections = set(re.findall(r"\]\s+(\.\S+)", _tool(["readelf", "-S", "-W", str(obj)]))) - allowed
    found = sorted(s for s in sections if any(s == name or s.startswith(name + ".") for name in LOAD_TIME_SECTIONS))
    return [Refusal("load_time_code", f"has a {section} section: code that runs before the first call or after the "
                                      "last (a constructor, destructor or global object with one); initialise "
                                      "inside the kernel instead") for section in found]


# libm's routines that load the floating-point control registers (flush-to-zero, denormals-are-zero, rounding,
# exception traps): every other libm export is math (seventeenth red team: FTZ and DAZ through fesetenv read 1.24x
# "improved" on a sum whose tail goes subnormal; fesetround(FE_TOWARDZERO) correct)
FP_ENVIRONMENT_SETTERS_RE = re.compile(r"_*fe(set|update|hold|enable|disable)\w*")


def _imports(symbols: list[_Symbol], cuda: bool = False, *, futex_waits: bool = False) -> list[Refusal]:
    """futex_waits: every call of the object's to libc's `syscall` asks for a futex (_syscalls_are_futex_waits),
    as the C++20 waits compile, so that import is allowed."""
    math = library_exports("libm.so.6")
    allowed = CUDA_IMPORT_RE if cuda else CPU_IMPORT_RE
    families = CPU_IMPORTS + (CUDA_IMPORTS if cuda else ())
    refused = sorted({s.name for s in symbols if s.kind in "Uwv" and _unversioned(s.name) not in math
                      and not allowed.fullmatch(_unversioned(s.name))
                      and not (futex_waits and _unversioned(s.name) == "syscall")})
    return [Refusal("imports", f"uses {name}, which a kernel may not: files, processes, signals, the environment and "
                               "dynamic loading are not available" + (
                                   ", nor CUDA IPC, host memory registration or device resets" if cuda else "") +
                    " (allowed: math, " + ", ".join(w for _, w in families) + ")") for name in refused]


# libstdc++'s C++20 waits (std::latch, std::barrier, std::counting_semaphore, std::atomic::wait) are header code
# that calls libc's `syscall(SYS_futex, ...)` inline in the candidate's own functions (a red team's honest latch
# was refused for the import). Allowed when each such call's number is the futex's, loaded by the instruction
# right before it: x86-64's `mov $0xca,%edi` (SYS_futex = 202), with nothing between that writes %rdi, calls,
# jumps, or is a jump's target. Any other number keeps the import refused (the system-call filter holds futex
# calls to the process's own memory anyway).
FUTEX_NUMBER_LOAD = ("mov", "$0xca,%edi")
OBJDUMP_LINE_RE = re.compile(r"^\s*([0-9a-f]+):\t(\S+)(?:\s+(\S+))?")
SYSCALL_CALL_RE = re.compile(r"^\s*([0-9a-f]+): R_X86_64_PLT32\s+syscall(@\S+)?-0x4$")

DI_REGISTER_RE = re.compile(r"%(rdi|edi|di|dil)\b")
# the instructions between the number's load and the call that may not sit there: they move control, or repeat
# a string instruction (objdump shows its operands, %rdi among them, after the prefix); an epilogue's `pop %rbx`
# and `leave` before a tail jump may
CONTROL_MNEMONIC_RE = re.compile(r"(j\w+|call\w*|ret\w*|loop\w*|rep\w*|syscall|sysenter|int\d?)$")
FUTEX_LOOKBACK = 16  # instructions: the compiler puts the load within a handful of the call


def _syscalls_are_futex_waits(obj: Path) -> bool:
    """Whether every call (or tail jump) of the object to `syscall` passes the futex's number (FUTEX_NUMBER_LOAD),
    and nothing else takes its address: any other relocation naming it (in code or data) makes a pointer to call
    later with any number (eighteenth red team: `long (*volatile raw)(long, ...) = syscall;` beside one honest
    futex call read gettid through)."""
    if any(kind not in CALL_RELOCATIONS and target.split("@")[0].split()[0] == "syscall"
           for entries in _relocations(obj).values() for _, kind, target in entries):
        return False
    text = _tool(["objdump", "-dr", "--no-show-raw-insn", str(obj)])
    calls = 0
    for section in re.split(r"^Disassembly of section ", text, flags=re.MULTILINE)[1:]:
        instructions: list[tuple[int, str, str]] = []  # (address, mnemonic, operands) in order
        targets: set[int] = set()  # direct jump and call targets within the section
        sites: list[int] = []  # the indices of the instructions that call `syscall`
        for line in section.splitlines():
            if SYSCALL_CALL_RE.match(line) and instructions:  # a relocation follows the instruction it patches
                sites.append(len(instructions) - 1)
                continue
            found = OBJDUMP_LINE_RE.match(line)
            if found:
                mnemonic, operands = found.group(2), found.group(3) or ""
                instructions.append((int(found.group(1), 16), mnemonic, operands))
                if re.fullmatch(r"j\w+|call\w*", mnemonic) and re.fullmatch(r"[0-9a-f]+", operands):
                    targets.add(int(operands, 16))
        calls += len(sites)
        if not all(instructions[site][0] not in targets
                   and _futex_number_before(instructions[max(0, site - FUTEX_LOOKBACK):site], targets)
                   for site in sites):
            return False
    return calls > 0


def _futex_number_before(before: list[tuple[int, str, str]], targets: set[int]) -> bool:
    """Whether the last of `before` that matters is the futex number's load: nothing after it moves control,
    writes %rdi or is a jump's target (entered there, %rdi could hold anything)."""
    for address, mnemonic, operands in reversed(before):
        if (mnemonic, operands) == FUTEX_NUMBER_LOAD:
            return True
        if address in targets or CONTROL_MNEMONIC_RE.fullmatch(mnemonic) or DI_REGISTER_RE.search(operands):
            return False
    return False


def _library_fallback(task: Task, symbols: list[_Symbol], original: list[_Symbol]) -> list[Refusal]:
    """A library routine that would do the whole job (the target's library_pattern, static check library_fallback)
    imported by the object, however the source spelled it (seventeenth red team: `JOIN(qs, ort)(...)` pasted qsort
    together where the source check reads words: 6.69x "improved" on a sort). What the original imports itself is
    the task's own business."""
    pattern = re.compile(target_spec(task.target).library_pattern)
    found = sorted(name for name in _imported(symbols) - _imported(original) if pattern.fullmatch(name))
    return [Refusal("library_fallback", f"calls {name}, a library routine that would do the kernel's whole job: "
                                        "write the algorithm itself") for name in found]


def executable_bytes(obj: Path) -> bytes:
    """The bytes of the object's executable sections, separated by a zero byte (no pattern spans two)."""
    return b"\0".join(section.data for section in elf.sections(obj) if section.executable)


def _cuda_load_time_code(obj: Path) -> list[Refusal]:
    """nvcc gives every object one constructor, its registration of the fat binary and kernels
    (__sti____cudaRegisterAll, local, named by nvcc: a definition of the candidate's by that name clashes with
    it). That entry is allowed when it is the only one and calls nothing but the runtime's registration functions
    and atexit; a global object with a constructor, a constructor attribute or any other load-time section is
    refused as for the CPU."""
    sections = _section_names(obj)
    refusals = _load_time_code(obj, allowed=frozenset({".init_array"}))
    relocations = _relocations(obj)
    spans = _function_spans(obj, sections)
    functions = {f"{section}+{offset}": name for name, (section, offset, _) in spans.items()}  # as relocations say
    targets = [functions.get(_resolve(target, sections), target)
               for _, _, target in relocations.get(".rela.init_array", [])]
    strangers = [t for t in targets if t != CUDA_REGISTRATION]
    if strangers or len(targets) > 1:
        refusals.append(Refusal("load_time_code", f"has a constructor besides nvcc's registration "
                                                  f"({', '.join(strangers) or 'a second registration'}): code that "
                                                  "runs before the first call (a global object with a constructor, "
                                                  "a constructor attribute); initialise inside the kernel instead"))
    if targets == [CUDA_REGISTRATION]:
        section, start, size = spans[CUDA_REGISTRATION]
        calls = {target for offset, kind, target in relocations.get(f".rela{section}", [])
                 if start <= offset < start + size and kind in CALL_RELOCATIONS}
        odd = sorted(t.split()[0] for t in calls if not REGISTRATION_CALLS_RE.fullmatch(t.split()[0]))
        if odd:
            refusals.append(Refusal("load_time_code", f"its registration constructor calls {', '.join(odd)}: nvcc's "
                                                      "calls only the CUDA runtime's registration functions"))
    return refusals


def _device_half_precision(obj: Path) -> list[Refusal]:
    """Half, bfloat16, TF32 and 8-bit floating-point instructions in the device code (SASS), for a task whose outputs
    are float32/float64. ptxas loads constants with `HFMA2.MMA Rd, -RZ, RZ, imm, imm` in fp32 code: that one is a move,
    not arithmetic."""
    sass = _tool(["cuobjdump", "-sass", str(obj)])
    for line in sass.splitlines():
        found = SASS_INSTRUCTION_RE.search(line)
        if not found:
            continue
        opcode, operands = found.group(1), found.group(2)
        if SASS_HALF_RE.search(opcode) and not (opcode == "HFMA2.MMA" and SASS_MOVE_OPERANDS_RE.match(operands)):
            return [Refusal("precision", f"computes in reduced precision on the device ({opcode}) although the "
                                         "task's outputs are float32/float64")]
    return []


def _section_names(obj: Path) -> dict[int, str]:
    return {int(m.group(1)): m.group(2) for m in re.finditer(r"^\s*\[\s*(\d+)\]\s+(\S+)",
                                                             _tool(["readelf", "-S", "-W", str(obj)]), re.MULTILINE)}


def _function_spans(obj: Path, sections: dict[int, str]) -> dict[str, tuple[str, int, int]]:
    """Every function symbol: (its section's name, its offset there, its size)."""
    spans = {}
    for line in _tool(["readelf", "-s", "-W", str(obj)]).splitlines():
        parts = line.split()
        if len(parts) >= 8 and parts[3] == "FUNC" and parts[6].isdigit():
            spans[parts[7]] = (sections.get(int(parts[6]), ""), int(parts[1], 16), int(parts[2], 0))
    return spans


def _resolve(target: str, sections: dict[int, str]) -> str:
    """A relocation's 'symbol + addend' as 'section+offset' when the symbol is a section, else the symbol."""
    name, _, addend = target.partition(" + ")
    if name in sections.values():
        return f"{name}+{int(addend or '0', 16)}"
    return name


def _relocations(obj: Path) -> dict[str, list[tuple[int, str, str]]]:
    """Per relocation section: (offset, type, 'symbol + addend') of each entry (readelf -r)."""
    found: dict[str, list[tuple[int, str, str]]] = {}
    current = ""
    for line in _tool(["readelf", "-r", "-W", str(obj)]).splitlines():
        header = re.match(r"Relocation section '([^']+)'", line)
        if header:
            current = header.group(1)
            found[current] = []
            continue
        parts = line.split(None, 4)
        if current and len(parts) == 5 and re.fullmatch(r"[0-9a-f]+", parts[0]):
            found[current].append((int(parts[0], 16), parts[2], parts[4].strip()))
    return found


def _mnemonics(obj: Path) -> list[tuple[str, str]]:
    """(mnemonic, first operand) of every instruction of the object's code."""
    return MNEMONIC_RE.findall(_tool(["objdump", "-d", "--no-show-raw-insn", str(obj)]))


def _raw_syscalls(mnemonics: list[tuple[str, str]]) -> list[Refusal]:
    if any(m in SYSCALL_MNEMONICS or (m == "int" and operand == "$0x80") for m, operand in mnemonics):
        return [Refusal("raw_syscall", "contains a raw system call instruction: a kernel calls no system directly")]
    return []


# Instructions that load the floating-point control registers: x86's MXCSR (flush-to-zero, denormals-are-zero,
# rounding, as `_mm_setcsr` compiles) and the x87 control word. A kernel that sets them changes the task's
# floating-point rules for the whole thread, as a fast-math switch does (sixteenth red team: FTZ, DAZ and
# round-toward-zero through _mm_setcsr read correct). libm's routines that load them (fesetenv, fesetround, ...)
# are refused as imports (FP_ENVIRONMENT_SETTERS_RE).
FP_CONTROL_MNEMONICS = frozenset({"ldmxcsr", "vldmxcsr", "fldcw", "fldenv", "frstor", "fxrstor", "fxrstor64",
                                  "xrstor", "xrstor64", "xrstors", "xrstors64"})
# The same MXCSR loads as bytes anywhere in the object's code, where a disassembler's linear sweep does not show
# them (seventeenth red team: `0f ae 17 c3`, ldmxcsr (%rdi); ret, inside a movabs immediate, called two bytes in:
# FTZ and DAZ, 1.24x "improved" on a sum whose tail goes subnormal). 0F AE with a memory operand (mod != 11) and
# reg 1 (fxrstor), 2 (ldmxcsr) or 5 (xrstor), REX prefixes or not; VEX.L0.0F AE /2 (vldmxcsr). Three fixed bytes
# out of 2^24: none in numpy's 8 MB of code, libstdc++'s 1 MB or libc's 1.4 MB besides its two real ones.
HIDDEN_FP_CONTROL_RE = re.compile(rb"\x0f\xae[\x08-\x17\x28-\x2f\x48-\x57\x68-\x6f\x88-\x97\xa8-\xaf]|"
                                  rb"\xc5[\x78\xf8]\xae[\x10-\x17\x50-\x57\x90-\x97]|"
                                  rb"\xc4[\x01\x21\x41\x61\x81\xa1\xc1\xe1][\x78\xf8]\xae[\x10-\x17\x50-\x57\x90-\x97]")


def _fp_control(mnemonics: list[tuple[str, str]], code: bytes, symbols: Sequence[_Symbol]) -> list[Refusal]:
    """An instruction loading the FP control registers, in the disassembly or as bytes inside other instructions,
    or an import of libm's routines that load them."""
    found = next((m for i, (m, _) in enumerate(mnemonics)
                  if m in FP_CONTROL_MNEMONICS and not _x87_rounding_idiom(mnemonics, i)), None)
    hidden = HIDDEN_FP_CONTROL_RE.search(code)
    if hidden and not found:
        found = f"the bytes {hidden.group(0).hex(' ')} of an MXCSR load, inside other instructions"
    found = found or next((s.name for s in symbols if s.kind in "Uwv"
                           and FP_ENVIRONMENT_SETTERS_RE.fullmatch(_unversioned(s.name))), None)
    if found:
        return [Refusal("precision", f"sets the floating-point control registers ({found}: flush-to-zero, "
                                     "denormals-are-zero or rounding); the task's build decides the floating-point "
                                     "rules")]
    return []


def _x87_rounding_idiom(mnemonics: list[tuple[str, str]], index: int) -> bool:
    """An `fldcw` beside an x87 rounding or integer store: gcc's own code for floorl, truncl, ceill and long double
    to integer casts (`fnstcw; fldcw; frndint; fldcw`, or `fistp` in place of frndint: the rounding mode set for one
    instruction and put back). Honest long double code was refused for it (nineteenth red team). What the word is
    set to is not read here: the mid-call probe reads the x87 precision a thread runs its own code in
    (fp_probe.py), and a word left changed fails the harness's check after the call."""
    if mnemonics[index][0] != "fldcw":
        return False
    beside = [mnemonics[j][0] for j in (index - 1, index + 1) if 0 <= j < len(mnemonics)]
    return any(m == "frndint" or m.startswith("fist") for m in beside)


def _half_precision(symbols: list[_Symbol], mnemonics: list[tuple[str, str]]) -> list[Refusal]:
    found = next((m for m, _ in mnemonics if HALF_MNEMONIC_RE.fullmatch(m)), None)
    found = found or next((s.name for s in symbols if HALF_HELPER_RE.fullmatch(_unversioned(s.name))), None)
    if found:
        return [Refusal("precision", f"computes in half precision ({found}) although the task's outputs are "
                                     "float32/float64")]
    return []


# The optimize pragmas no system header of gcc 12, glibc, libstdc++ or CUDA 13 holds, looked for on every line of
# the preprocessed source, headers' included: a macro a header expands can carry one there (seventeenth red team:
# `#undef __BEGIN_DECLS` / `#define __BEGIN_DECLS _Pragma("GCC optimize(\"Ofast\")")` before <stdlib.h> put Ofast
# on stdlib.h's lines, which the own-lines reading skips: 5-6x "improved" on a row sum). Not push_options nor the
# optimize attribute: the intrinsics headers push and pop targets, libstdc++'s experimental simd optimizes itself.
HEADER_OPTIMIZE_PRAGMA_RE = re.compile(r"#\s*pragma\s+(GCC\s+optimize|clang\s+fp|float_control|STDC\s+FP_CONTRACT)\b",
                                       re.IGNORECASE)
# And the optimize attribute on any line, past the one system header that holds one (libstdc++ 12's experimental
# simd, this exact text): eighteenth red team, `#undef __BEGIN_DECLS` redefined as a whole kernel carrying
# `__attribute__((optimize("Ofast")))`, then <alloca.h>, put the function on alloca.h's lines (5.1-6.2x on a row
# sum). None in the preprocessed gcc 12 / glibc / libstdc++ / OpenMP / intrinsics headers besides.
HEADER_OPTIMIZE_ATTRIBUTE_RE = re.compile(r"\b(__)?optimize(__)?\s*\(|\bgnu::(__)?optimize(__)?\b")
SYSTEM_OPTIMIZE_ATTRIBUTES = ('[[__gnu__::__optimize__("finite-math-only,no-signed-zeros")]]',)


def _relaxed_fp(preprocessed: str, source_name: str) -> list[Refusal]:
    """Per-function optimisation switches in the candidate's own lines of the preprocessed source (headers' lines
    are skipped by their line markers; macros and _Pragma are expanded there), and optimize pragmas on any line."""
    own = [text for text in _own_lines(preprocessed, source_name) if OPTIMIZE_SWITCH_RE.search(text)]
    anywhere = [text for text in preprocessed.splitlines() if HEADER_OPTIMIZE_PRAGMA_RE.search(text)
                or HEADER_OPTIMIZE_ATTRIBUTE_RE.search(_without(text, SYSTEM_OPTIMIZE_ATTRIBUTES))]
    return [Refusal("precision", f"relaxes floating point or may: {text.strip()[:120]} (an optimize switch of its "
                                 "own; the task's build decides how a kernel is optimised and its floating-point "
                                 "rules)")
            for text in dict.fromkeys(own + anywhere)]


def _without(text: str, parts: Sequence[str]) -> str:
    for part in parts:
        text = text.replace(part, "")
    return text


def _own_lines(preprocessed: str, source_name: str) -> list[str]:
    lines, own = [], True
    for line in preprocessed.splitlines():
        marker = re.match(r'#\s+\d+\s+"([^"]*)"', line)
        if marker:
            own = Path(marker.group(1)).name == source_name
            continue
        if own:
            lines.append(line)
    return lines


def _unversioned(name: str) -> str:
    return name.split("@", 1)[0]


@functools.cache
def library_exports(soname: str) -> frozenset[str]:
    """Every symbol a system library exports (read once per process; empty where the compiler cannot find it)."""
    return _dynamic_symbols(soname, "--defined-only")


@functools.cache
def cuda_runtime_imports() -> frozenset[str]:
    """Every name the CUDA runtime nvcc links in (libcudart_static.a) calls: a definition of the candidate's would
    take it over. Empty where nvcc is not installed."""
    nvcc = shutil.which("nvcc")
    if not nvcc:
        return frozenset()
    root = Path(nvcc).resolve().parent.parent
    for archive in (root / "lib64" / "libcudart_static.a", root / "targets" / "x86_64-linux" / "lib" /
                    "libcudart_static.a"):
        if archive.is_file():
            return frozenset(_unversioned(line.split()[-1]) for line in
                             _tool(["nm", "-u", str(archive)]).splitlines() if line.strip().startswith("U "))
    return frozenset()


@functools.cache
def dynamic_imports() -> frozenset[str]:
    """Every name a runtime library imports through the dynamic linker (read once per process)."""
    return frozenset().union(*(_dynamic_symbols(soname, "--undefined-only") for soname in RUNTIME_LIBRARIES))


def _dynamic_symbols(soname: str, which: str) -> frozenset[str]:
    path = _tool(["gcc", "-print-file-name=" + soname]).strip()
    if not path or not Path(path).is_file():
        return frozenset()
    return frozenset(_unversioned(line.split()[0]) for line in _tool(["nm", "-D", which, "-P", path]).splitlines()
                     if line.split())


def _tool(argv: list[str]) -> str:
    """A binutils command's output (the object is data to it: nothing of the candidate's runs)."""
    result = sandbox.run_trusted(argv, timeout_s=120, text=True, errors="replace")
    if result.returncode != 0:
        raise BinaryPolicyError(f"{argv[0]} could not read {argv[-1]}: {result.stderr.strip()[:200]}")
    return result.stdout


class BinaryPolicyError(Exception):
    """binutils is missing or could not read the object: the verdict cannot check the policy (fails closed)."""
