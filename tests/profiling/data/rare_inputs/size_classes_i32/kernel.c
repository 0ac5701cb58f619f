/* Which of 8 size classes each 30-bit key falls in: class k = keys >= 3 * 2^(20+k) */
#define CLASS_BASE (3 << 21)
static const int BOUNDS[7] = {CLASS_BASE, CLASS_BASE * 2, CLASS_BASE * 4, CLASS_BASE * 8, CLASS_BASE * 16,
                              CLASS_BASE * 32, CLASS_BASE * 64};

void classify(const int *x, int *out, int n) {
    for (int i = 0; i < n; i++) {
        int c = 0;
        for (int k = 0; k < 7; k++)
            if (x[i] >= BOUNDS[k]) c = k + 1;
        out[i] = c;
    }
}
