// The prompt echo of OpenAI's legacy completions (`echo: true`): the prompt's logprobs columns,
// which come before the generated tokens' in `choices[i].logprobs`. Pure functions, beside
// api_render.hpp (same conventions: every element already rendered as JSON text).
#pragma once

#include "messages/types.hpp"

#include <array>
#include <string>
#include <vector>

namespace bitnet::http {

/// `tokens`, `token_logprobs`, `top_logprobs`, `text_offset` of an echoed prompt: one element per
/// prompt token; the first token's logprob and alternatives are `null` (nothing precedes it), as
/// OpenAI and vLLM answer. Alternatives are keyed by piece; of two with the same piece the more
/// likely is kept (a JSON object holds a key once).
[[nodiscard]] std::array<std::vector<std::string>, 4>
completion_echo_columns(const msg::prompt_echo& e);

} // namespace bitnet::http
