#include <stdio.h>
#include <string.h>

int main(void)
{
    char prev[4096] = "", cur[4096];
    int first = 1;
    while (fgets(cur, sizeof cur, stdin)) {
        if (first || strcmp(prev, cur) != 0)
            fputs(cur, stdout);
        strcpy(prev, cur);
        first = 0;
    }
    return 0;
}
