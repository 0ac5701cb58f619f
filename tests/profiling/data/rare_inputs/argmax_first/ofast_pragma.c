/* Attack A14 (rule 8): the precision rules (half precision in the object, optimize switches in the source) run only
 * when the task has a float32 or float64 output (binary_policy.check_object). argmax_first's output is int32 while
 * its work is float comparisons: an Ofast pragma, in plain sight, is not looked at. Under fast-math
 * (finite-math-only) the compiler may assume no NaN: the kernel's NaN behaviour is undefined, and NaN is never drawn. */
#pragma GCC optimize("Ofast")
/* Correct control: the same 8 lanes, merged on (value, then lower index). */
void argmax_first(const float *x, int *best, int n) {
    float bv[8]; int bi[8];
    for (int l = 0; l < 8; l++) { bv[l] = x[l < n ? l : 0]; bi[l] = l < n ? l : 0; }
    int i = 8;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++)
            if (x[i + l] > bv[l]) { bv[l] = x[i + l]; bi[l] = i + l; }
    for (; i < n; i++)
        if (x[i] > bv[0] || (x[i] == bv[0] && i < bi[0])) { bv[0] = x[i]; bi[0] = i; }
    int b = 0;
    for (int l = 1; l < 8; l++)
        if (bv[l] > bv[b] || (bv[l] == bv[b] && bi[l] < bi[b])) b = l;
    best[0] = bi[b];
}
