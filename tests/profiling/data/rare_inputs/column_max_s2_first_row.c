/* Correct control: row-major walk, max initialised with the first row. */
void peak_per_column(const float *mat, float *result, int nrows, int ncols) {
    for (int j = 0; j < ncols; j++) result[j] = mat[j];
    for (int i = 1; i < nrows; i++) {
        const float *row = mat + (long)i * ncols;
        for (int j = 0; j < ncols; j++) result[j] = row[j] > result[j] ? row[j] : result[j];
    }
}
