/* A main for CS:APP 3e chapter 5's routines as ufidon/ca keeps them (labels.toml, recipe csapp-opt).
 *
 * mod2/code/op/loops.c is a fragment (no includes, no data type or operation): the book's combine.h gives them,
 * double product here (the book's latency-bound case), and the book's vec.c is linked beside. One routine runs,
 * named by argv[1], through a function pointer so that it stays a function of its own under -O1:
 *
 *     prog lower1 LENGTH REPEATS      lower-cases an upper-case string of LENGTH characters REPEATS times
 *     prog combine2|combine5 N REPEATS    combines a vector of N doubles near 1 REPEATS times
 */
#define DOUBLE
#define PROD
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "combine.h"
#include "loops.c"

typedef void (*lower_fn)(char *);

static int run_lower(lower_fn lower, long length, int repeats)
{
    char *s = malloc((size_t)length + 1);
    long lower_case = 0;
    if (!s)
        return 1;
    for (int r = 0; r < repeats; r++) {
        for (long i = 0; i < length; i++)
            s[i] = (char)('A' + i % 26);
        s[length] = '\0';
        lower(s);
        for (long i = 0; i < length; i++)
            lower_case += s[i] >= 'a' && s[i] <= 'z';
    }
    printf("%ld lower-case characters\n", lower_case);
    free(s);
    return 0;
}

static int run_combine(combiner combine, long n, int repeats)
{
    vec_ptr v = new_vec(n);
    data_t result = 0, total = 0;
    if (!v)
        return 1;
    data_t *data = get_vec_start(v);
    for (long i = 0; i < n; i++)  /* a product that stays near 1: no overflow, no denormals */
        data[i] = (i % 2) ? (data_t)1.0000001 : (data_t)0.9999999;
    for (int r = 0; r < repeats; r++) {
        combine(v, &result);
        total += result;
    }
    printf("%.9f\n", (double)total);
    free_vec(v);
    return 0;
}

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "combine2";
    long n = argc > 2 ? atol(argv[2]) : 1000000;
    int repeats = argc > 3 ? atoi(argv[3]) : 1;
    lower_fn volatile lower = lower1;
    combiner volatile c2 = combine2, c5 = combine5;

    if (!strcmp(name, "lower1"))
        return run_lower(lower, n, repeats);
    if (!strcmp(name, "combine2"))
        return run_combine(c2, n, repeats);
    if (!strcmp(name, "combine5"))
        return run_combine(c5, n, repeats);
    fprintf(stderr, "unknown routine %s (lower1, combine2, combine5)\n", name);
    return 2;
}
