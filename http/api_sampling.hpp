// The sampling fields beyond temperature and the truncating filters, on the native, completions
// and chat routes: OpenAI's presence_penalty, frequency_penalty and logit_bias, and vLLM's (and
// llama.cpp's) ignore_eos and min_tokens. Their meaning is the sampler's
// (model/sampling/sampler.hpp states the order of operations); here they are read and checked.
#pragma once

#include "http/api_json.hpp"

#include <boost/json/object.hpp>

#include <optional>

namespace bitnet::http {

/// Reads the fields above from `body` into `in.params`. `logit_bias` is OpenAI's object of token
/// ids (decimal strings) to biases in -100..100, at most 300 of them; the ids are checked against
/// the model's vocabulary where it is known (admission). Errors name the field.
[[nodiscard]] std::optional<api_error> read_logit_shaping(const boost::json::object& body,
                                                          inference_input& in);

/// What the fields cannot be combined with, once the rest is read: min_tokens past max_tokens,
/// and min_tokens or ignore_eos with structured output (whose value ends with the EOS the
/// hold-back would refuse).
[[nodiscard]] std::optional<api_error> check_logit_shaping(const inference_input& in);

} // namespace bitnet::http
