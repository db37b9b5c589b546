"""Generate the 400 codec modules of the build (run before make)."""
import os

N = 400
os.makedirs("src", exist_ok=True)

KINDS = ["crc", "xor", "rot", "sum", "mix"]

BODY_OK = """\
#include "codec.h"

static const unsigned char table_{i:03d}[8] = {{ {t} }};

int codec_{i:03d}_encode(unsigned char *buf, int len, int flags)
{{
    int i, scratch;
    for (i = 0; i < len; i++)
        buf[i] = (unsigned char)(buf[i] ^ table_{i:03d}[i % 8]);
    return len;
}}

int codec_{i:03d}_decode(unsigned char *buf, unsigned int len, int strict)
{{
    int i;
    for (i = 0; i < len; i++)
        buf[i] = (unsigned char)(buf[i] ^ table_{i:03d}[i % 8]);
    return (int)len;
}}

const struct codec codec_{i:03d} = {{ "{kind}{i:03d}", codec_{i:03d}_encode, codec_{i:03d}_decode }};
"""

BODY_CLEAN = """\
#include "codec.h"

static int step_{i:03d}(int x)
{{
    return (x * {m} + {a}) & 0xff;
}}

int codec_{i:03d}_encode(unsigned char *buf, int len, int flags)
{{
    (void)flags;
    for (int i = 0; i < len; i++)
        buf[i] = (unsigned char)step_{i:03d}(buf[i]);
    return len;
}}

int codec_{i:03d}_decode(unsigned char *buf, unsigned int len, int strict)
{{
    (void)buf;
    (void)strict;
    return (int)len;
}}

const struct codec codec_{i:03d} = {{ "{kind}{i:03d}", codec_{i:03d}_encode, codec_{i:03d}_decode }};
"""

# the last module was edited by hand and is broken
BODY_BROKEN = """\
#include "codec.h"

struct window_{i:03d} {{
    int size;
    unsigned char data[64];
}};

int codec_{i:03d}_encode(unsigned char *buf, int len, int flags)
{{
    struct window_{i:03d} w = {{ .size = 64 }};
    for (int i = 0; i < len; i++)
        buf[i] ^= w.data[i % w.size];
    return w.length;
}}

int codec_{i:03d}_decode(unsigned char *buf, unsigned int len, int strict)
{{
    return codec_{i:03d}_encode(buf, len, strict, 0);
}}

const struct codec codec_{i:03d} = {{ "{kind}{i:03d}", codec_{i:03d}_encode, codec_{i:03d}_decode }};
"""

for i in range(1, N + 1):
    kind = KINDS[i % len(KINDS)]
    if i == N:
        body = BODY_BROKEN.format(i=i, kind=kind)
    elif i % 7 == 0:
        body = BODY_CLEAN.format(i=i, kind=kind, m=(i * 13) % 251 or 3, a=i % 97)
    else:
        t = ", ".join(str((i * 31 + k * 17) % 256) for k in range(8))
        body = BODY_OK.format(i=i, kind=kind, t=t)
    with open(f"src/codec_{i:03d}.c", "w") as f:
        f.write(body)
