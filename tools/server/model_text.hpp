// The text side of a model file for its versions' text actors (actors/supervisor/text_actor.hpp):
// the tokenizer (read from the GGUF without loading weights) and its chat template.
#pragma once

#include "actors/supervisor/text_actor.hpp"
#include "common/error.hpp"

#include <string>

namespace bitnet::server {

/// A model file's text side, where its chat template came from, and what to log about it (a
/// warning: a fallback, bitnet.cpp's placeholder) when not empty.
struct model_text {
    actors::text_options text;
    std::string chat_origin;
    std::string chat_notice;
};

/// Reads the tokenizer and chooses the chat template of the GGUF at `path`
/// (model::choose_chat_template): a template that cannot be used is an error naming it.
[[nodiscard]] result<model_text> read_model_text(const std::string& path,
                                                 const model::chat_template_options& chat = {});

} // namespace bitnet::server
