// A code point as UTF-8 bytes, for tests that build text of many scripts or long character
// classes by code point.
#pragma once

#include <cstdint>
#include <string>

namespace bitnet::test {

inline void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

/// Every other code point from U+0100 on (surrogates skipped), `n` of them: the body of a
/// negated class of `n` single-code-point ranges.
inline std::string sparse_code_points(std::uint32_t n) {
    std::string out;
    for (std::uint32_t cp = 0x100, k = 0; k < n; ++k, cp += 2) {
        if (cp >= 0xD800 && cp <= 0xDFFF)
            cp = 0xE000;
        append_utf8(out, cp);
    }
    return out;
}

} // namespace bitnet::test
