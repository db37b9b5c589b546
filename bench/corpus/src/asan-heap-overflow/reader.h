#ifndef READER_H
#define READER_H

#include <stddef.h>

struct record {
    char name[16];
    int score;
};

int read_record(const char *line, struct record *out);
struct record *read_all(const char **lines, size_t n);

#endif
