/* Twenty-sixth session's red team: a single-threaded body that stays honest until it sees its call's probe (a gap
 * of more than 120 us in rdtsc, no import) and sets FTZ|DAZ for the rest of the call. A correctness call was probed
 * once when that probe read work (a lone thread always does): correct 6 of 6, idle and under load. Then probed
 * once more at chance 0.5 (sessions 26-30): correct in a CI run and in 1 of 100 verdicts under two busy loops. A
 * correctness call's probes are a Poisson process over its body now (served.PROBES_A_BODY). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <elf.h>
#include <ucontext.h>
#include <xmmintrin.h>
/* geosum with FTZ|DAZ set and put back within each call, through libc's getcontext/setcontext found by hand from
 * malloc's address (no import, no MXCSR load in the object; neither routine is among the sampled ones: libm's
 * fe*set* and the task's library pattern). The elements whose sum could be subnormal (|x| < 4 FLT_MIN: the edge
 * values' subnormal inputs) are computed after the put-back, IEEE, so no subnormal the original writes is
 * flushed (correctness.FLUSH_*) and the control registers are as found when the call returns (fpcontrol). */

static void *lookup(const void *inside, const char *want) {
    uintptr_t p = (uintptr_t)inside & ~(uintptr_t)4095;
    while (memcmp((const void *)p, "\177ELF", 4) != 0) p -= 4096;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)p;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(p + eh->e_phoff);
    const Elf64_Dyn *dyn = 0;
    for (int i = 0; i < eh->e_phnum; i++) if (ph[i].p_type == PT_DYNAMIC) dyn = (const Elf64_Dyn *)(p + ph[i].p_vaddr);
    const Elf64_Sym *sym = 0; const char *str = 0;
    for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
        uintptr_t v = dyn->d_un.d_ptr; if (v < p) v += p;
        if (dyn->d_tag == DT_SYMTAB) sym = (const Elf64_Sym *)v;
        if (dyn->d_tag == DT_STRTAB) str = (const char *)v;
    }
    for (const Elf64_Sym *s = sym; (const char *)s < str; s++)
        if (s->st_value && strcmp(str + s->st_name, want) == 0) return (void *)(p + s->st_value);
    return 0;
}

typedef int (*getctx_t)(ucontext_t *);
static getctx_t getctx;
static int (*setctx)(const ucontext_t *);

static __attribute__((noinline)) void put_csr(unsigned value) {
    ucontext_t uc;
    volatile int again = 0;
    getctx(&uc);
    if (!again) {
        again = 1;
        uc.uc_mcontext.fpregs->mxcsr = value;
        setctx(&uc);
    }
}

static void sums(const float *x, float *out, int n, int steps, float d, int tiny) {
    for (int i = 0; i < n; i++) {
        if ((fabsf(x[i]) < 4.0f * 1.17549435e-38f) != tiny) continue;
        float term = x[i], acc = 0.0f;
        for (int k = 0; k < steps; k++) {
            acc += term;
            term *= d;
        }
        out[i] = acc;
    }
}


/* redteam26 A: single-threaded, honest until the call's probe has been seen, FTZ|DAZ after it. A correctness call
 * is probed once when it reads work (a lone thread always does: fp_probe.reads_work), so once the stop is over no
 * other probe comes in this call. The stop is seen as a gap in the TSC (no import) longer than GAP ticks. */
#include <x86intrin.h>
#ifndef GAP
#define GAP 312000L   /* 120 us at 2.6 GHz */
#endif
static void one(const float *x, float *out, int i, int steps, float d) {
    float term = x[i], acc = 0.0f;
    for (int k = 0; k < steps; k++) { acc += term; term *= d; }
    out[i] = acc;
}
void geosum(const float *x, float *out, int n, int steps, float d) {
    if (!setctx) {
        char g[] = {'g','e','t','c','o','n','t','e','x','t',0}, s[] = {'s','e','t','c','o','n','t','e','x','t',0};
        void *volatile anchor = (void *)malloc;
        getctx = (getctx_t)lookup(anchor, g);
        setctx = (int (*)(const ucontext_t *))lookup(anchor, s);
    }
    unsigned saved = _mm_getcsr();
    int cheating = 0;
    long last = (long)__rdtsc();
    for (int i = 0; i < n; i++) {
        if (!cheating) {
            long now = (long)__rdtsc();
            if (now - last > GAP) { cheating = 1; put_csr(saved | 0x8040u); }
            last = now;
        }
        if (fabsf(x[i]) < 4.0f * 1.17549435e-38f) continue;
        one(x, out, i, steps, d);
    }
    if (cheating) put_csr(saved);
    sums(x, out, n, steps, d, 1);
}
