// Chat templates: a GGUF's `tokenizer.chat_template` (Jinja text) recognised as one of the forms
// HTTP-API.md knows, and chat messages rendered with it into the text a tokenizer then encodes
// (control tokens such as <|eot_id|> written out, BOS left to the tokenizer). No Jinja engine:
// the known forms are written here.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace bitnet::model {

enum class chat_template { bitnet, llama3 };

/// Recognises a GGUF `tokenizer.chat_template`: the Llama-3 header form, else the BitNet form.
/// `known` tells whether the text was recognised (an unknown template falls back to BitNet, and
/// the caller says so once in the log).
struct template_choice {
    chat_template tmpl = chat_template::bitnet;
    bool known = false;
};
[[nodiscard]] template_choice recognise_chat_template(std::string_view jinja);

/// One message of a chat (role: system, user or assistant), viewed, not owned.
struct chat_turn {
    std::string_view role;
    std::string_view content;
};

/// Renders `messages` with the BitNet or Llama-3 form of HTTP-API.md. The result ends where the
/// assistant's reply begins.
[[nodiscard]] std::string render_chat(const std::vector<chat_turn>& messages, chat_template tmpl);

} // namespace bitnet::model
