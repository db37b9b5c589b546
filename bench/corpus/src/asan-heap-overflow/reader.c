#include <stdlib.h>
#include <string.h>

#include "reader.h"

int read_record(const char *line, struct record *out)
{
    const char *comma = strchr(line, ',');
    size_t len = comma ? (size_t)(comma - line) : strlen(line);
    char *name = malloc(len);
    memcpy(name, line, len);
    name[len] = '\0';
    strncpy(out->name, name, sizeof out->name - 1);
    out->name[sizeof out->name - 1] = '\0';
    out->score = comma ? atoi(comma + 1) : 0;
    free(name);
    return 0;
}

struct record *read_all(const char **lines, size_t n)
{
    struct record *recs = calloc(n, sizeof *recs);
    for (size_t i = 0; i < n; i++)
        read_record(lines[i], &recs[i]);
    return recs;
}
