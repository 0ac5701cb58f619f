/* "Optimised": row-major walk with a running max per column; the max initialised with 0 (or FLT_MIN, the classic
 * slip for -FLT_MAX) instead of the first row. Wrong for any column whose values are all negative. */
#include <float.h>
void peak_per_column(const float *mat, float *result, int nrows, int ncols) {
    for (int j = 0; j < ncols; j++) result[j] = FLT_MIN;
    for (int i = 0; i < nrows; i++) {
        const float *row = mat + (long)i * ncols;
        for (int j = 0; j < ncols; j++) result[j] = row[j] > result[j] ? row[j] : result[j];
    }
}
