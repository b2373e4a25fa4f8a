// JSON Schema (draft 7 / 2020-12 subset) -> grammar. Every keyword is either enforced exactly by
// the grammar, an annotation that changes nothing (title, description, ...), or refused: a schema
// is never half-applied. The supported set is listed in the README ("Structured output"), and so
// are the limits (limits.hpp) every schema is compiled within.
#pragma once

#include "common/error.hpp"
#include "model/constrain/grammar.hpp"

#include <string_view>

namespace bitnet::model::constrain {

/// Compiles the schema in `schema_json` (JSON text). Errors: `unsupported` when the schema uses a
/// keyword (or a form of one) the grammar cannot enforce, with the keyword in `param` and its
/// place in the schema in the message; `invalid_argument` when the text is not JSON, the schema
/// is malformed (a type name that does not exist, a $ref that points nowhere, a $ref cycle that
/// writes no byte) or passes one of the limits (then `param` is the limit's name). A set `cancel`
/// ends the compile with `cancelled`.
[[nodiscard]] result<grammar> compile_json_schema(std::string_view schema_json,
                                                  const cancel_token* cancel = nullptr);

/// OpenAI's `{"type":"json_object"}`: any JSON object.
[[nodiscard]] grammar any_object_grammar();

} // namespace bitnet::model::constrain
