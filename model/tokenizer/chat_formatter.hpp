// A model's chat template as the server uses it: the GGUF's own `tokenizer.chat_template` (or
// an operator's file) compiled once at load by the Jinja interpreter (model/jinja/) and rendered
// per request, or the built-in BitNet form when the model has no template. Rendering keeps the
// template's own text apart from what came from the request: the control markers (`<|eot_id|>`,
// `<|im_start|>`, ...) are found in the template's text only, so a marker typed in a message
// stays characters (rendered_chat's markers; the text actor encodes only those as tokens).
#pragma once

#include "common/error.hpp"
#include "model/jinja/limits.hpp"
#include "model/jinja/template.hpp"
#include "model/tokenizer/chat_template.hpp"

#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bitnet::model {

class gguf_file;
class tokenizer;

/// How a chat template writes the tool calls a model makes (what a tool-call parser looks for).
enum class tool_call_syntax {
    none,        ///< the template renders no tools
    hermes,      ///< <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call> (Hermes, Qwen2.5)
    hermes_list, ///< <tool_call>\n[{"name": ..., "arguments": {...}}, ...]\n</tool_call> (Falcon3)
    llama3_json, ///< {"name": ..., "parameters": {...}}, built-ins after <|python_tag|> (Llama 3.1)
};

/// The tool-call syntax a template's source shows (by its markers), or none.
[[nodiscard]] tool_call_syntax detect_tool_call_syntax(std::string_view jinja_source);
[[nodiscard]] const char* tool_call_syntax_name(tool_call_syntax s) noexcept;

/// Per-request rendering choices.
struct chat_render_options {
    bool add_generation_prompt = true;
    /// The request's tools as a JSON array (OpenAI's shape); empty: no tools (`tools` is None).
    std::string_view tools_json{};
    /// chat_template_kwargs as a JSON object: extra template variables (they cannot replace
    /// messages, tools, documents or add_generation_prompt). Empty: none.
    std::string_view kwargs_json{};
    /// What strftime_now() formats; 0: the current time.
    std::time_t now = 0;
};

/// A model's chat template: immutable once built, cheap to copy, safe to render from any thread.
class chat_formatter {
public:
    /// The built-in form (a model without a usable template).
    [[nodiscard]] static chat_formatter builtin(chat_template form);
    /// A Jinja template, compiled. `bos_token`/`eos_token` are the texts of those tokens.
    /// `markers`: the texts of the vocabulary's control (and user-defined) tokens, found in the
    /// template's own output as rendered_chat's markers.
    [[nodiscard]] static result<chat_formatter> jinja(std::string_view source,
                                                      std::string bos_token, std::string eos_token,
                                                      const jinja::limits& lim = {},
                                                      std::vector<std::string> markers = {});

    /// Renders `messages`. Errors carry the template's message (invalid_argument: e.g. its own
    /// raise_exception, bad tools/kwargs JSON; unsupported: a construct met only now). The
    /// built-in forms ignore tools and kwargs, and always end with the generation prompt.
    [[nodiscard]] result<rendered_chat> render(const std::vector<chat_turn>& messages,
                                               const chat_render_options& opt = {}) const;

    [[nodiscard]] bool is_builtin() const noexcept { return !jinja_; }
    [[nodiscard]] chat_template builtin_form() const noexcept { return form_; }
    /// The Jinja source (empty for a built-in form).
    [[nodiscard]] const std::string& source() const noexcept;
    [[nodiscard]] const std::string& bos_token() const noexcept { return bos_; }
    [[nodiscard]] tool_call_syntax tool_syntax() const noexcept { return tools_; }

private:
    chat_template form_ = chat_template::bitnet;
    struct marker_set;
    std::shared_ptr<const jinja::compiled_template> jinja_;
    std::shared_ptr<const marker_set> markers_;
    std::string bos_, eos_;
    tool_call_syntax tools_ = tool_call_syntax::none;
};

/// How a model's template is chosen at load.
struct chat_template_options {
    /// A Jinja file used instead of the GGUF's template ("" = none).
    std::string template_file;
    /// A template that cannot be used: the built-in form (BitNet, or Llama-3 for a template
    /// with Llama-3 headers) with a notice naming it, instead of a load error.
    bool fallback_on_error = false;
    jinja::limits limits{};
};

/// The chosen template, where it came from, and what to log (a warning) when not empty.
struct chat_template_choice {
    chat_formatter formatter;
    std::string origin; ///< "the model file", "file PATH", "built-in BitNet form", ...
    std::string notice;
};

/// Chooses from the GGUF's template text (nullopt: none) and `opt`: an operator's file, else
/// the GGUF's template as written, else the built-in BitNet form. bitnet.cpp's converter
/// placeholder (`Human: ... BITNETAssistant: `, which no BitNet model was trained on) counts as
/// no template, with a notice. A template that fails to compile, or to render one user message
/// because of a construct this server lacks, is an error naming it (or, with
/// fallback_on_error, the fallback and a notice).
[[nodiscard]] result<chat_template_choice>
choose_chat_template(std::optional<std::string_view> gguf_template, std::string bos_token,
                     std::string eos_token, const chat_template_options& opt,
                     std::vector<std::string> markers = {});

/// The texts of `tok`'s control and user-defined tokens: what a template's output may hold as
/// markers.
[[nodiscard]] std::vector<std::string> control_token_texts(const tokenizer& tok);

/// choose_chat_template for a GGUF file and its tokenizer (BOS/EOS texts from the vocabulary).
[[nodiscard]] result<chat_template_choice>
load_chat_template(const gguf_file& file, const tokenizer& tok, const chat_template_options& opt);

/// The chat template bitnet.cpp's convert-ms-to-gguf-bitnet.py writes into every BitNet GGUF.
[[nodiscard]] std::string_view bitnetcpp_placeholder_template() noexcept;

} // namespace bitnet::model
