#include "model/tokenizer/chat_template.hpp"

namespace bitnet::model {

template_choice recognise_chat_template(std::string_view jinja) {
    if (jinja.find("<|start_header_id|>") != std::string_view::npos)
        return {chat_template::llama3, true};
    if (jinja.find("Assistant: ") != std::string_view::npos ||
        jinja.find("'User: '") != std::string_view::npos)
        return {chat_template::bitnet, true};
    return {chat_template::bitnet, false};
}

namespace {

/// An assistant turn's text followed by its calls, one a line, as `{"name": N, "KEY": ARGS}`.
void append_calls(std::string& out, const chat_turn& m, std::string_view key) {
    for (std::size_t i = 0; i < m.calls.size(); ++i) {
        const auto& c = m.calls[i];
        if (i > 0 || !m.content.empty())
            out += '\n';
        out += "{\"name\": \"";
        out += c.name;
        out += "\", \"";
        out += key;
        out += "\": ";
        out += c.arguments.empty() ? std::string_view("{}") : c.arguments;
        out += '}';
    }
}

} // namespace

std::string render_chat(const std::vector<chat_turn>& messages, chat_template tmpl) {
    std::string out;
    if (tmpl == chat_template::llama3) {
        for (const auto& m : messages) {
            out += "<|start_header_id|>";
            out += m.role == "tool" ? std::string_view("ipython") : m.role;
            out += "<|end_header_id|>\n\n";
            out += m.content;
            append_calls(out, m, "parameters");
            out += "<|eot_id|>";
        }
        out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
        return out;
    }
    // BitNet b1.58 2B-4T (llama.cpp's `bitnet` template).
    for (const auto& m : messages) {
        if (m.role == "system") {
            out += "System: ";
            out += m.content;
        } else if (m.role == "user") {
            out += "User: ";
            out += m.content;
            out += "<|eot_id|>Assistant: ";
        } else if (m.role == "tool") {
            out += "User: Tool result (";
            out += m.name;
            out += "): ";
            out += m.content;
            out += "<|eot_id|>Assistant: ";
        } else {
            out += m.content;
            append_calls(out, m, "arguments");
        }
    }
    return out;
}

} // namespace bitnet::model
