#include <assert.h>
#include <stdio.h>

static int check(int x, int limit)
{
    if (x > limit)
        return 0;
    assert(x > 0);
    return 1;
}

int main(void)
{
    const int readings[] = { 12, 7, 30, 0, 18 };
    int ok = 0;
    for (unsigned i = 0; i < sizeof readings / sizeof readings[0]; i++) {
        printf("checking reading %u = %d\n", i, readings[i]);
        fflush(stdout);
        ok += check(readings[i], 25);
    }
    printf("%d readings ok\n", ok);
    return 0;
}
