"""The binary policy on nvcc's objects (profiling/binary_policy.py): the one constructor nvcc writes is allowed,
any other is not; CUDA IPC, host-memory registration, signals and sockets are refused imports; reduced-precision
device instructions are read from the SASS. The objects in data/nvcc are real nvcc output (see its README)."""

from __future__ import annotations

from pathlib import Path

import pytest

from profiling import binary_policy as bp

DATA = Path(__file__).parent / "data" / "nvcc"


def _refusals(name: str) -> list[bp.Refusal]:
    obj = DATA / f"{name}.o"
    return bp._cuda_load_time_code(obj) + bp._imports(bp._symbols(obj), cuda=True)


@pytest.mark.parametrize("name", ["plain", "half", "tf32"])
def test_an_ordinary_nvcc_object_passes_with_its_registration_constructor(name: str) -> None:
    assert _refusals(name) == []


def test_a_constructor_attribute_is_refused_beside_nvccs_registration() -> None:
    """Attack: `__attribute__((constructor))` runs code of the candidate's before main, before the system-call filter
    (a thread started there would outlive the filter's refusal of new threads and finish work after 'synced')."""
    (refusal,) = _refusals("ctor_attr")
    assert refusal.rule == "load_time_code" and "_ZL5earlyv" in refusal.message


def test_a_global_object_with_a_constructor_is_refused() -> None:
    """Attack: a static C++ object whose constructor runs before main (GCC's _GLOBAL__sub_I_ in .init_array)."""
    (refusal,) = _refusals("ctor_global")
    assert refusal.rule == "load_time_code" and "_GLOBAL__sub_I_" in refusal.message


def test_cuda_ipc_signals_and_sockets_are_refused_imports() -> None:
    """Attack: a SIGCONT handler that works while the judge resumes the process (before 'start'), a message sent
    on the judge's channel by the kernel itself, and a CUDA IPC handle to the judge's device buffers."""
    refused = {r.message.split()[1].rstrip(",") for r in _refusals("sig") if r.rule == "imports"}
    assert refused == {"cudaIpcGetMemHandle", "send", "signal"}


def test_the_registration_may_call_only_the_runtimes_registration(monkeypatch: pytest.MonkeyPatch) -> None:
    """An object whose registration constructor calls anything else (here `system`) is refused: nvcc's never does."""
    real = bp._relocations

    def with_a_call(obj: Path) -> dict[str, list[tuple[int, str, str]]]:
        found = real(obj)
        found[".rela.text.startup"] = [*found[".rela.text.startup"], (0x14, "R_X86_64_PLT32", "system - 4")]
        return found

    monkeypatch.setattr(bp, "_relocations", with_a_call)
    (refusal,) = _refusals("plain")
    assert refusal.rule == "load_time_code" and "system" in refusal.message


SASS = """
        code for sm_90
                Function : _Z1kPfi
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   HFMA2.MMA R5, -RZ, RZ, 0, 0 ;
        /*0020*/                   FFMA R0, R2, R3, R0 ;
        /*0030*/              @!P0 BRA 0x70 ;
"""


@pytest.mark.parametrize(("line", "refused"), [
    ("", None),
    ("        /*0040*/                   HADD2 R0, R2.H0_H0, R2.H0_H0 ;", "HADD2"),
    ("        /*0040*/              @P1 HFMA2 R0, R2, R3, R0 ;", "HFMA2"),
    ("        /*0040*/                   HFMA2.MMA R0, R2, R3, R0 ;", "HFMA2.MMA"),
    ("        /*0040*/                   HMMA.1684.F32.TF32 R4, R8, R12, R4 ;", "HMMA.1684.F32.TF32"),
    ("        /*0040*/                   F2FP.F16.F32.PACK_AB R0, RZ, R0 ;", "F2FP.F16.F32.PACK_AB"),
    ("        /*0040*/                   HGMMA.64x64x16.F32.BF16 R24, gdesc[UR4], R24 ;", "HGMMA.64x64x16.F32.BF16"),
    ("        /*0040*/                   F2F.F64.F32 R2, R0 ;", None),
])
def test_reduced_precision_is_read_from_the_sass(monkeypatch: pytest.MonkeyPatch, line: str,
                                                 refused: str | None) -> None:
    monkeypatch.setattr(bp, "_tool", lambda argv: SASS + line + "\n")
    found = bp._device_half_precision(Path("k.o"))
    assert [r.message.split("(")[1].split(")")[0] for r in found] == ([refused] if refused else [])


def test_dynamic_lookup_is_refused() -> None:
    """Attack: dlsym(RTLD_DEFAULT, "sigaction") reaches any libc function the import allow-list refuses by name."""
    refused = bp._imports([bp._Symbol("dlsym", "U"), bp._Symbol("cudaMalloc", "U"), bp._Symbol("getenv", "U")],
                          cuda=True)
    assert [r.message.split()[1].rstrip(",") for r in refused] == ["dlsym", "getenv"]
