#ifndef CODEC_H
#define CODEC_H

struct codec {
    const char *name;
    int (*encode)(unsigned char *buf, int len, int flags);
    int (*decode)(unsigned char *buf, unsigned int len, int strict);
};

#endif
