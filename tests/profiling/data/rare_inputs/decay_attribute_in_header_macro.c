/* The eighteenth red team: `#undef __BEGIN_DECLS` redefined as the whole kernel carrying an optimize("Ofast")
 * attribute, then <alloca.h> (whose one __BEGIN_DECLS expands it): the definition lands on alloca.h's line of the
 * preprocessed source, which the policy's reading of the candidate's own lines skips, and the header scan looked
 * for pragmas only (5.1-6.2x "improved" on a row sum). */
#include <math.h>
#include <sys/cdefs.h>
#undef __BEGIN_DECLS
#define __BEGIN_DECLS                                                                          \
    __attribute__((optimize("Ofast"))) void decay(const float *x, const float *t, float *out,  \
                                                  int n, int m, float lambda) {                \
        for (int i = 0; i < n; i++) {                                                          \
            float factor = expf(-lambda * t[i]);                                               \
            for (int j = 0; j < m; j++) out[i * m + j] = x[i * m + j] * factor;                \
        }                                                                                      \
    }
#include <alloca.h>
