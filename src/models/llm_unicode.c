/* UTF-8 and the character classes of llm_unicode.h. */
#include "llm_unicode.h"

static bool in_ranges(const llm_cp_range *r, int n, uint32_t cp)
{
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (cp < r[mid].lo) hi = mid - 1;
        else if (cp > r[mid].hi) lo = mid + 1;
        else return true;
    }
    return false;
}

bool llm_is_letter(uint32_t cp)
{
    if (cp < 128) return (cp | 32) >= 'a' && (cp | 32) <= 'z';
    return in_ranges(llm_letter_ranges, llm_letter_ranges_count, cp);
}

bool llm_is_number(uint32_t cp)
{
    if (cp < 128) return cp >= '0' && cp <= '9';
    return in_ranges(llm_number_ranges, llm_number_ranges_count, cp);
}

bool llm_is_space(uint32_t cp)
{
    if (cp < 128) return cp == ' ' || (cp >= 9 && cp <= 13);
    return in_ranges(llm_space_ranges, llm_space_ranges_count, cp);
}

static int ccc_of(uint32_t cp)
{
    int lo = 0, hi = llm_ccc_ranges_count - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (cp < llm_ccc_ranges[mid].lo) hi = mid - 1;
        else if (cp > llm_ccc_ranges[mid].hi) lo = mid + 1;
        else return llm_ccc_ranges[mid].value;
    }
    return 0;
}

bool llm_nfc_quick_check(const unsigned char *text, size_t n, size_t *bad_offset)
{
    int last_ccc = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int l = llm_utf8_decode(text + i, n - i, &cp);
        if (!l) return *bad_offset = i, false;
        const int ccc = cp < 0x300 ? 0 : ccc_of(cp);
        if ((cp >= 0x300 && in_ranges(llm_nfc_unsafe_ranges, llm_nfc_unsafe_ranges_count, cp)) ||
            (ccc != 0 && last_ccc > ccc))
            return *bad_offset = i, false;
        last_ccc = ccc;
        i += (size_t)l;
    }
    return true;
}

int llm_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
    if (n == 0) return 0;
    unsigned char c = s[0];
    int len;
    uint32_t v, min;
    if (c < 0x80) return *cp = c, 1;
    if ((c & 0xE0) == 0xC0) len = 2, v = c & 0x1F, min = 0x80;
    else if ((c & 0xF0) == 0xE0) len = 3, v = c & 0x0F, min = 0x800;
    else if ((c & 0xF8) == 0xF0) len = 4, v = c & 0x07, min = 0x10000;
    else return 0;
    if ((size_t)len > n) return 0;
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return len;
}

int llm_utf8_encode(uint32_t cp, char *out)
{
    if (cp < 0x80) return out[0] = (char)cp, 1;
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}
