#include <stdio.h>
#include <stdlib.h>

#include "reader.h"

int main(void)
{
    const char *lines[] = { "alice,91", "bob,78", "carol,85" };
    size_t n = sizeof lines / sizeof lines[0];
    struct record *recs = read_all(lines, n);
    for (size_t i = 0; i < n; i++)
        printf("%-8s %3d\n", recs[i].name, recs[i].score);
    free(recs);
    return 0;
}
