// The two pieces every refusal of a client's schema is made of: the error for a passed limit
// (limits.hpp, named in `param`) and a short excerpt of the client's own text to quote.
#pragma once

#include "common/error.hpp"

#include <cstddef>
#include <string>
#include <string_view>

namespace bitnet::model::constrain {

/// A 400 `invalid_argument` saying the schema is over limit `name` (whose value is `value`).
[[nodiscard]] error limit_error(const char* name, std::size_t value, const std::string& what);

/// At most the first `n` bytes of `s` (never half a UTF-8 character), "..." when cut.
[[nodiscard]] std::string cut_utf8(std::string_view s, std::size_t n);

} // namespace bitnet::model::constrain
