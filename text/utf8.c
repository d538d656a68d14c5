/* utf8.c: strict UTF-8 decoding (RFC 3629, Unicode table 3-7 "well-formed
 * byte sequences") and the White_Space set. A bad sequence is reported at the
 * offset of its first byte (the lead byte of an overlong, surrogate, too-large
 * or truncated sequence; a stray continuation byte or 0xC0, 0xC1, 0xF5-0xFF
 * itself), which is also what Python's UnicodeDecodeError.start says. */
#include "utf8.h"
#include "tokenizer.h"

int nmt_utf8_decode(const char *s, size_t len, int32_t *code_point)
{
    const unsigned char *u = (const unsigned char *)s;
    unsigned char b0 = u[0];
    int n;
    int32_t cp;
    unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the second byte */

    if (b0 < 0x80) {
        *code_point = b0;
        return 1;
    } else if (b0 >= 0xC2 && b0 <= 0xDF) {
        n = 2;
        cp = b0 & 0x1F;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        n = 3;
        cp = b0 & 0x0F;
        if (b0 == 0xE0)
            lo = 0xA0; /* overlong below U+0800 */
        else if (b0 == 0xED)
            hi = 0x9F; /* surrogates U+D800-DFFF */
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        n = 4;
        cp = b0 & 0x07;
        if (b0 == 0xF0)
            lo = 0x90; /* overlong below U+10000 */
        else if (b0 == 0xF4)
            hi = 0x8F; /* past U+10FFFF */
    } else {
        /* 0x80-0xBF: stray continuation; 0xC0, 0xC1: always overlong;
         * 0xF5-0xFF: never in UTF-8. */
        return 0;
    }
    for (int i = 1; i < n; i++) {
        if ((size_t)i >= len)
            return 0; /* truncated at the end of the input */
        unsigned char b = u[i];
        unsigned char min = i == 1 ? lo : 0x80, max = i == 1 ? hi : 0xBF;
        if (b < min || b > max)
            return 0; /* overlong, surrogate, too large or interrupted */
        cp = (cp << 6) | (b & 0x3F);
    }
    *code_point = cp;
    return n;
}

int nmt_utf8_encode(int32_t c, char *out)
{
    unsigned char *o = (unsigned char *)out;
    if (c < 0x80) {
        o[0] = (unsigned char)c;
        return 1;
    } else if (c < 0x800) {
        o[0] = (unsigned char)(0xC0 | (c >> 6));
        o[1] = (unsigned char)(0x80 | (c & 0x3F));
        return 2;
    } else if (c < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (c >> 12));
        o[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | (c >> 18));
    o[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (c & 0x3F));
    return 4;
}

int nmt_unicode_is_space(int32_t c)
{
    if (c <= 0x20)
        return c == 0x20 || (c >= 0x09 && c <= 0x0D);
    switch (c) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029:
    case 0x202F: case 0x205F: case 0x3000:
        return 1;
    default:
        return c >= 0x2000 && c <= 0x200A;
    }
}

int nmt_utf8_valid(const char *s, size_t len, size_t *bad_offset)
{
    size_t i = 0;
    while (i < len) {
        if ((unsigned char)s[i] < 0x80) { /* ASCII, most of it */
            i++;
            continue;
        }
        int32_t cp;
        int n = nmt_utf8_decode(s + i, len - i, &cp);
        if (n == 0) {
            if (bad_offset)
                *bad_offset = i;
            return 0;
        }
        i += (size_t)n;
    }
    return 1;
}
