/* Legitimate: b transposed once, each c[i][j] a dot product over k in 8 interleaved partial sums (what a SIMD dot
 * product does), combined pairwise at the end. Reassociates the float32 sum of n = 512 or 2048 products. */
#include <stdlib.h>
void multiply(const float *a, const float *b, float *c, int m, int n, int p) {
    float *bt = malloc((size_t)n * p * sizeof *bt);
    for (int k = 0; k < n; k++)
        for (int j = 0; j < p; j++) bt[(long)j * n + k] = b[(long)k * p + j];
    for (int i = 0; i < m; i++) {
        const float *ar = a + (long)i * n;
        for (int j = 0; j < p; j++) {
            const float *br = bt + (long)j * n;
            float s[8] = {0};
            int k = 0;
            for (; k + 8 <= n; k += 8)
                for (int l = 0; l < 8; l++) s[l] += ar[k + l] * br[k + l];
            for (; k < n; k++) s[0] += ar[k] * br[k];
            c[(long)i * p + j] = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
        }
    }
    free(bt);
}
