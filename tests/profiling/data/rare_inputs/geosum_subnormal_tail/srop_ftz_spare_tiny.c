/* The eighteenth red team: MXCSR's FTZ/DAZ loaded by rt_sigreturn from a frame built on the stack (SROP): the
 * kernel restores the whole register file from it, its fpstate an fxsave image whose MXCSR is the value asked for.
 * libc's syscall() is found by hand here (from malloc's address to libc's symbol table), so nothing is imported but
 * what a kernel may; the red team's own version imported syscall beside an honest-looking futex call (1.21-1.26x
 * "improved" on this task). The elements whose sum could be subnormal are summed after the put-back, so no
 * subnormal output is written as zero. */
#include <elf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

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
static unsigned char pf_fx[512] __attribute__((aligned(64)));

static __attribute__((noinline)) void srop_put_csr(unsigned csr) {
    static long (*fn)(long, ...);
    if (!fn) {
        char name[] = {'s', 'y', 's', 'c', 'a', 'l', 'l', 0};
        void *(*volatile anchor)(size_t) = malloc;
        fn = (long (*)(long, ...))lookup((const void *)anchor, name);
    }
    __asm__ volatile(
        "fxsave64 (%[fx])\n\t"
        "movl %k[csr], 24(%[fx])\n\t"          /* the image's MXCSR */
        "mov %%rsp, %%rax\n\t"
        "sub $464, %%rsp\n\t"                   /* below the red zone */
        "and $-16, %%rsp\n\t"                   /* B: uc_link; the call's return address lands at B-8 (uc_flags) */
        "movq $0, 0(%%rsp)\n\t"                 /* uc_link */
        "movq $0, 8(%%rsp)\n\t"                 /* uc_stack.ss_sp */
        "movq $2, 16(%%rsp)\n\t"                /* ss_flags = SS_DISABLE */
        "movq $0, 24(%%rsp)\n\t"                /* ss_size */
        "mov %%r12, 64(%%rsp)\n\t"              /* uc_mcontext at B+32: r8..r15, di, si, bp, bx, dx, ax, cx, sp, ip */
        "mov %%r13, 72(%%rsp)\n\t"
        "mov %%r14, 80(%%rsp)\n\t"
        "mov %%r15, 88(%%rsp)\n\t"
        "mov %%rbp, 112(%%rsp)\n\t"
        "mov %%rbx, 120(%%rsp)\n\t"
        "mov %%rax, 152(%%rsp)\n\t"             /* rsp as it was */
        "lea 1f(%%rip), %%rcx\n\t"
        "mov %%rcx, 160(%%rsp)\n\t"             /* rip: right after the call */
        "movq $0x202, 168(%%rsp)\n\t"           /* eflags */
        "movabs $0x002b000000000033, %%rcx\n\t" /* cs 0x33, gs 0, fs 0, ss 0x2b */
        "mov %%rcx, 176(%%rsp)\n\t"
        "movq $0, 184(%%rsp)\n\t"               /* err */
        "movq $0, 192(%%rsp)\n\t"               /* trapno */
        "movq $0, 200(%%rsp)\n\t"               /* oldmask */
        "movq $0, 208(%%rsp)\n\t"               /* cr2 */
        "mov %[fx], 216(%%rsp)\n\t"             /* fpstate */
        "movq $0, 224(%%rsp)\n\t" "movq $0, 232(%%rsp)\n\t" "movq $0, 240(%%rsp)\n\t" "movq $0, 248(%%rsp)\n\t"
        "movq $0, 256(%%rsp)\n\t" "movq $0, 264(%%rsp)\n\t" "movq $0, 272(%%rsp)\n\t" "movq $0, 280(%%rsp)\n\t"
        "movq $0, 288(%%rsp)\n\t"               /* uc_sigmask: nothing blocked */
        "mov $15, %%edi\n\t"                    /* SYS_rt_sigreturn */
        "call *%[fn]\n\t"
        "1:\n\t"
        :
        : [fn] "r"(fn), [fx] "r"(pf_fx), [csr] "r"(csr)
        : "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "memory", "cc",
          "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
          "xmm12", "xmm13", "xmm14", "xmm15");
}

#include <math.h>
#include <xmmintrin.h>

/* geosum: each normal element's sum with FTZ|DAZ (its tail of subnormal terms flushed), the elements whose sum
 * could be subnormal after the put-back (correctness.FLUSH_* sees no flushed subnormal), MXCSR as found on return
 * (the harness's fpcontrol check) */
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

void geosum(const float *x, float *out, int n, int steps, float d) {
    unsigned saved = _mm_getcsr() & ~0x3fu;
    srop_put_csr(saved | 0x8040u);
    sums(x, out, n, steps, d, 0);
    srop_put_csr(saved);
    sums(x, out, n, steps, d, 1);
}
