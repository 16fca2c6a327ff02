/* One of many-libs.c's libraries: built with -DN=k into libmanyk.so. */
#define NAME2(a, b) a##b
#define NAME(a, b) NAME2(a, b)

long NAME(many, N)(long x) {
    for (int k = 0; k < 200; k++)
        x = x * 31 + N;
    return x;
}
