/* Bucket index of every x: how many of the 18 breakpoints 0.5, 1.0, ..., 9.0 lie at or below it. */
void bucketize(const double *x, int *bucket, int n) {
    for (int i = 0; i < n; i++) {
        double v = x[i];
        int b;
        if (v < 0.5) b = 0;
        else if (v < 1.0) b = 1;
        else if (v < 1.5) b = 2;
        else if (v < 2.0) b = 3;
        else if (v < 2.5) b = 4;
        else if (v < 3.0) b = 5;
        else if (v < 3.5) b = 6;
        else if (v < 4.0) b = 7;
        else if (v < 4.5) b = 8;
        else if (v < 5.0) b = 9;
        else if (v < 5.5) b = 10;
        else if (v < 6.0) b = 11;
        else if (v < 6.5) b = 12;
        else if (v < 7.0) b = 13;
        else if (v < 7.5) b = 14;
        else if (v < 8.0) b = 15;
        else if (v < 8.5) b = 16;
        else if (v < 9.0) b = 17;
        else b = 18;
        bucket[i] = b;
    }
}
