// The one exception type of the interpreter: a template that cannot be compiled or rendered.
// It never leaves model/jinja/: template.cpp turns it into an error result.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace bitnet::model::jinja {

/// What went wrong with a template.
enum class failure : std::uint8_t {
    syntax,      ///< not valid Jinja
    unsupported, ///< valid Jinja that this interpreter does not implement (named in the message)
    render,      ///< a render error Jinja2 raises too (a type error, an undefined variable, ...)
    raised,      ///< the template called raise_exception(message)
    limit,       ///< a bound of `limits` was reached
};

/// A template that cannot be compiled or rendered, at a byte offset of the (normalised) source.
struct template_error : std::runtime_error {
    std::size_t pos;
    failure why;
    template_error(std::size_t at, const std::string& what, failure kind = failure::syntax)
        : std::runtime_error(what)
        , pos(at)
        , why(kind) {}
};

/// The deepest nesting the recursive walks over values (repr, JSON, equality) accept.
inline constexpr std::uint32_t max_walk_depth = 256;

} // namespace bitnet::model::jinja
