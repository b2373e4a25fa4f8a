// Template source -> tokens, as Jinja2's lexer does it with the environment Transformers uses
// for chat templates: trim_blocks, lstrip_blocks, `-`/`+` whitespace control, a single trailing
// newline dropped, newlines normalised to \n, {% raw %} blocks taken as text.
#pragma once

#include "model/jinja/error.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace bitnet::model::jinja {

enum class tok : std::uint8_t {
    data,        ///< template text to output as is
    block_begin, ///< {%
    block_end,   ///< %}
    var_begin,   ///< {{
    var_end,     ///< }}
    name,
    string, ///< a string literal, escapes decoded
    integer,
    number, ///< a float literal
    op,     ///< an operator or punctuation, in `s`
    eof,
};

struct token {
    tok t = tok::eof;
    std::string s; ///< data, name, string value or operator
    std::int64_t i = 0;
    double d = 0;
    std::size_t pos = 0; ///< byte offset in the normalised source
};

/// The source as Jinja reads it: \r\n and \r become \n, and one trailing newline is dropped.
[[nodiscard]] std::string normalise_source(std::string_view src);

/// Tokens of a normalised source, ending with an `eof` token. Throws template_error.
[[nodiscard]] std::vector<token> tokenize(std::string_view src);

/// "line L, column C" of a byte offset.
[[nodiscard]] std::string describe_position(std::string_view src, std::size_t pos);

} // namespace bitnet::model::jinja
