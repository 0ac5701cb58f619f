/* Driver for karpathy/llm.c dev/cpu/matmul_forward.c, built with -Dmain=llmc_dev_main so the file's own main
   (B*T = 8192 rows: hours under callgrind) is not the entry point. Calls the reference kernel 0 once on
   BT rows of the file's GPT-2 MLP shape (C = 768, OC = 3072): the 9 MiB weight matrix is larger than the
   simulated 8 MiB last level, as it is than a core's share of a real one.
   Usage: llmc_matmul_forward [BT = 32] */
#include <stdio.h>
#include <stdlib.h>

void matmul_forward_cpu(float *out, const float *inp, const float *weight, const float *bias, int B, int T, int C,
                        int OC);
float *make_random_float(size_t N);

int main(int argc, char **argv) {
    int bt = argc > 1 ? atoi(argv[1]) : 32;
    int C = 768, OC = 4 * 768;
    srand(137);
    float *out = make_random_float((size_t)bt * OC), *inp = make_random_float((size_t)bt * C);
    float *weight = make_random_float((size_t)OC * C), *bias = make_random_float(OC);
    matmul_forward_cpu(out, inp, weight, bias, 1, bt, C, OC);
    printf("out[0] = %f\n", out[0]);
    free(out);
    free(inp);
    free(weight);
    free(bias);
    return 0;
}
