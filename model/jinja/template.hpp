// The Jinja2 subset interpreter's public face: compile a template once (at model load), render
// it many times (per request, on any thread: a compiled template is immutable). Errors are
// results naming the construct and its line and column; nothing here throws.
//
// Behaves as Jinja2 3.1 in the environment Transformers renders chat templates with
// (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, its tojson, and the
// raise_exception / strftime_now globals). What is not implemented fails at compile time with a
// message naming it: {% include/import/extends/block/with %}, recursive loops, *args, unknown
// filters, tests and methods, loop.cycle(). Known differences: integers are 64-bit (overflow is
// an error), case changes map ASCII letters only.
#pragma once

#include "common/error.hpp"
#include "model/jinja/limits.hpp"
#include "model/jinja/value.hpp"

#include <ctime>
#include <memory>
#include <string>
#include <string_view>

namespace bitnet::model::jinja {

/// A parsed template (source and AST), shared by copies.
class compiled_template {
public:
    /// Parses `source` (UTF-8, at most lim.max_template_bytes). Errors: bad_format for invalid
    /// Jinja or UTF-8, unsupported for valid Jinja this interpreter lacks (the message names the
    /// construct), invalid_argument past a limit. Each message gives the line and column.
    [[nodiscard]] static result<compiled_template> compile(std::string_view source,
                                                           const limits& lim = {});

    /// Renders with `vars` as the template's variables; `now` is what strftime_now() formats.
    /// Errors: invalid_argument for what Jinja2 would raise too (the message says what, and
    /// "raise_exception: ..." for the template's own exception), unsupported for a construct
    /// met only at render time, invalid_argument naming the limit past one.
    [[nodiscard]] result<text> render(object vars, std::time_t now) const;

    /// The source as compiled (newlines normalised).
    [[nodiscard]] const std::string& source() const noexcept;
    [[nodiscard]] const limits& bounds() const noexcept;

private:
    struct state;
    std::shared_ptr<const state> s_;
};

/// Parses JSON text into a value (numbers: int64 when integral and in range, else double;
/// objects keep their key order). `from_input` marks its strings and keys as input text.
/// Bounded by lim.max_input_bytes and lim.max_input_depth. Errors: invalid_argument.
[[nodiscard]] result<value> parse_json(std::string_view json, const limits& lim,
                                       bool from_input = true);

} // namespace bitnet::model::jinja
