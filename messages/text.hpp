// What the text side of a model version (its tokenizer and chat template, the text actor of
// actors/supervisor/) is asked: a prompt to tokenize as the version will run it, text to tokenize
// as a client sent it.
#pragma once

#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace bitnet::msg {

/// A tool call an assistant message made earlier in a chat (what the client sends back).
struct chat_tool_call {
    std::string id;
    std::string name;
    std::string arguments; ///< JSON text
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, chat_tool_call& x) {
    return f(caf::meta::type_name("chat_tool_call"), x.id, x.name, x.arguments);
}

/// One chat message as the client sent it, normalised by http/ (roles system, user, assistant,
/// tool; `developer` arrives as system; text parts joined): the serving version renders it with
/// its own template.
struct chat_message {
    std::string role;
    std::string content;
    std::vector<chat_tool_call> tool_calls{}; ///< assistant: the calls it made
    std::string tool_call_id{};               ///< tool: the call it answers
    std::string name{};                       ///< tool: the function that call named
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, chat_message& x) {
    return f(caf::meta::type_name("chat_message"), x.role, x.content, x.tool_calls, x.tool_call_id,
             x.name);
}

/// How a request's prompt came: token ids, text, or chat messages.
enum class prompt_form : std::uint8_t { ids = 0, text = 1, chat = 2 };

/// A prompt still to be tokenized, by the text side of the version that will run it (its
/// tokenizer and chat template): admission hands it to that version's text actor.
struct text_prompt {
    prompt_form form = prompt_form::ids; ///< ids: nothing here, the request's `prompt` holds them
    std::string text;                    ///< form text
    std::vector<chat_message> messages;  ///< form chat: rendered with the version's template
    bool add_bos = true;                 ///< prepend BOS when the model has one and expects it
    std::string tools_json{};  ///< form chat: the tools a template may render (JSON array)
    std::string kwargs_json{}; ///< form chat: chat_template_kwargs (JSON object)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, text_prompt& x) {
    return f(caf::meta::type_name("text_prompt"), x.form, x.text, x.messages, x.add_bos,
             x.tools_json, x.kwargs_json);
}

/// POST /v1/tokenize's question: `text` as token ids of the serving version's tokenizer.
struct tokenize_order {
    std::string text;
    bool add_bos = true;        ///< prepend BOS when the model has one
    bool parse_special = false; ///< special tokens written in the text are those tokens
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, tokenize_order& x) {
    return f(caf::meta::type_name("tokenize_order"), x.text, x.add_bos, x.parse_special);
}

} // namespace bitnet::msg
