// JSON Schema's `format` for strings, as automata that write only valid values: each supported
// format is an anchored pattern (pattern_parser.hpp's syntax), determinized once per process
// (pattern_dfa.hpp), so a date knows the days of its month and the leap years, a host name
// counts its labels to 63 bytes, and an email's local part to 64. Every value a format admits
// is valid by the RFC JSON Schema names for it; where the RFC allows more, a documented subset is
// written (ipv6 uncompressed, fractions of a second to 6 digits, no leap second).
#pragma once

#include "common/error.hpp"
#include "model/constrain/pattern_regex.hpp"

#include <cstdint>
#include <optional>
#include <string_view>

namespace bitnet::model::constrain {

struct string_format {
    const pattern_regex* language = nullptr; ///< built once, lives as long as the process
    std::uint32_t max_length = 0;            ///< a cap the format itself implies (0: none)
};

/// The automaton of format `name`; nothing for a format this compiler does not know.
[[nodiscard]] std::optional<result<string_format>> format_grammar(std::string_view name);

} // namespace bitnet::model::constrain
