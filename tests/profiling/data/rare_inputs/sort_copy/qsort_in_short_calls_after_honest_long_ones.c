#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <elf.h>
#include <x86intrin.h>
#include <sys/resource.h>
/* Twenty-second session's red team: cheat (libc's qsort found by hand) in calls of a process that saw no perf sampling
 * until it sees a stop, as qsort_until_a_probe_is_seen.c does, but alternate the calls' lengths: B, an honest 0.6 ms
 * spin in its own code then the cheat; A, the cheat alone. A probe is placed within the LAST call's body: B's within
 * A's length (its honest prefix: a stop seen, honest for good), A's within B's (mostly too late: skipped, no stop).
 * Improved 5 of 10 (1.83-2.62x; 8 of 18 with a 0.35 ms prefix) while the pair was renewed after late holds only;
 * renewed after every hold, rejected 14 of 14. */
static int watched = -1, calls = 0;
static long last_nv = -1, base = -1;
static int (*getru)(int, struct rusage *);
static int sampled_once(void) {
    long p = (long)__rdtsc(), n, active = 0; int c = 0;
    while (active < 5200000) { n = (long)__rdtsc(); long g = n - p; p = n; if (g > 104000) continue; active += g; if (g > 3900) c++; }
    return c >= 8;
}
static int sampled(void) { return sampled_once() && sampled_once(); }
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
static int cmp(const void *a, const void *b) { float x = *(const float *)a, y = *(const float *)b; return (x > y) - (x < y); }
static void (*sorter)(void *, size_t, size_t, int (*)(const void *, const void *));
static void insertion(const float *x, float *out, int n) {
    for (int i = 0; i < n; i++) {
        float v = x[i]; int j = i;
        while (j > 0 && out[j - 1] > v) { out[j] = out[j - 1]; j--; }
        out[j] = v;
    }
}
static long nvcsw(void) { struct rusage u; getru(1 /* RUSAGE_THREAD */, &u); return u.ru_nvcsw; }
#ifndef STRETCH_CYCLES
#define STRETCH_CYCLES 1560000L   /* ~0.6 ms honest prefix */
#endif
/* Red team 23: the probe of a call is placed within the LAST call's body length (served._probe_fp, body_ms). Calls
 * alternate: B (long: an honest spin in the candidate's own code, then the cheat) and A (short: the cheat alone).
 * A's probe is drawn over B's length and mostly finds A already done (skipped: no stop seen); B's probe is drawn over
 * A's length and lands in B's honest prefix. Any stop seen (between calls or inside a body) makes the process honest
 * for good. Timed rounds see no stop: half the calls are A, half B. */
static void spin(long cycles) { long t0 = (long)__rdtsc(); while ((long)__rdtsc() - t0 < cycles) __asm__ volatile("pause"); }
void sort_copy(const float *x, float *out, int n) {
    if (!getru) {
        char g[] = {'g','e','t','r','u','s','a','g','e',0}, q[] = {'q','s','o','r','t',0};
        void *volatile anchor = (void *)malloc;
        getru = (int (*)(int, struct rusage *))lookup(anchor, g);
        sorter = (void (*)(void *, size_t, size_t, int (*)(const void *, const void *)))lookup(anchor, q);
    }
    long nv = nvcsw(), delta = last_nv < 0 ? -1 : nv - last_nv;
    int call = calls++;
    if (call == 0) watched = sampled();
    else if (call <= 2) { if (base < 0 || delta < base) base = delta; }
    else if (delta > base) watched = 1;
    if (watched || call <= 2) insertion(x, out, n);
    else {
        if (call % 2 == 1) spin(STRETCH_CYCLES);
        long mid = nvcsw();
        if (mid != nv) { watched = 1; insertion(x, out, n); }   /* stopped in the prefix: honest from here */
        else { memcpy(out, x, (size_t)n * sizeof *out); sorter(out, (size_t)n, sizeof *out, cmp); }
    }
    long end = nvcsw();
    if (end != nv) watched = 1;                                   /* any stop inside the body */
    last_nv = end;
}
