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

/// Writes a rendered chat, telling the template's control markers from everything else.
class chat_writer {
public:
    /// Text the template writes (role labels, separators): plain characters.
    void text(std::string_view s) { out_.text += s; }
    /// A control marker of the template's own, e.g. `<|eot_id|>`.
    void marker(std::string_view s) {
        const auto begin = out_.text.size();
        out_.text += s;
        out_.markers.emplace_back(begin, out_.text.size());
    }
    [[nodiscard]] rendered_chat take() && { return std::move(out_); }

private:
    rendered_chat out_;
};

/// An assistant turn's text followed by its calls, one a line, as `{"name": N, "KEY": ARGS}`.
void append_calls(chat_writer& out, const chat_turn& m, std::string_view key) {
    for (std::size_t i = 0; i < m.calls.size(); ++i) {
        const auto& c = m.calls[i];
        if (i > 0 || !m.content.empty())
            out.text("\n");
        out.text("{\"name\": \"");
        out.text(c.name);
        out.text("\", \"");
        out.text(key);
        out.text("\": ");
        out.text(c.arguments.empty() ? std::string_view("{}") : c.arguments);
        out.text("}");
    }
}

void render_llama3(chat_writer& out, const std::vector<chat_turn>& messages) {
    for (const auto& m : messages) {
        out.marker("<|start_header_id|>");
        out.text(m.role == "tool" ? std::string_view("ipython") : m.role);
        out.marker("<|end_header_id|>");
        out.text("\n\n");
        out.text(m.content);
        append_calls(out, m, "parameters");
        out.marker("<|eot_id|>");
    }
    out.marker("<|start_header_id|>");
    out.text("assistant");
    out.marker("<|end_header_id|>");
    out.text("\n\n");
}

/// BitNet b1.58 2B-4T (llama.cpp's `bitnet` template).
void render_bitnet(chat_writer& out, const std::vector<chat_turn>& messages) {
    for (const auto& m : messages) {
        if (m.role == "system") {
            out.text("System: ");
            out.text(m.content);
        } else if (m.role == "user") {
            out.text("User: ");
            out.text(m.content);
            out.marker("<|eot_id|>");
            out.text("Assistant: ");
        } else if (m.role == "tool") {
            out.text("User: Tool result (");
            out.text(m.name);
            out.text("): ");
            out.text(m.content);
            out.marker("<|eot_id|>");
            out.text("Assistant: ");
        } else {
            out.text(m.content);
            append_calls(out, m, "arguments");
        }
    }
}

} // namespace

rendered_chat render_chat_marked(const std::vector<chat_turn>& messages, chat_template tmpl) {
    chat_writer out;
    if (tmpl == chat_template::llama3)
        render_llama3(out, messages);
    else
        render_bitnet(out, messages);
    return std::move(out).take();
}

std::string render_chat(const std::vector<chat_turn>& messages, chat_template tmpl) {
    return render_chat_marked(messages, tmpl).text;
}

} // namespace bitnet::model
