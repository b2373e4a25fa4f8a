// JSON Schema's `format` for strings, as grammars: each supported format is a pattern (anchored,
// within the pattern_regex subset), so a constrained string can only be written in that format.
// Where the whole format would need more NFA states than a pattern may have, the pattern takes a
// documented subset of it (every value it admits is valid; ipv6 is written uncompressed).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace bitnet::model::constrain {

struct string_format {
    std::string_view pattern;
    std::uint32_t max_length; ///< a cap the format itself implies (0: none)
};

/// The grammar of format `name`, or nothing for a format this compiler does not know.
[[nodiscard]] std::optional<string_format> format_grammar(std::string_view name);

} // namespace bitnet::model::constrain
