// JSON numbers exactly as the client wrote them. Boost.JSON reads a number it cannot hold exactly
// (123456789012345678901234567890, 0.1000000000000000000001) as the nearest double; a JSON
// Schema's `enum` or `const` member must be written back exactly, and a bound compared exactly.
// So the request's schema is parsed a second time with every such number replaced by a marked
// string holding its text (http/ does it for the schema fields, model/constrain for a schema
// text it is handed); the compiler reads marked strings as numbers and writes them verbatim.
#pragma once

#include <boost/json/value.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace bitnet {

/// Exact arithmetic on bounds and values: 19 integer digits and 15 fraction digits fit.
__extension__ typedef __int128 wide_int;

namespace json_numbers {

/// `text` with every number that a double does not hold exactly turned into a marked string;
/// nothing when there is none. `text` must be valid JSON (parse it first); parse the result with
/// parse_options::allow_invalid_utf8 (the mark is a 0xFF byte).
[[nodiscard]] std::optional<std::string> mark_inexact_numbers(std::string_view text);

/// The written text of a marked number, or nothing when `v` is not one. (The mark is a byte that
/// valid UTF-8 never holds, so no string of the client's can look like one.)
[[nodiscard]] std::optional<std::string_view> exact_number_text(const boost::json::value& v);

/// The decimal text of any JSON number (int64, uint64, double as its shortest round-trip form,
/// or a marked number), or nothing when `v` is no number.
[[nodiscard]] std::optional<std::string> number_text(const boost::json::value& v);

/// Whether decimal number text `t` is an integer (no fraction once trailing zeros and the exponent
/// are taken into account).
[[nodiscard]] bool is_integer_text(std::string_view t);

/// Number text `t` times 10^scale, rounded up (`ceil`) or down to an integer; magnitudes past
/// 10^36 (far beyond what a grammar number can reach) come back as ±10^36.
[[nodiscard]] wide_int scaled_integer(std::string_view t, int scale, bool ceil);

} // namespace json_numbers

} // namespace bitnet
