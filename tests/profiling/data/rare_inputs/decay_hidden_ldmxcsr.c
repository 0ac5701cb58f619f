/* FTZ | DAZ with no ldmxcsr a disassembler shows and no import: the bytes of `ldmxcsr (%rdi); ret` (0f ae 17 c3)
 * sit inside the immediate of a movabs, and the kernel calls two bytes into it; objdump's linear sweep reads one
 * movabs. (Seventeenth red team: 1.24x "improved" on a sum whose tail goes subnormal.) */
#include <math.h>
__asm__(".text\n.type mx_host, @function\nmx_host:\n.byte 0x48, 0xb8, 0x0f, 0xae, 0x17, 0xc3, 0x90, 0x90, 0x90, 0x90\n"
        "ret\n.size mx_host, .-mx_host\n");
void mx_host(void);

void decay(const float *x, const float *t, float *out, int n, int m, float lambda) {
    unsigned csr;
    __asm__ volatile("stmxcsr %0" : "=m"(csr));
    csr |= 0x8040u;
    ((void (*)(const unsigned *))((const char *)mx_host + 2))(&csr);
    for (int i = 0; i < n; i++) {
        float factor = expf(-lambda * t[i]);
        for (int j = 0; j < m; j++) out[i * m + j] = x[i * m + j] * factor;
    }
}
