#include <stdio.h>

int main(int argc, char **argv)
{
    FILE *out = argc > 1 ? fopen(argv[1], "w") : NULL;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, stdin)) > 0) {
        fwrite(buf, 1, n, stdout);
        if (out)
            fwrite(buf, 1, n, out);
    }
    if (out)
        fclose(out);
    return 0;
}
