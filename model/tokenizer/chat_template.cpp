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

std::string render_chat(const std::vector<chat_turn>& messages, chat_template tmpl) {
    std::string out;
    if (tmpl == chat_template::llama3) {
        for (const auto& m : messages) {
            out += "<|start_header_id|>";
            out += m.role;
            out += "<|end_header_id|>\n\n";
            out += m.content;
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
        } else {
            out += m.content;
        }
    }
    return out;
}

} // namespace bitnet::model
