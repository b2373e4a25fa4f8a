// Jinja's filters, tests and global functions, and the Python methods templates call on str,
// list and dict values: the names the parser accepts, and their implementations, which the
// interpreter calls with already evaluated arguments.
#pragma once

#include "model/jinja/value.hpp"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bitnet::model::jinja {

class interpreter;

/// Evaluated call arguments: positional, then keyword.
struct call_args {
    std::vector<value> pos;
    std::vector<std::pair<std::string, value>> kw;

    /// Positional `index` or keyword `key`, else null.
    [[nodiscard]] const value* get(std::size_t index, std::string_view key) const;
};

[[nodiscard]] bool known_filter(std::string_view name);
[[nodiscard]] bool known_test(std::string_view name);
/// A method name of str, list or dict that a template may call.
[[nodiscard]] bool known_method(std::string_view name);
/// Whether `name` is a method of values of kind `k` (string, array or object).
[[nodiscard]] bool is_method_of(kind k, std::string_view name);

/// Applies filter `name` to `input`. Throws template_error (position set by the caller).
[[nodiscard]] value apply_filter(interpreter& in, std::string_view name, const value& input,
                                 const call_args& args);
/// Applies test `name`.
[[nodiscard]] bool apply_test(interpreter& in, std::string_view name, const value& input,
                              const call_args& args);
/// Calls method `name` of `self` (a str, list or dict).
[[nodiscard]] value call_method(interpreter& in, const value& self, std::string_view name,
                                const call_args& args);
/// Calls a global function (range, namespace, dict, raise_exception, strftime_now).
[[nodiscard]] value call_global(interpreter& in, std::string_view name, const call_args& args);
/// Whether `name` is a global function.
[[nodiscard]] bool known_global(std::string_view name);

/// str(v) as Python prints it (None, True, 1.5, lists and dicts as repr), with provenance.
[[nodiscard]] text to_text(const value& v);
/// Whether any string inside `v` (or a dict's keys) came from input data.
[[nodiscard]] bool value_holds_input(const value& v);
/// repr(v) (strings quoted).
[[nodiscard]] std::string repr(const value& v);
/// json.dumps(v, ensure_ascii=False, indent=indent, separators=..., sort_keys=...) as
/// Transformers' `tojson` filter calls it; indent < 0: none.
[[nodiscard]] std::string to_json(const value& v, int indent, bool sort_keys,
                                  const std::string* item_sep, const std::string* key_sep);

} // namespace bitnet::model::jinja
