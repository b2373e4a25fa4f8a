// UTF-8 helpers and GPT-2's byte <-> unicode map, shared by the tokenizers. No Unicode tables:
// character classes come from PCRE2 (see tokenizer_pretokenize.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace bitnet::model {

/// Length of the UTF-8 sequence that `lead` starts (1..4); 1 for a byte that cannot start one.
[[nodiscard]] constexpr std::size_t utf8_sequence_length(std::uint8_t lead) noexcept {
    if (lead < 0x80)
        return 1;
    if (lead >= 0xC2 && lead <= 0xDF)
        return 2;
    if (lead >= 0xE0 && lead <= 0xEF)
        return 3;
    if (lead >= 0xF0 && lead <= 0xF4)
        return 4;
    return 1;
}

/// Appends the UTF-8 encoding of `cp` (which must be a valid scalar value).
void append_utf8(std::string& out, char32_t cp);

/// How a byte sequence starts, for incremental validation (RFC 3629, no overlongs/surrogates).
enum class utf8_prefix {
    complete,   ///< `s` starts with a whole valid character of `length` bytes
    incomplete, ///< `s` is a valid but unfinished start of a character (more bytes may follow)
    invalid,    ///< `s` starts with `length` bytes that can never be part of a valid character
};

/// Classifies the first character of a non-empty `s`; `length` receives its byte count.
[[nodiscard]] utf8_prefix classify_utf8_prefix(std::string_view s, std::size_t& length) noexcept;

/// GPT-2's printable stand-in for byte `b`, as UTF-8 (e.g. 0x20 -> "Ġ").
[[nodiscard]] std::string_view gpt2_byte_to_utf8(std::uint8_t b) noexcept;

/// The byte a GPT-2 stand-in code point denotes, or -1 when `cp` is not one.
[[nodiscard]] int gpt2_codepoint_to_byte(char32_t cp) noexcept;

/// Byte-level BPE text (GPT-2 stand-ins) back to raw bytes. False, with `out` untouched, when a
/// character is not a stand-in: Hugging Face then keeps the whole token's text as it is.
[[nodiscard]] bool gpt2_decode_bytes(std::string_view text, std::string& out);

} // namespace bitnet::model
