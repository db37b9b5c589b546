#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct field_spec {
    int index;
    char delim;
};

static struct field_spec parse_spec(const char *arg)
{
    struct field_spec spec = { .index = atoi(arg), .delim = '\t' };
    return spec;
}

int main(int argc, char **argv)
{
    struct field_spec spec = parse_spec(argc > 1 ? argv[1] : "1");
    char line[4096];
    while (fgets(line, sizeof line, stdin)) {
        char *tok = strtok(line, &spec.delim);
        for (int i = 1; tok && i < spec.index; i++)
            tok = strtok(NULL, &spec.delim);
        if (tok)
            printf("%s\n", tok);
        spec.count++;
    }
    return parse_spec;
}
