// Tokens -> AST, by Jinja2's grammar (its parser's precedence and its tests' argument rules).
// Recursion is bounded by limits::max_nesting, checked before each descent. A construct this
// interpreter does not implement (an unknown filter or test, {% include %}, *args, an unknown
// method) is a template_error that names it, so a template fails at load, not mid-request.
#pragma once

#include "model/jinja/ast.hpp"
#include "model/jinja/lexer.hpp"
#include "model/jinja/limits.hpp"

#include <vector>

namespace bitnet::model::jinja {

/// The statements of a whole template. Throws template_error.
[[nodiscard]] body parse(const std::vector<token>& tokens, const limits& lim);

} // namespace bitnet::model::jinja
