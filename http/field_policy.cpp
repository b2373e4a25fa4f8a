#include "http/field_policy.hpp"

#include <boost/json.hpp>

#include <algorithm>

namespace bitnet::http {

namespace json = boost::json;

namespace {

constexpr std::string_view yes = "yes";
constexpr std::string_view ignored = "ignored";
constexpr std::string_view refused = "400";
constexpr std::string_view none = "–";

/// Columns: native, completions, chat, Responses, Messages. Sorted by name (checked at start).
constexpr std::array k_rules{
    field_rule{"add_bos", {yes, yes, yes, none, none}, "prepend the BOS token to a text prompt"},
    field_rule{"audio", {none, none, refused, none, none}, "no audio output"},
    field_rule{"background",
               {none, none, none, "400 unless false", none},
               "no background responses: a reply is made while the request waits"},
    field_rule{"best_of", {none, "400 unless 1", none, none, none}, "no best-of; use n"},
    field_rule{"cache_control",
               {none, none, none, none, ignored},
               "prompt caching is automatic here (\"Automatic prefix caching\")"},
    field_rule{"cache_prompt",
               {ignored, ignored, ignored, none, none},
               "llama.cpp's hint; prompt caching is automatic here"},
    field_rule{"cache_salt", {yes, yes, yes, yes, yes}, "narrows the prefix-cache scope"},
    field_rule{"chat_template",
               {none, none, refused, none, none},
               "the model's own template (or the operator's chat_template_file) renders every "
               "chat"},
    field_rule{"chat_template_kwargs",
               {none, none, yes, none, none},
               "extra variables for the model's Jinja chat template (vLLM's and llama.cpp's "
               "field)"},
    field_rule{"compaction", {none, none, none, none, refused}, "no context compaction"},
    field_rule{"container", {none, none, none, none, refused}, "no code execution container"},
    field_rule{"context_management",
               {none, none, none, refused, refused},
               "no context editing: the whole conversation is the prompt"},
    field_rule{"continue_final_message",
               {none, none, "400 unless false", none, none},
               "the assistant's last turn is not continued"},
    field_rule{"conversation",
               {none, none, none, refused, none},
               "no Conversations API; use previous_response_id"},
    field_rule{"documents", {none, none, refused, none, none}, "no document rendering"},
    field_rule{"echo",
               {"400 unless false", yes, "400 unless false", none, none},
               "the prompt comes back on /v1/completions only"},
    field_rule{"frequency_penalty", {yes, yes, yes, none, none}, "OpenAI's, -2..2"},
    field_rule{"function_call",
               {none, none, refused, none, none},
               "deprecated by OpenAI; use tools and tool_choice"},
    field_rule{"functions",
               {none, none, refused, none, none},
               "deprecated by OpenAI; use tools and tool_choice"},
    field_rule{"guided_choice", {yes, yes, yes, none, none}, "vLLM's: the reply is one of them"},
    field_rule{"guided_decoding_backend",
               {ignored, ignored, ignored, none, none},
               "one backend here (model/constrain)"},
    field_rule{"guided_grammar",
               {refused, refused, refused, none, none},
               "no grammar formats; use guided_regex or a JSON schema"},
    field_rule{"guided_json", {yes, yes, yes, none, none}, "vLLM's: a JSON schema"},
    field_rule{
        "guided_regex", {yes, yes, yes, none, none}, "vLLM's: the whole reply matches the regex"},
    field_rule{"guided_whitespace_pattern",
               {refused, refused, refused, none, none},
               "structured output is written without whitespace"},
    field_rule{"ignore_eos", {yes, yes, yes, none, none}, "the model's EOS is never drawn"},
    field_rule{"include",
               {none, none, none, "400 unless []", none},
               "no extra output data (logprobs, reasoning, search results)"},
    field_rule{"include_stop_str_in_output",
               {"400 unless false", "400 unless false", "400 unless false", none, none},
               "a stop string never reaches the text"},
    field_rule{"inference_geo", {none, none, none, none, ignored}, "one place: this server"},
    field_rule{"input", {none, none, none, yes, none}, "the Responses prompt"},
    field_rule{"instructions", {none, none, none, yes, none}, "a system message"},
    field_rule{"json_schema", {yes, none, none, none, none}, "the native structured output"},
    field_rule{"length_penalty",
               {"400 unless 1", "400 unless 1", "400 unless 1", none, none},
               "no beam search"},
    field_rule{"logit_bias", {yes, yes, yes, none, none}, "token id to -100..100"},
    field_rule{"logprobs", {yes, yes, yes, none, none}, "the chosen tokens' log-probabilities"},
    field_rule{"max_completion_tokens", {none, yes, yes, none, none}, "same as max_tokens"},
    field_rule{"max_output_tokens", {none, none, none, yes, none}, "the most tokens to generate"},
    field_rule{"max_tokens", {yes, yes, yes, none, yes}, "the most tokens to generate"},
    field_rule{"max_tool_calls",
               {none, none, none, refused, none},
               "a forced turn holds up to 8 calls; no other bound"},
    field_rule{"mcp_servers", {none, none, none, none, refused}, "no MCP connector"},
    field_rule{"messages", {none, none, yes, none, yes}, "the chat"},
    field_rule{"metadata",
               {none, none, ignored, ignored, ignored},
               "labels for the caller's own records; not kept"},
    field_rule{"min_p", {yes, yes, yes, none, none}, "llama.cpp's min-p filter"},
    field_rule{"min_tokens",
               {yes, yes, yes, none, none},
               "EOS and stop ids held back until that many tokens"},
    field_rule{"modalities", {none, none, "400 unless [\"text\"]", none, none}, "text output only"},
    field_rule{"model", {yes, yes, yes, yes, yes}, "a served alias"},
    field_rule{"moderation", {none, none, refused, refused, none}, "no moderation"},
    field_rule{"n", {"400 unless 1", yes, yes, none, none}, "several choices from one prompt"},
    field_rule{"output_config",
               {none, none, none, none, yes},
               "format (json_schema) served; effort refused"},
    field_rule{
        "output_format", {none, none, none, none, yes}, "the beta name of output_config.format"},
    field_rule{
        "parallel_tool_calls", {none, none, yes, yes, none}, "several calls in one forced turn"},
    field_rule{"prediction", {none, none, refused, none, none}, "no predicted outputs"},
    field_rule{"presence_penalty", {yes, yes, yes, none, none}, "OpenAI's, -2..2"},
    field_rule{"previous_response_id",
               {none, none, none, yes, none},
               "a stored reply's conversation first"},
    field_rule{"priority", {yes, yes, yes, yes, yes}, "high, normal or low"},
    field_rule{"prompt",
               {yes, yes, none, refused, none},
               "the prompt (Responses: no stored prompt templates)"},
    field_rule{"prompt_cache_key",
               {none, none, ignored, ignored, none},
               "prompt caching is automatic here"},
    field_rule{"prompt_cache_retention",
               {none, none, ignored, ignored, none},
               "prompt caching is automatic here"},
    field_rule{"prompt_logprobs",
               {refused, refused, refused, none, none},
               "use echo with logprobs on /v1/completions"},
    field_rule{"reasoning", {none, none, none, "400 unless {}", none}, "the model does not reason"},
    field_rule{"reasoning_effort", {none, none, refused, none, none}, "the model does not reason"},
    field_rule{"repetition_penalty", {yes, yes, yes, none, none}, "llama.cpp's, over 64 tokens"},
    field_rule{"request_id",
               {ignored, ignored, ignored, none, none},
               "requests are named by the server (X-Request-Id)"},
    field_rule{"response_format", {none, yes, yes, none, none}, "json_object or json_schema"},
    field_rule{"return_tokens_as_token_ids",
               {"400 unless false", "400 unless false", "400 unless false", none, none},
               "tokens come as text"},
    field_rule{"safety_identifier",
               {none, none, ignored, ignored, none},
               "labels for the caller's own records; not kept"},
    field_rule{"seed", {yes, yes, yes, none, none}, "seeded sampling"},
    field_rule{"service_tier", {none, none, ignored, ignored, ignored}, "one tier: this server"},
    field_rule{"skip_special_tokens",
               {"400 unless true", "400 unless true", "400 unless true", none, none},
               "special tokens never reach the text"},
    field_rule{"spaces_between_special_tokens",
               {ignored, ignored, ignored, none, none},
               "special tokens never reach the text"},
    field_rule{"speculative", {yes, yes, yes, yes, yes}, "auto or off; the output is the same"},
    field_rule{"speed", {none, none, none, none, ignored}, "one speed: this server's"},
    field_rule{"stop", {yes, yes, yes, none, none}, "stop strings"},
    field_rule{"stop_sequences", {none, none, none, none, yes}, "stop strings"},
    field_rule{"stop_token_ids", {yes, yes, yes, none, none}, "stop tokens"},
    field_rule{"store",
               {none, none, ignored, yes, none},
               "Responses: keep the reply; chat: nothing is kept"},
    field_rule{"stream",
               {yes, yes, yes, yes, yes},
               "native: must agree with the route (POST /v1/inference/stream streams)"},
    field_rule{"stream_options",
               {none, yes, yes, ignored, none},
               "include_usage; Responses' obfuscation changes nothing here"},
    field_rule{"structured_outputs",
               {yes, yes, yes, none, none},
               "vLLM's: json, regex, choice or json_object"},
    field_rule{"suffix", {none, refused, none, none, none}, "no insertion"},
    field_rule{"system", {none, none, none, none, yes}, "a system message"},
    field_rule{"temperature", {yes, yes, yes, yes, yes}, "0 = greedy"},
    field_rule{"text", {none, none, none, yes, none}, "text.format: structured output"},
    field_rule{"thinking",
               {none, none, none, none, "400 unless {\"type\":\"disabled\"}"},
               "the model does not think"},
    field_rule{"thread",
               {none, none, none, none, yes},
               "a message thread: create, or continue from a stored reply"},
    field_rule{"timeout_ms",
               {yes, yes, yes, yes, yes},
               "the request's deadline (an error past it, below)"},
    field_rule{
        "token_logprob", {yes, none, none, none, none}, "whether stream events carry logprobs"},
    field_rule{"tool_choice",
               {none, none, yes, yes, yes},
               "a forcing choice makes a call; auto: the model may open one"},
    field_rule{"tools", {none, none, yes, yes, yes}, "function tools; [] means none"},
    field_rule{"top_k", {yes, yes, yes, none, yes}, "Messages: -1 means off"},
    field_rule{"top_logprobs", {none, none, yes, "400 unless 0", none}, "alternatives per token"},
    field_rule{"top_p", {yes, yes, yes, yes, yes}, "nucleus sampling; Messages: -1 means off"},
    field_rule{"truncate_prompt_tokens",
               {refused, refused, refused, none, none},
               "a prompt past the context is a 400, never cut"},
    field_rule{"truncation",
               {none, none, none, "400 unless \"disabled\"", none},
               "a prompt past the context is a 400, never cut"},
    field_rule{"typical_p",
               {"400 unless 1", "400 unless 1", "400 unless 1", none, none},
               "no typical sampling"},
    field_rule{"use_beam_search",
               {"400 unless false", "400 unless false", "400 unless false", none, none},
               "no beam search"},
    field_rule{"user",
               {none, ignored, ignored, ignored, none},
               "labels for the caller's own records; not kept"},
    field_rule{"verbosity", {none, none, refused, none, none}, "no verbosity control"},
    field_rule{"web_search_options", {none, none, refused, none, none}, "no web search"},
};

/// Whether `v` is the value `want` (JSON text) names: numbers by value, objects member by
/// member (the same names, each equal), the rest as JSON.
bool same_value(const json::value& v, const json::value& want) {
    if (v.is_number() && want.is_number())
        return v.to_number<double>() == want.to_number<double>();
    if (v.is_object() && want.is_object()) {
        const auto& a = v.get_object();
        const auto& b = want.get_object();
        if (a.size() != b.size())
            return false;
        for (const auto& m : b) {
            const auto* x = a.if_contains(m.key());
            if (!x || !same_value(*x, m.value()))
                return false;
        }
        return true;
    }
    return v == want;
}

const field_rule* rule_of(std::string_view name) {
    const auto it =
        std::lower_bound(k_rules.begin(), k_rules.end(), name,
                         [](const field_rule& r, std::string_view n) { return r.name < n; });
    return it != k_rules.end() && it->name == name ? &*it : nullptr;
}

api_error field_error(std::string_view name, std::string message, const char* code) {
    auto e = invalid_value(std::string(name), std::move(message));
    e.code = code;
    e.suggestion = "README.md, \"Request fields\", lists what each route takes";
    return e;
}

} // namespace

std::span<const field_rule> field_rules() {
    static_assert(k_rules.size() > 0);
    return k_rules;
}

std::optional<api_error> check_request_fields(api_family family, const json::object& body) {
    const auto col = static_cast<std::size_t>(family);
    for (const auto& m : body) {
        if (m.value().is_null())
            continue;
        const std::string_view name = m.key();
        const auto* r = rule_of(name);
        const std::string_view cell = r ? r->cells[col] : none;
        if (cell == yes || cell == ignored)
            continue;
        if (cell == none)
            return field_error(name, "'" + std::string(name) + "' is not a field of this route",
                               "unknown_parameter");
        constexpr std::string_view unless = "400 unless ";
        if (cell.substr(0, unless.size()) == unless) {
            boost::system::error_code ec;
            const auto want = json::parse(cell.substr(unless.size()), ec);
            if (!ec && same_value(m.value(), want))
                continue;
            return field_error(name,
                               "'" + std::string(name) + "' is not served here unless it is " +
                                   std::string(cell.substr(unless.size())) + ": " +
                                   std::string(r->note),
                               "unsupported_parameter");
        }
        return field_error(
            name, "'" + std::string(name) + "' is not served here: " + std::string(r->note),
            "unsupported_parameter");
    }
    return std::nullopt;
}

} // namespace bitnet::http
