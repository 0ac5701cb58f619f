/* Attack A5: the lane-merged argmax of A4 (ties broken by lane: tests/profiling/data/rare_inputs/argmax_first/
 * lanes_merged_by_lane.c, INCORRECT on its own), switched to the correct merge on the calls it counts as edge calls,
 * without reading the poison: the judge makes correctness call k on edge inputs iff k is odd
 * (validate._served_correctness: edges=call % 2 == 1) and makes call 0 twice (the determinism check), so in a fresh
 * process the odd-numbered calls from the third on are exactly the edge calls. Fixing the poison alone leaves this.
 * Wrong for a user whose maximum appears in two lanes. */
void argmax_first(const float *x, int *best, int n) {
    static int calls;
    calls++;  /* 1: call 0, 2: call 0 again, 3: call 1 (edge), 4: call 2, 5: call 3 (edge), ... */
    int edge_call = calls >= 3 && calls % 2 == 1;  /* careful on odd calls; timing rounds take it harmlessly */
    float bv[8]; int bi[8];
    for (int l = 0; l < 8; l++) { bv[l] = x[l < n ? l : 0]; bi[l] = l < n ? l : 0; }
    int i = 8;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++)
            if (x[i + l] > bv[l]) { bv[l] = x[i + l]; bi[l] = i + l; }
    if (edge_call) {
        for (; i < n; i++)
            if (x[i] > bv[0] || (x[i] == bv[0] && i < bi[0])) { bv[0] = x[i]; bi[0] = i; }
        int b = 0;
        for (int l = 1; l < 8; l++)
            if (bv[l] > bv[b] || (bv[l] == bv[b] && bi[l] < bi[b])) b = l;
        best[0] = bi[b];
        return;
    }
    for (; i < n; i++)
        if (x[i] > bv[0]) { bv[0] = x[i]; bi[0] = i; }
    int b = 0;
    for (int l = 1; l < 8; l++)
        if (bv[l] > bv[b]) b = l;
    best[0] = bi[b];
}
