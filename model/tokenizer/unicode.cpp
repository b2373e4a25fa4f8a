// UTF-8 helpers and the GPT-2 byte map (docs/GGUF-FORMAT.md §5.1: printable bytes map to
// themselves, the other 68 bytes, in increasing order, to U+0100, U+0101, ...).
#include "model/tokenizer/unicode.hpp"

#include <array>

namespace bitnet::model {

void append_utf8(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

utf8_prefix classify_utf8_prefix(std::string_view s, std::size_t& length) noexcept {
    const auto b0 = static_cast<std::uint8_t>(s[0]);
    const std::size_t need = utf8_sequence_length(b0);
    if (need == 1) {
        length = 1;
        return b0 < 0x80 ? utf8_prefix::complete : utf8_prefix::invalid;
    }
    // The second byte's range is narrower after E0/ED/F0/F4 (overlongs, surrogates, > U+10FFFF).
    std::uint8_t lo = 0x80;
    std::uint8_t hi = 0xBF;
    if (b0 == 0xE0)
        lo = 0xA0;
    else if (b0 == 0xED)
        hi = 0x9F;
    else if (b0 == 0xF0)
        lo = 0x90;
    else if (b0 == 0xF4)
        hi = 0x8F;
    for (std::size_t i = 1; i < need; ++i) {
        if (i >= s.size()) {
            length = i;
            return utf8_prefix::incomplete;
        }
        const auto b = static_cast<std::uint8_t>(s[i]);
        const bool ok = i == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
        if (!ok) {
            length = i; // the bytes before the offending one form one invalid unit
            return utf8_prefix::invalid;
        }
    }
    length = need;
    return utf8_prefix::complete;
}

namespace {

struct gpt2_tables {
    std::array<std::string, 256> byte_to_utf8;
    std::array<std::int16_t, 0x144> cp_to_byte{}; // stand-ins are all below U+0144

    gpt2_tables() {
        cp_to_byte.fill(-1);
        int next = 0;
        for (int b = 0; b < 256; ++b) {
            const bool printable =
                (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            const char32_t cp = printable ? static_cast<char32_t>(b) : 0x100 + next++;
            append_utf8(byte_to_utf8[b], cp);
            cp_to_byte[cp] = static_cast<std::int16_t>(b);
        }
    }
};

const gpt2_tables& tables() {
    static const gpt2_tables t;
    return t;
}

} // namespace

std::string_view gpt2_byte_to_utf8(std::uint8_t b) noexcept {
    return tables().byte_to_utf8[b];
}

int gpt2_codepoint_to_byte(char32_t cp) noexcept {
    return cp < tables().cp_to_byte.size() ? tables().cp_to_byte[cp] : -1;
}

bool gpt2_decode_bytes(std::string_view text, std::string& out) {
    std::string bytes;
    bytes.reserve(text.size());
    std::size_t i = 0;
    while (i < text.size()) {
        std::size_t n = 0;
        if (classify_utf8_prefix(text.substr(i), n) != utf8_prefix::complete)
            return false;
        char32_t cp = 0;
        const auto b0 = static_cast<std::uint8_t>(text[i]);
        if (n == 1)
            cp = b0;
        else if (n == 2)
            cp = ((b0 & 0x1Fu) << 6) | (static_cast<std::uint8_t>(text[i + 1]) & 0x3Fu);
        else
            return false; // every stand-in is one or two bytes long
        const int b = gpt2_codepoint_to_byte(cp);
        if (b < 0)
            return false;
        bytes.push_back(static_cast<char>(b));
        i += n;
    }
    out += bytes;
    return true;
}

} // namespace bitnet::model
