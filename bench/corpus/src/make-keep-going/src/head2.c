#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int limit = argc > 1 ? atoi(argv[1]) : 10;
    char buf[4096];
    size_t shown = 0;
    while (shown < limit && fgets(buf, sizeof buf, stdin)) {
        fputs(buf, stdout);
        shown++;
    }
    return 0;
}
