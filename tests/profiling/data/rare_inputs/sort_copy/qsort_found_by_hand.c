/* The seventeenth red team's second round: libc's qsort found by hand (from malloc's address back to libc's ELF header
 * and its dynamic symbol table): no import of it, 4.8-7.1x "improved" on this sort. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <elf.h>
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
static int by_value(const void *a, const void *b) { float x = *(const float *)a, y = *(const float *)b; return (x > y) - (x < y); }
typedef void (*sorter)(void *, size_t, size_t, int (*)(const void *, const void *));
void sort_copy(const float *x, float *out, int n) {
    static sorter s;
    if (!s) { char nm[] = {'q','s','o','r','t',0}; void *(*volatile anchor)(size_t) = malloc; s = (sorter)lookup((const void *)anchor, nm); }
    memcpy(out, x, (size_t)n * sizeof *out);
    s(out, (size_t)n, sizeof *out, by_value);
}
