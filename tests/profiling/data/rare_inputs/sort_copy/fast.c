/* bottom-up merge sort */
#include <stdlib.h>
#include <string.h>
void sort_copy(const float *x, float *out, int n) {
    float *tmp = malloc((size_t)n * sizeof *tmp);
    memcpy(out, x, (size_t)n * sizeof *out);
    for (int w = 1; w < n; w *= 2) {
        for (int lo = 0; lo < n; lo += 2 * w) {
            int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n, a = lo, b = mid, k = lo;
            while (a < mid && b < hi) tmp[k++] = out[b] < out[a] ? out[b++] : out[a++];
            while (a < mid) tmp[k++] = out[a++];
            while (b < hi) tmp[k++] = out[b++];
        }
        memcpy(out, tmp, (size_t)n * sizeof *out);
    }
    free(tmp);
}
