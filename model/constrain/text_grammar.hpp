// Structured output over plain text rather than a JSON value (vLLM's `guided_choice` and
// `guided_regex`, `structured_outputs.choice` and `.regex`): a reply that is exactly one of a list
// of strings, or whose whole text matches a regular expression. Both compile to a grammar the
// byte matcher walks like any other: a choice is one literal set (raw bytes, no JSON quoting), a
// regex one `text` node (byte_matcher_text.cpp). http/ asks for them with an internal schema
// that compile_json_schema hands here:
//   {"x-bitnet-text": {"choice": ["yes", "no", ...]}}
//   {"x-bitnet-text": {"regex": "[0-9]{3}-[a-z]+"}}
// A regex matches the whole reply (as vLLM's does): `^` and `$` around it are implied, and may be
// written. The regex subset and its limits are the `pattern` keyword's (pattern_regex.hpp).
#pragma once

#include "common/error.hpp"
#include "model/constrain/grammar.hpp"

#include <boost/json/value.hpp>

namespace bitnet::model::constrain {

/// The internal keyword http/ wraps a text spec in (never a client's: http/ refuses client
/// schemas that name x-bitnet-* keywords).
inline constexpr const char* text_spec_keyword = "x-bitnet-text";

/// Whether `root` is a text spec: an object whose only member is text_spec_keyword.
[[nodiscard]] bool is_text_spec(const boost::json::value& root);

/// The grammar of a text spec. invalid_argument for a malformed spec (not exactly one of
/// "choice" or "regex", an empty list or choice, a choice that is not a string), the `pattern`
/// keyword's refusals for a regex it cannot enforce, limit errors past max_enum_members.
[[nodiscard]] result<grammar> compile_text_grammar(const boost::json::value& root);

} // namespace bitnet::model::constrain
