// The text side of a model file for its versions' text actors (actors/supervisor/text_actor.hpp):
// the tokenizer (read from the GGUF without loading weights) and the recognised chat template.
#pragma once

#include "actors/supervisor/text_actor.hpp"
#include "common/error.hpp"

#include <string>

namespace bitnet::server {

/// A model file's text side, and whether its chat template was recognised (else the BitNet form
/// is used, and the caller says so).
struct model_text {
    actors::text_options text;
    bool chat_known = false;
};

/// Reads the tokenizer and `tokenizer.chat_template` of the GGUF at `path`.
[[nodiscard]] result<model_text> read_model_text(const std::string& path);

} // namespace bitnet::server
