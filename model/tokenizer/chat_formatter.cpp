#include "model/tokenizer/chat_formatter.hpp"

#include "model/gguf/gguf_reader.hpp"
#include "model/tokenizer/tokenizer.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <fstream>
#include <iterator>

namespace bitnet::model {

namespace {

using jinja::value;

constexpr std::string_view placeholder =
    "{% for message in messages %}{% if loop.first %}{{ bos_token }}{% endif %}{% if "
    "message['role'] == 'user' %}{{ 'Human: ' + message['content'] + '\\n\\nBITNETAssistant: ' + "
    "eos_token }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token }}{% "
    "endif %}{% endfor %}";

/// A call's arguments as the template sees them: the JSON object parsed (what tool-calling
/// templates expect, as vLLM passes them), else the text as it came.
value call_arguments(std::string_view args, const jinja::limits& lim) {
    if (args.empty())
        return value::dict({});
    if (auto parsed = jinja::parse_json(args, lim); parsed && parsed->k == jinja::kind::dict)
        return *parsed;
    return value::string(std::string(args), true);
}

/// One message as a dict, keys in the order OpenAI clients send them.
value message_value(const chat_turn& m, const jinja::limits& lim) {
    jinja::object o;
    o.set("role", value::string(std::string(m.role), true));
    // An assistant turn that only calls tools has no content (OpenAI's null).
    o.set("content", m.content.empty() && !m.calls.empty()
                         ? value::none()
                         : value::string(std::string(m.content), true));
    if (!m.calls.empty()) {
        jinja::array calls;
        for (const auto& c : m.calls) {
            jinja::object fn;
            fn.set("name", value::string(std::string(c.name), true));
            fn.set("arguments", call_arguments(c.arguments, lim));
            jinja::object call;
            if (!c.id.empty())
                call.set("id", value::string(std::string(c.id), true));
            call.set("type", value::string("function"));
            call.set("function", value::dict(std::move(fn)));
            calls.push_back(value::dict(std::move(call)));
        }
        o.set("tool_calls", value::list(std::move(calls), true));
    }
    if (!m.tool_call_id.empty())
        o.set("tool_call_id", value::string(std::string(m.tool_call_id), true));
    if (!m.name.empty())
        o.set("name", value::string(std::string(m.name), true));
    return value::dict(std::move(o));
}

bool reserved(std::string_view key) {
    return key == "messages" || key == "tools" || key == "documents" ||
           key == "add_generation_prompt";
}

} // namespace

/// Marker texts by first byte, longest first (leftmost-longest, as the tokenizer splits them).
struct chat_formatter::marker_set {
    std::vector<std::string> texts;
    std::array<std::vector<std::uint32_t>, 256> by_first{};

    explicit marker_set(std::vector<std::string> t)
        : texts(std::move(t)) {
        std::erase_if(texts, [](const std::string& m) { return m.empty(); });
        std::sort(texts.begin(), texts.end(),
                  [](const auto& a, const auto& b) { return a.size() > b.size(); });
        texts.erase(std::unique(texts.begin(), texts.end()), texts.end());
        for (std::uint32_t i = 0; i < texts.size(); ++i)
            by_first[static_cast<std::uint8_t>(texts[i][0])].push_back(i);
    }

    /// The markers in `t`'s template text: a marker never takes a byte that came from input.
    [[nodiscard]] rendered_chat mark(jinja::text t) const {
        rendered_chat out;
        const std::string_view s = t.s;
        std::size_t at = 0;
        const auto scan = [&](std::size_t end) {
            std::size_t i = at;
            while (i < end) {
                std::size_t len = 0;
                for (auto k : by_first[static_cast<std::uint8_t>(s[i])]) {
                    const auto& m = texts[k];
                    if (m.size() <= end - i && s.compare(i, m.size(), m) == 0) {
                        len = m.size();
                        break;
                    }
                }
                if (len == 0) {
                    ++i;
                    continue;
                }
                out.markers.emplace_back(i, i + len);
                i += len;
            }
        };
        for (const auto& [begin, end] : t.input) {
            scan(begin);
            at = end;
        }
        scan(s.size());
        out.text = std::move(t.s);
        return out;
    }
};

std::string_view bitnetcpp_placeholder_template() noexcept {
    return placeholder;
}

tool_call_syntax detect_tool_call_syntax(std::string_view src) {
    const auto has = [&](std::string_view s) { return src.find(s) != std::string_view::npos; };
    if (has("<tool_call>")) {
        if (has("<tool_call>\\n[") || has("<tool_call>\n["))
            return tool_call_syntax::hermes_list;
        return tool_call_syntax::hermes;
    }
    if ((has("<|python_tag|>") || has("Environment: ipython")) && has("\"parameters\""))
        return tool_call_syntax::llama3_json;
    return tool_call_syntax::none;
}

const char* tool_call_syntax_name(tool_call_syntax s) noexcept {
    switch (s) {
    case tool_call_syntax::hermes:
        return "hermes";
    case tool_call_syntax::hermes_list:
        return "hermes_list";
    case tool_call_syntax::llama3_json:
        return "llama3_json";
    case tool_call_syntax::none:
        break;
    }
    return "none";
}

chat_formatter chat_formatter::builtin(chat_template form) {
    chat_formatter f;
    f.form_ = form;
    return f;
}

result<chat_formatter> chat_formatter::jinja(std::string_view source, std::string bos_token,
                                             std::string eos_token, const jinja::limits& lim,
                                             std::vector<std::string> markers) {
    auto compiled = jinja::compiled_template::compile(source, lim);
    if (!compiled)
        return compiled.error();
    chat_formatter f;
    f.jinja_ = std::make_shared<const jinja::compiled_template>(std::move(*compiled));
    f.bos_ = std::move(bos_token);
    f.eos_ = std::move(eos_token);
    f.tools_ = detect_tool_call_syntax(f.jinja_->source());
    f.markers_ = std::make_shared<const marker_set>(std::move(markers));
    return f;
}

const std::string& chat_formatter::source() const noexcept {
    static const std::string none;
    return jinja_ ? jinja_->source() : none;
}

result<rendered_chat> chat_formatter::render(const std::vector<chat_turn>& messages,
                                             const chat_render_options& opt) const {
    if (!jinja_)
        return render_chat_marked(messages, form_);
    const auto& lim = jinja_->bounds();
    jinja::object vars;
    if (!opt.kwargs_json.empty()) {
        auto kw = jinja::parse_json(opt.kwargs_json, lim);
        if (!kw)
            return error{errc::invalid_argument, "chat_template_kwargs: " + kw.error().message};
        if (kw->k != jinja::kind::dict)
            return error{errc::invalid_argument, "chat_template_kwargs must be a JSON object"};
        for (const auto& [k, v] : kw->obj->items)
            if (!reserved(k))
                vars.set(k, v);
    }
    jinja::array msgs;
    for (const auto& m : messages)
        msgs.push_back(message_value(m, lim));
    vars.set("messages", value::list(std::move(msgs), true));
    value tools = value::none();
    if (!opt.tools_json.empty()) {
        auto t = jinja::parse_json(opt.tools_json, lim);
        if (!t)
            return error{errc::invalid_argument, "tools: " + t.error().message};
        tools = std::move(*t);
    }
    vars.set("tools", std::move(tools));
    vars.set("documents", value::none());
    vars.set("add_generation_prompt", value::boolean(opt.add_generation_prompt));
    if (!vars.find("bos_token"))
        vars.set("bos_token", value::string(bos_));
    if (!vars.find("eos_token"))
        vars.set("eos_token", value::string(eos_));
    const auto now = opt.now != 0
                         ? opt.now
                         : std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    auto out = jinja_->render(std::move(vars), now);
    if (!out)
        return out.error();
    return markers_->mark(std::move(*out));
}

namespace {

/// Compiles `source` and renders one user message with it, so a construct this server lacks
/// fails at load rather than at the first request.
result<chat_formatter> try_template(std::string_view source, const std::string& bos,
                                    const std::string& eos, const jinja::limits& lim,
                                    std::vector<std::string> markers) {
    auto f = chat_formatter::jinja(source, bos, eos, lim, std::move(markers));
    if (!f)
        return f.error();
    auto probe = f->render({{"user", "Hello"}}, {});
    if (!probe && probe.error().value() == errc::unsupported)
        return probe.error();
    return f;
}

result<std::string> read_template_file(const std::string& path, std::size_t max_bytes) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return error{errc::io_error, "cannot open the chat template file " + path};
    std::string text;
    text.resize(max_bytes + 1);
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    if (in.bad())
        return error{errc::io_error, "cannot read the chat template file " + path};
    if (text.size() > max_bytes)
        return error{errc::invalid_argument, "the chat template file " + path + " is larger than " +
                                                 std::to_string(max_bytes) + " bytes"};
    return text;
}

} // namespace

result<chat_template_choice> choose_chat_template(std::optional<std::string_view> gguf_template,
                                                  std::string bos_token, std::string eos_token,
                                                  const chat_template_options& opt,
                                                  std::vector<std::string> markers) {
    std::string source;
    std::string origin;
    if (!opt.template_file.empty()) {
        auto text = read_template_file(opt.template_file, opt.limits.max_template_bytes);
        if (!text)
            return text.error();
        source = std::move(*text);
        origin = "file " + opt.template_file;
    } else if (!gguf_template) {
        return chat_template_choice{chat_formatter::builtin(chat_template::bitnet),
                                    "built-in BitNet form (the model has no chat template)",
                                    {}};
    } else if (*gguf_template == placeholder) {
        return chat_template_choice{
            chat_formatter::builtin(chat_template::bitnet), "built-in BitNet form",
            "the model's chat template is bitnet.cpp's converter placeholder (Human: ... "
            "BITNETAssistant:), which BitNet models were not trained on; chat requests use the "
            "built-in BitNet form"};
    } else {
        source = std::string(*gguf_template);
        origin = "the model file";
    }
    auto f = try_template(source, bos_token, eos_token, opt.limits, std::move(markers));
    if (f)
        return chat_template_choice{std::move(*f), origin, {}};
    if (!opt.fallback_on_error)
        return error{f.error().value(), "chat template from " + origin + ": " + f.error().message};
    const auto form = recognise_chat_template(source).tmpl;
    const char* name = form == chat_template::llama3 ? "Llama-3" : "BitNet";
    return chat_template_choice{
        chat_formatter::builtin(form), std::string("built-in ") + name + " form (fallback)",
        "chat template from " + origin + " cannot be used (" + f.error().message +
            "); chat requests use the built-in " + name + " form instead"};
}

result<chat_template_choice> load_chat_template(const gguf_file& file, const tokenizer& tok,
                                                const chat_template_options& opt) {
    auto text_of = [&](std::optional<std::int32_t> id) {
        return id ? std::string(tok.token_text(*id)) : std::string();
    };
    std::optional<std::string_view> tmpl;
    auto stored = file.get_string("tokenizer.chat_template");
    if (stored)
        tmpl = *stored;
    return choose_chat_template(tmpl, text_of(tok.bos()), text_of(tok.eos()), opt,
                                control_token_texts(tok));
}

std::vector<std::string> control_token_texts(const tokenizer& tok) {
    std::vector<std::string> out;
    for (std::int32_t id = 0; id < tok.n_vocab(); ++id)
        if (const auto t = tok.type_of(id);
            t == token_type::control || t == token_type::user_defined)
            out.emplace_back(tok.token_text(id));
    return out;
}

} // namespace bitnet::model
