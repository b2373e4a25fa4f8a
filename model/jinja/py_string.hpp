// Python's str operations that templates call (strip, split, case changes, ...) on UTF-8 text.
// Whitespace is Python's (str.isspace: ASCII blanks, \x1c-\x1f, U+0085, U+00A0, the Unicode
// spaces and separators). NOTE: case changes map ASCII letters only; other letters are kept
// (Python maps all of Unicode), so a template that upper-cases non-ASCII text differs there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace bitnet::model::jinja::py {

/// Bytes of the whitespace character at `s[pos]`, or 0 when it is not whitespace.
[[nodiscard]] std::size_t space_len(std::string_view s, std::size_t pos) noexcept;
/// Bytes of the whitespace character that ends at `s[end]` (exclusive), or 0.
[[nodiscard]] std::size_t space_len_before(std::string_view s, std::size_t end) noexcept;

/// [begin, end) of `s` without the leading/trailing characters (whitespace when `chars` is null;
/// else any code point of *chars).
struct span {
    std::size_t begin, end;
};
[[nodiscard]] span strip(std::string_view s, const std::string* chars, bool left, bool right);

/// str.split(sep, maxsplit) as [begin, end) spans; `sep` null splits on whitespace runs.
[[nodiscard]] std::vector<span> split(std::string_view s, const std::string* sep, long maxsplit);
/// str.rsplit(sep, maxsplit).
[[nodiscard]] std::vector<span> rsplit(std::string_view s, const std::string* sep, long maxsplit);
/// str.splitlines() (on \n, \r, \r\n and the other line boundaries Python knows).
[[nodiscard]] std::vector<span> splitlines(std::string_view s);

[[nodiscard]] std::string upper(std::string_view s);
[[nodiscard]] std::string lower(std::string_view s);
/// str.capitalize(): first character upper-cased, the rest lower-cased.
[[nodiscard]] std::string capitalize(std::string_view s);
/// str.title(): each run of letters starts upper-case and continues lower-case.
[[nodiscard]] std::string title(std::string_view s);
/// Jinja's `title` filter: words begin after '-', whitespace, '(', '{', '[' or '<'.
[[nodiscard]] std::string jinja_title(std::string_view s);

/// Appends code point `cp` as UTF-8 (the `\u` escapes of template strings and of JSON input).
void append_utf8(std::string& out, std::uint32_t cp);

} // namespace bitnet::model::jinja::py
