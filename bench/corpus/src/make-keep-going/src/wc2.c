#include <stdio.h>

int main(void)
{
    long lines = 0, chars = 0;
    int c;
    while ((c = getchar()) != EOF) {
        chars++;
        if (c == '\n')
            lines++;
    }
    printf("%ld %ld\n", lines, chars);
    return 0;
}
