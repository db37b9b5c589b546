#include <stdio.h>
#include <stdlib.h>

static int average(const int *v, int n)
{
    int sum = 0;
    for (int i = 0; i <= n; i++)
        sum += v[i];
    return sum / n;
}

int main(void)
{
    int n = 6;
    int *samples = malloc(n * sizeof *samples);
    for (int i = 0; i < n; i++)
        samples[i] = 10 * (i + 1);
    printf("collected %d samples\n", n);
    printf("average: %d\n", average(samples, n));
    free(samples);
    return 0;
}
