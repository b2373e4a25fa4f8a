// The text side of the served models for the HTTP layer: each model's tokenizer (read from its
// GGUF without loading weights) and chat template, behind http::text_codec. Built once at
// start-up, immutable afterwards, so the codec's functions are safe on any thread.
#pragma once

#include "common/error.hpp"
#include "http/server.hpp"
#include "model/tokenizer.hpp"

#include <map>
#include <memory>
#include <string>

namespace bitnet::server {

struct model_text {
    std::shared_ptr<const model::tokenizer> tokenizer;
    http::chat_template chat = http::chat_template::bitnet;
    bool chat_known = false; ///< the GGUF's template was recognised (else the BitNet fallback)
};

/// Reads the tokenizer and `tokenizer.chat_template` of the GGUF at `path`.
[[nodiscard]] result<model_text> read_model_text(const std::string& path);

/// The codec over `models` (alias -> text); an unknown alias is errc::not_found.
[[nodiscard]] http::text_codec
make_text_codec(std::shared_ptr<const std::map<std::string, model_text>> models);

} // namespace bitnet::server
