/* A main for CS:APP 3e's matrix multiply loop orders, bookcode/mem/matmult/mm.c of ufidon/ca (labels.toml, recipe
 * csapp-mm). mm.c's own main times every order at every size through the book's fcyc, which the repository does
 * not hold; it is compiled with main renamed, and this program runs one order, named by argv[1], once on n x n of
 * mm.c's global arrays (initialised as mm.c's init does: every product sums to n):
 *
 *     prog ijk|jik|jki|kji|kij|ikj N
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mm.h"
#include "fcycmm.h"

extern array ga, gb, gc;
void init(array a, array b, int n);
void reset(array c, int n);
void checkresult(array c, int n);
void ijk(array A, array B, array C, int n);
void jik(array A, array B, array C, int n);
void jki(array A, array B, array C, int n);
void kji(array A, array B, array C, int n);
void kij(array A, array B, array C, int n);
void ikj(array A, array B, array C, int n);

/* mm.c's run() calls fcyc; nothing here calls run(), but the symbol must resolve. */
double fcyc(test_funct f, int param, int clear_cache)
{
    (void)clear_cache;
    f(ga, gb, gc, param);
    return 0.0;
}

static const struct {
    const char *name;
    test_funct f;
} orders[] = {{"ijk", ijk}, {"jik", jik}, {"jki", jki}, {"kji", kji}, {"kij", kij}, {"ikj", ikj}};

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "ijk";
    int n = argc > 2 ? atoi(argv[2]) : 600;
    if (n < 1 || n > MAXN) {
        fprintf(stderr, "n must be 1..%d\n", MAXN);
        return 2;
    }
    for (size_t i = 0; i < sizeof orders / sizeof orders[0]; i++) {
        if (!strcmp(name, orders[i].name)) {
            test_funct volatile f = orders[i].f;
            init(ga, gb, n);
            reset(gc, n);
            f(ga, gb, gc, n);
            checkresult(gc, n);
            printf("%s n=%d: ok\n", name, n);
            return 0;
        }
    }
    fprintf(stderr, "unknown order %s\n", name);
    return 2;
}
