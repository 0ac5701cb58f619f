/* the C library's sort doing the whole job, its name made by token pasting: the source filter's \bqsort\b never
 * sees the word, and the binary policy allows the import (the C library's pure helpers) */
#include <stdlib.h>
#include <string.h>
#define JOIN(a, b) a##b
static int by_value(const void *a, const void *b) { float x = *(const float *)a, y = *(const float *)b; return (x > y) - (x < y); }
void sort_copy(const float *x, float *out, int n) {
    memcpy(out, x, (size_t)n * sizeof *out);
    JOIN(qs, ort)(out, (size_t)n, sizeof *out, by_value);
}
