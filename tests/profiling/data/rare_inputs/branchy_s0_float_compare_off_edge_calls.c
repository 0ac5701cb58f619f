/* Attack A2: the poison byte tells the call's kind. The judge poisons outputs with 0xA5 only on calls whose inputs
 * carry edge values (marks, their neighbours, subnormals, ties); plain correctness calls and every timed call get
 * 0xFF. On 0xA5 calls this computes exactly (double comparison); on the others it compares in float32 (the session-15
 * attack tests/profiling/data/rare_inputs/branchy_s0_float_compare.c, INCORRECT on its own), which is wrong for any
 * sample within half a float32 ulp above the threshold (e.g. -0.19999999 with threshold -0.2). */
void where_split(const double *samples, int *passed, int *failed, int *counts, int n, double threshold) {
    unsigned int word;
    __builtin_memcpy(&word, counts, 4);
    int edge_call = word == 0xA5A5A5A5u;  /* the judge's edge-call poison, read before any write */
    int n0 = 0, n1 = 0;
    if (edge_call) {
        for (int i = 0; i < n; i++) {
            if (samples[i] <= threshold) passed[n0++] = i;
            else failed[n1++] = i;
        }
    } else {
        const float t = (float)threshold;
        for (int i = 0; i < n; i++) {
            if ((float)samples[i] <= t) passed[n0++] = i;
            else failed[n1++] = i;
        }
    }
    counts[0] = n0;
    counts[1] = n1;
    for (int i = n0; i < n; i++) passed[i] = -1;
    for (int i = n1; i < n; i++) failed[i] = -1;
}
