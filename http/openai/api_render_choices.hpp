// Plain replies of OpenAI requests with n > 1 (several choices from one prompt): the same
// shapes as api_render.hpp's chat_body and completion_body, one entry per choice in
// `choices[i]`, the usage counting the prompt once and the choices' tokens summed.
#pragma once

#include "messages/types.hpp"

#include <cstdint>
#include <span>
#include <string>

namespace bitnet::http {

/// One finished choice, as the reply shows it; `logprobs` is JSON text ("null": not asked).
struct rendered_choice {
    std::string text;
    std::string logprobs = "null";
    msg::finish_reason finish = msg::finish_reason::stop; ///< mapped to OpenAI's word here
};

/// POST /v1/chat/completions with n > 1; `total` holds the usage of them all.
[[nodiscard]] std::string chat_choices_body(const std::string& req_id, std::int64_t created,
                                            const msg::completion& total,
                                            std::span<const rendered_choice> choices);

/// POST /v1/completions with n > 1.
[[nodiscard]] std::string completion_choices_body(const std::string& req_id, std::int64_t created,
                                                  const msg::completion& total,
                                                  std::span<const rendered_choice> choices);

} // namespace bitnet::http
