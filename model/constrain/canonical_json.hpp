// The one layout constrained output is written in, and the one the grammar accepts: compact JSON
// (no whitespace at all), strings with the minimal escapes (\" \\ \b \f \n \r \t, and \u00xx in
// lower-case hex for the other control characters; everything else raw UTF-8), numbers that are
// integers written as integers ("1", never "1.0"), others in the shortest form that reads back
// the same double. Object members keep their order. A value has exactly one canonical text, so
// the grammar can compare names and constants byte for byte.
#pragma once

#include <boost/json/value.hpp>

#include <string>
#include <string_view>

namespace bitnet::model::constrain {

/// `v` in the canonical layout.
[[nodiscard]] std::string canonical_json(const boost::json::value& v);

/// The escaped contents of the string `s` (without the quotes).
[[nodiscard]] std::string canonical_string_body(std::string_view s);

} // namespace bitnet::model::constrain
