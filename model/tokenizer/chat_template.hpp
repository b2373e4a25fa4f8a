// The built-in chat forms (BitNet and Llama-3, written here, no Jinja) and the message types all
// chat rendering takes. A model's own Jinja template is rendered by chat_formatter.hpp; these
// forms serve models without a usable template (the shipped default model has none), and a
// GGUF's template text can still be recognised as one of them (the fallback choice).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
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

/// A tool call an assistant turn made: the function's name, its arguments (JSON text) and the
/// call's id (empty: none).
struct chat_call {
    std::string_view name;
    std::string_view arguments;
    std::string_view id{};
};

/// One message of a chat (role: system, user, assistant or tool), viewed, not owned. An
/// assistant turn may carry the tool calls it made; a tool turn is a call's result, `name` the
/// function it answers.
struct chat_turn {
    std::string_view role;
    std::string_view content;
    std::vector<chat_call> calls{};
    std::string_view name{};
    std::string_view tool_call_id{}; ///< tool: the id of the call it answers (empty: none)
};

/// A rendered chat: its text, and where in it the template wrote its own control markers
/// (`<|eot_id|>`, `<|start_header_id|>`, ...), as byte ranges in order. Everything else is text:
/// what a message holds (every role's content, tool results, names, call arguments) is data, so
/// a marker typed inside it stays characters and cannot forge a turn.
struct rendered_chat {
    std::string text;
    std::vector<std::pair<std::size_t, std::size_t>> markers; ///< [begin, end) of each marker
};

/// Renders `messages` with the BitNet or Llama-3 form of docs/GGUF-FORMAT.md §5.3. The result ends
/// where the assistant's reply begins. Tool calls and results (README, "Tool calls"):
///   Llama-3: an assistant's calls follow its text, one `{"name": N, "parameters": ARGS}` a line
///            (Llama 3.1's JSON tool-call form), and a result is an `ipython` turn;
///   BitNet:  the template has no tool syntax; calls follow the text as
///            `{"name": N, "arguments": ARGS}` and a result is a user turn
///            `Tool result (N): CONTENT`.
[[nodiscard]] rendered_chat render_chat_marked(const std::vector<chat_turn>& messages,
                                               chat_template tmpl);
/// render_chat_marked's text.
[[nodiscard]] std::string render_chat(const std::vector<chat_turn>& messages, chat_template tmpl);

} // namespace bitnet::model
