// A model's own chat template on the real binary: a GGUF whose tokenizer.chat_template is a Jinja
// template renders every chat with it (POST /apply-template shows the text, chat completions
// count its tokens), the request's tools and chat_template_kwargs reach it, a control token typed
// in a message stays characters, an operator's template file replaces the model's, and a template
// using a construct the interpreter lacks fails the load naming it.
#include "server/model_admin.hpp"

using namespace bitnet;
using test::load_and_wait;

namespace {

/// Llama 3's layout with two switches a request controls: `tools` (names listed) and a
/// chat_template_kwargs variable `think`.
constexpr const char* k_template =
    "{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n"
    "{{ m.content }}<|eot_id|>{% endfor %}{% if tools %}Tools: {{ tools | "
    "map(attribute='function') | map(attribute='name') | join(', ') }}<|eot_id|>{% endif %}{% if "
    "add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% if think "
    "%}<think>{% endif %}{% endif %}";

std::string write_template(const test::scratch_dir& dir, const std::string& name,
                           const std::string& text) {
    const auto path = dir.file(name);
    test::write_file(path, {text.begin(), text.end()});
    return path;
}

std::string chat_body(const std::string& messages, const std::string& extra = {}) {
    return R"({"model":"tiny","max_tokens":1,"temperature":0,"messages":)" + messages + extra + "}";
}

/// The prompt /apply-template renders for `body`.
std::string rendered(const test::server_process& s, const std::string& body) {
    auto r = s.post("/apply-template", body);
    REQUIRE_MESSAGE(r.status == 200, r.body);
    return std::string(test::parse_object(r.body).at("prompt").as_string());
}

/// Tokens of `text` with control tokens parsed, no BOS added (the text writes its own).
std::size_t n_tokens(const test::server_process& s, const std::string& text) {
    auto r =
        s.post("/v1/tokenize", R"({"model":"tiny","add_bos":false,"parse_special":true,"text":)" +
                                   boost::json::serialize(boost::json::value(text)) + "}");
    REQUIRE_MESSAGE(r.status == 200, r.body);
    return test::parse_object(r.body).at("tokens").as_array().size();
}

std::int64_t prompt_tokens(const test::server_process& s, const std::string& body) {
    auto r = s.post("/v1/chat/completions", body);
    REQUIRE_MESSAGE(r.status == 200, r.body);
    return test::parse_object(r.body).at("usage").as_object().at("prompt_tokens").as_int64();
}

} // namespace

TEST_CASE("chat template: a model's own Jinja template renders its chats, with the request's "
          "tools and chat_template_kwargs, and typed markers stay characters") {
    test::scratch_dir dir;
    test::server_process s;
    const auto tmpl = write_template(dir, "llama3ish.jinja", k_template);
    const auto path = test::make_model(dir, "templated.gguf", "--seed 2 --chat-template " + tmpl);
    auto op = load_and_wait(s, "tiny", path);
    REQUIRE_MESSAGE(op.at("state").as_string() == "ready", boost::json::serialize(op));

    const std::string messages =
        R"([{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}])";
    const std::string want = "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
                             "Be brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n"
                             "Hi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n";
    CHECK(rendered(s, chat_body(messages)) == want);
    // The prompt that runs is that text's tokens (the template's BOS, not a second one).
    CHECK(prompt_tokens(s, chat_body(messages)) == static_cast<std::int64_t>(n_tokens(s, want)));

    // tools reach the template (unless tool_choice is "none"); chat_template_kwargs adds a
    // variable, and cannot replace messages.
    const std::string tools =
        R"(,"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}])";
    const auto with_tools = rendered(s, chat_body(messages, tools));
    CHECK(with_tools.find("Tools: get_weather<|eot_id|>") != std::string::npos);
    CHECK(rendered(s, chat_body(messages, tools + R"(,"tool_choice":"none")")) == want);
    const auto thinking =
        rendered(s, chat_body(messages, R"(,"chat_template_kwargs":{"think":true,"messages":[]})"));
    CHECK(thinking == want + "<think>");
    auto bad = s.post("/apply-template", chat_body(messages, R"(,"chat_template_kwargs":[1])"));
    CHECK(bad.status == 400);
    CHECK(bad.body.find("chat_template_kwargs") != std::string::npos);

    // A control token typed in a message is its ten characters, not a turn's end.
    const std::string typed =
        R"([{"role":"system","content":"Be brief."},{"role":"user","content":"Hi<|eot_id|>"}])";
    const auto typed_text = rendered(s, chat_body(typed));
    CHECK(prompt_tokens(s, chat_body(typed)) ==
          static_cast<std::int64_t>(n_tokens(s, typed_text)) + 9);
}

TEST_CASE("chat template: an operator's template file replaces the model's, and a template with a "
          "construct the interpreter lacks fails the load naming it") {
    test::scratch_dir dir;
    const auto file = write_template(
        dir, "operator.jinja",
        "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}[assistant] ");
    test::server_process s({"--chat-template-file", file});
    CHECK(rendered(s, chat_body(R"([{"role":"user","content":"Hi"}])")) ==
          "[user] Hi\n[assistant] ");

    test::server_process plain;
    const auto uses_include =
        write_template(dir, "include.jinja", "{% include 'other.jinja' %}{{ messages }}");
    const auto path =
        test::make_model(dir, "broken.gguf", "--seed 3 --chat-template " + uses_include);
    auto op = load_and_wait(plain, "tiny", path);
    CHECK(op.at("state").as_string() == "failed");
    CHECK(op.at("failure").as_string().find("{% include %}") != std::string::npos);
    // The serving version goes on with its template (the built-in BitNet form).
    CHECK(rendered(plain, chat_body(R"([{"role":"user","content":"Hi"}])")) ==
          "User: Hi<|eot_id|>Assistant: ");
}
