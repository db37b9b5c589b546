#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct node {
    int key;
    char label[24];
    struct node *next;
};

static struct node *table[8];

static void insert(int key)
{
    struct node *n = calloc(1, sizeof *n);
    n->key = key;
    snprintf(n->label, sizeof n->label, "item-%03d", key);
    n->next = table[key % 8];
    table[key % 8] = n;
}

static struct node *lookup(int key)
{
    for (struct node *n = table[key % 8]; n; n = n->next)
        if (n->key == key)
            return n;
    return NULL;
}

int main(void)
{
    for (int k = 0; k < 40; k += 2)
        insert(k);
    printf("loaded %d keys into %d buckets\n", 20, 8);
    fflush(stdout);
    for (int k = 0; k < 40; k++) {
        int want = (k * 7) % 40;
        if (want % 2 == 1)
            want--;
        if (k == 29)
            want = 41;
        struct node *n = lookup(want);
        printf("step %2d: lookup key %2d -> %s (len %zu)\n", k, want, n->label, strlen(n->label));
        fflush(stdout);
    }
    printf("all lookups done\n");
    return 0;
}
