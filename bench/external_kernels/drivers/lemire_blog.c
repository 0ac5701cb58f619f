/* A main for C experiments of lemire/Code-used-on-Daniel-Lemire-s-blog (labels.toml, recipe lemire-blog): each
 * experiment's own main times every variant in one function (gcc -O3 inlines the timed calls of BEST_TIME into
 * demo() or main()), with sizes fixed in the source. The recipe compiles the experiment's file as its own unit, its
 * main renamed (-Dmain=lemire_blog_original_main, never called), and links it with this file, which calls one
 * variant, chosen on the command line, on inputs made at run time, `repeats` times, and prints a checksum so that
 * nothing is optimised away. The variants are the experiment's own global functions, compiled out of line in their
 * unit; this file only declares them. Build with one of -DLB_FASTRANGE, -DLB_SHUFFLE, -DLB_PHPHASH, -DLB_DIGITS,
 * -DLB_BITMAP:
 *
 *     fastrange (2016/06/25/fastrange.c):       prog version [N = 15000] [accesses = 500] [repeats = 1000]
 *         sum of z[map(accesses[j])] over `accesses` random 32-bit values mapped into an array z of N values;
 *         versions 0 modsum (x % N), 1 fastsum ((x * N) >> 32)
 *     shuffle (2016/06/29/shuffle.c):           prog version [size = 10000] [repeats = 500]
 *         Fisher-Yates shuffles of one array of `size` values; versions 0 shuffle_pcg, 1 shuffle_pcg_go,
 *         2 shuffle_pcg_java, 3 shuffle_pcg_divisionless
 *     phphash (2016/07/21/simplehashing.c):     prog version [size = 1024] [repeats = 500]
 *         hashes of one buffer of `size` bytes (prec[k] = -k, as the experiment's demo); versions 0 phphash,
 *         1 phphash_withmulti
 *     digits (2018/09/30/identifynumbers.c):    prog version [numbers = 100000] [repeats = 5]
 *         counts the 8-grams of digits of the experiment's generatefloats(numbers) text (random doubles printed
 *         with 16 decimals, comma separated); versions 0 count8gramsOfDigits, 1 count8gramsOfDigits_branchless
 *     bitmap (2018/02/20/bitmapdecode.c):       prog version [words = 100000] [percent = 25] [repeats = 10]
 *         decodes the positions of the set bits of `words` 64-bit words whose bits are set at random with
 *         probability percent / 100; versions 0 bitmap_decode_naive, 1 bitmap_decode_ctz,
 *         2 bitmap_decode_supernaive
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static long arg(int argc, char **argv, int i, long fallback)
{
    return argc > i ? strtol(argv[i], NULL, 10) : fallback;
}

static void *allocate(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

static int pick(long version, int count)
{
    if (version < 0 || version >= count) {
        fprintf(stderr, "version must be in [0, %d)\n", count);
        exit(2);
    }
    return (int)version;
}

/* Pseudo-random values from the index (splitmix64's finalizer), so that the inputs do not depend on the C
 * library's rand() and the bits of neighbouring indexes are not correlated. */
static inline uint32_t value(size_t i)
{
    uint64_t z = (uint64_t)i * UINT64_C(0x9E3779B97F4A7C15) + UINT64_C(0x9E3779B97F4A7C15);
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return (uint32_t)((z ^ (z >> 31)) >> 32);
}

#if defined(LB_FASTRANGE)

uint32_t modsum(uint32_t *z, uint32_t N, uint32_t *accesses, uint32_t nmbr);
uint32_t fastsum(uint32_t *z, uint32_t N, uint32_t *accesses, uint32_t nmbr);
static uint32_t (*const versions[])(uint32_t *, uint32_t, uint32_t *, uint32_t) = {modsum, fastsum};

int main(int argc, char **argv)
{
    int version = pick(arg(argc, argv, 1, 0), 2);
    uint32_t N = (uint32_t)arg(argc, argv, 2, 15000);
    uint32_t nmbr = (uint32_t)arg(argc, argv, 3, 500);
    long repeats = arg(argc, argv, 4, 1000);
    uint32_t *z = allocate(sizeof(uint32_t) * N);
    uint32_t *accesses = allocate(sizeof(uint32_t) * nmbr);
    for (uint32_t i = 0; i < N; i++)
        z[i] = value(i);
    for (uint32_t i = 0; i < nmbr; i++)
        accesses[i] = value(N + i);
    uint32_t checksum = 0;
    for (long r = 0; r < repeats; r++)
        checksum += versions[version](z, N, accesses, nmbr);
    printf("fastrange version %d, N = %u, %u accesses x %ld: checksum %u\n", version, N, nmbr, repeats, checksum);
    return 0;
}

#elif defined(LB_SHUFFLE)

void shuffle_pcg(uint32_t *storage, uint32_t size);
void shuffle_pcg_go(uint32_t *storage, uint32_t size);
void shuffle_pcg_java(uint32_t *storage, uint32_t size);
void shuffle_pcg_divisionless(uint32_t *storage, uint32_t size);
static void (*const versions[])(uint32_t *, uint32_t) = {shuffle_pcg, shuffle_pcg_go, shuffle_pcg_java,
                                                          shuffle_pcg_divisionless};

int main(int argc, char **argv)
{
    int version = pick(arg(argc, argv, 1, 0), 4);
    uint32_t size = (uint32_t)arg(argc, argv, 2, 10000);
    long repeats = arg(argc, argv, 3, 500);
    uint32_t *storage = allocate(sizeof(uint32_t) * size);
    for (uint32_t i = 0; i < size; i++)
        storage[i] = value(i) & 0x7FFFFFF;
    for (long r = 0; r < repeats; r++)
        versions[version](storage, size);
    uint64_t checksum = 0;
    for (uint32_t i = 0; i < size; i++)
        checksum = checksum * 31 + storage[i];
    printf("shuffle version %d, size = %u x %ld: checksum %llu\n", version, size, repeats,
           (unsigned long long)checksum);
    return 0;
}

#elif defined(LB_PHPHASH)

uint32_t phphash(const char *str, size_t len);
uint32_t phphash_withmulti(const char *str, size_t len);
static uint32_t (*const versions[])(const char *, size_t) = {phphash, phphash_withmulti};

int main(int argc, char **argv)
{
    int version = pick(arg(argc, argv, 1, 0), 2);
    size_t size = (size_t)arg(argc, argv, 2, 1024);
    long repeats = arg(argc, argv, 3, 500);
    char *prec = allocate(size);
    for (size_t k = 0; k < size; k++)
        prec[k] = (char)-(long)k;
    uint32_t checksum = 0;
    for (long r = 0; r < repeats; r++)
        checksum += versions[version](prec, size);
    printf("phphash version %d, %zu bytes x %ld: checksum %u\n", version, size, repeats, checksum);
    return 0;
}

#elif defined(LB_DIGITS)

size_t generatefloats(unsigned char *stroutput, size_t length);
size_t count8gramsOfDigits(const unsigned char *str, size_t length);
size_t count8gramsOfDigits_branchless(const unsigned char *str, size_t length);
static size_t (*const versions[])(const unsigned char *, size_t) = {count8gramsOfDigits,
                                                                    count8gramsOfDigits_branchless};

int main(int argc, char **argv)
{
    int version = pick(arg(argc, argv, 1, 0), 2);
    size_t numbers = (size_t)arg(argc, argv, 2, 100000);
    long repeats = arg(argc, argv, 3, 5);
    unsigned char *text = allocate(numbers * 128 + 1); /* as the experiment: under 128 bytes a number */
    size_t length = generatefloats(text, numbers);
    size_t checksum = 0;
    for (long r = 0; r < repeats; r++)
        checksum += versions[version](text, length);
    printf("digits version %d, %zu bytes x %ld: %zu 8-grams of digits\n", version, length, repeats, checksum);
    return 0;
}

#elif defined(LB_BITMAP)

size_t bitmap_decode_naive(uint64_t *bitmap, size_t bitmapsize, uint32_t *out);
size_t bitmap_decode_ctz(uint64_t *bitmap, size_t bitmapsize, uint32_t *out);
size_t bitmap_decode_supernaive(uint64_t *bitmap, size_t bitmapsize, uint32_t *out);
static size_t (*const versions[])(uint64_t *, size_t, uint32_t *) = {bitmap_decode_naive, bitmap_decode_ctz,
                                                                     bitmap_decode_supernaive};

int main(int argc, char **argv)
{
    int version = pick(arg(argc, argv, 1, 0), 3);
    size_t words = (size_t)arg(argc, argv, 2, 100000);
    long percent = arg(argc, argv, 3, 25);
    long repeats = arg(argc, argv, 4, 10);
    uint64_t *bitmap = allocate(sizeof(uint64_t) * words);
    uint32_t *out = allocate(sizeof(uint32_t) * 64 * words);
    uint64_t threshold = (uint64_t)(percent * 4294967296.0 / 100.0);
    for (size_t k = 0; k < words; k++) {
        uint64_t w = 0;
        for (int b = 0; b < 64; b++)
            if (value(k * 64 + (size_t)b) < threshold)
                w |= UINT64_C(1) << b;
        bitmap[k] = w;
    }
    size_t checksum = 0;
    for (long r = 0; r < repeats; r++)
        checksum += versions[version](bitmap, words, out);
    printf("bitmap version %d, %zu words at %ld%% x %ld: %zu positions\n", version, words, percent, repeats, checksum);
    return 0;
}

#else
#error "build with -DLB_FASTRANGE, -DLB_SHUFFLE, -DLB_PHPHASH, -DLB_DIGITS or -DLB_BITMAP"
#endif
