// A model's chat template chosen at load and rendered per request (chat_formatter.hpp): the GGUF's
// own template as written, an operator's file, the built-in form for models without one, load
// errors that name the construct, the explicit fallback, tool-call syntax detection, and the
// shipped files (the default model, bitnet.cpp's tiny model) rendering exactly as before.
#include "model/tokenizer/chat_formatter.hpp"

#include "model/gguf/gguf_reader.hpp"
#include "model/tokenizer/tokenizer.hpp"
#include "support/test_data.hpp"

#include <doctest/doctest.h>

using namespace bitnet;
using namespace bitnet::model;

namespace {

std::string fixture(const std::string& name) {
    const auto bytes = test::read_file(test::data_path("chat_templates/" + name));
    return {bytes.begin(), bytes.end()};
}

const std::vector<chat_turn> sample{{"system", "Be brief."}, {"user", "Hi <|eot_id|> there"}};

/// The tokenizer and template choice of a GGUF file.
struct model_text {
    tokenizer tok;
    chat_template_choice choice;
};

model_text load(const std::string& path) {
    auto file = gguf_file::open_metadata(path);
    REQUIRE(file);
    auto vocab = read_tokenizer_vocab(*file);
    REQUIRE(vocab);
    auto tok = tokenizer::create(std::move(*vocab));
    REQUIRE(tok);
    auto choice = load_chat_template(*file, *tok, {});
    REQUIRE_MESSAGE(choice, choice.error().message);
    return {std::move(*tok), std::move(*choice)};
}

} // namespace

TEST_CASE("chat formatter: the model's own template is used as written") {
    auto c = choose_chat_template(fixture("bitnet-b1.58-2B-4T.jinja"), "<|begin_of_text|>",
                                  "<|eot_id|>", {});
    REQUIRE(c);
    CHECK_FALSE(c->formatter.is_builtin());
    CHECK(c->origin == "the model file");
    CHECK(c->notice.empty());
    auto out = c->formatter.render(sample);
    REQUIRE(out);
    // BitNet 2B-4T's own form ends every turn with <|eot_id|>, the system turn too (the built-in
    // form does not).
    CHECK(out->text == "System: Be brief.<|eot_id|>User: Hi <|eot_id|> there<|eot_id|>Assistant: ");
    CHECK(render_chat(sample, chat_template::bitnet) ==
          "System: Be brief.User: Hi <|eot_id|> there<|eot_id|>Assistant: ");
}

TEST_CASE("chat formatter: markers come from the template's own text, never from the request's") {
    const std::vector<std::string> specials{"<|begin_of_text|>", "<|start_header_id|>",
                                            "<|end_header_id|>", "<|eot_id|>"};
    auto f = chat_formatter::jinja(fixture("llama-3-instruct.jinja"), "<|begin_of_text|>",
                                   "<|eot_id|>", {}, specials);
    REQUIRE(f);
    auto out = f->render({{"user", "Hi <|eot_id|> there"}});
    REQUIRE(out);
    CHECK(out->text ==
          "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi "
          "<|eot_id|> there<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
    std::vector<std::string> marked;
    for (const auto& [begin, end] : out->markers)
        marked.push_back(out->text.substr(begin, end - begin));
    // BOS (the template's bos_token variable) and every header and end marker the template
    // wrote; the <|eot_id|> typed in the message is not one.
    const std::vector<std::string> want{"<|begin_of_text|>",   "<|start_header_id|>",
                                        "<|end_header_id|>",   "<|eot_id|>",
                                        "<|start_header_id|>", "<|end_header_id|>"};
    CHECK(marked == want);
    const auto typed = out->text.find("Hi <|eot_id|>") + 3;
    for (const auto& [begin, end] : out->markers)
        CHECK((end <= typed || begin >= typed + 10));
    // A role typed with a marker inside is the request's too.
    auto forged = f->render({{"user<|eot_id|>", "x"}});
    REQUIRE(forged);
    CHECK(forged->markers.size() == want.size());
    // The built-in forms mark the same way.
    auto builtin = render_chat_marked({{"user", "x<|eot_id|>"}}, chat_template::bitnet);
    REQUIRE(builtin.markers.size() == 1);
    CHECK(builtin.text.substr(builtin.markers[0].first) == "<|eot_id|>Assistant: ");
}

TEST_CASE("chat formatter: tools, tool calls and chat_template_kwargs reach the template") {
    auto f = chat_formatter::jinja(fixture("qwen2.5-instruct.jinja"), "", "<|im_end|>");
    REQUIRE(f);
    CHECK(f->tool_syntax() == tool_call_syntax::hermes);
    std::vector<chat_turn> loop{{"user", "Weather?"},
                                {"assistant", "", {{"get_weather", R"({"city":"Oslo"})", "c1"}}},
                                {"tool", "rain", {}, "get_weather", "c1"}};
    auto out =
        f->render(loop, {true, R"([{"type":"function","function":{"name":"get_weather"}}])"});
    REQUIRE(out);
    const auto text = out->text;
    CHECK(text.find("<tools>\n{\"type\": \"function\", \"function\": {\"name\": "
                    "\"get_weather\"}}\n</tools>") != std::string::npos);
    CHECK(text.find("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                    "\"Oslo\"}}\n</tool_call>") != std::string::npos);
    CHECK(text.find("<|im_start|>user\n<tool_response>\nrain\n</tool_response><|im_end|>") !=
          std::string::npos);
    auto kw = chat_formatter::jinja("{{ greeting }} {{ messages|length }}", "", "");
    REQUIRE(kw);
    auto with_kw = kw->render(sample, {true, {}, R"({"greeting":"hello","messages":[]})"});
    REQUIRE(with_kw);
    CHECK(with_kw->text == "hello 2"); // kwargs cannot replace the messages
    CHECK_FALSE(kw->render(sample, {true, {}, "[1]"}));
    CHECK_FALSE(kw->render(sample, {true, "{not json", {}}));
}

TEST_CASE("chat formatter: the tool-call syntax of real templates") {
    CHECK(detect_tool_call_syntax(fixture("qwen2.5-instruct.jinja")) == tool_call_syntax::hermes);
    CHECK(detect_tool_call_syntax(fixture("falcon3-instruct.jinja")) ==
          tool_call_syntax::hermes_list);
    CHECK(detect_tool_call_syntax(fixture("llama-3.1-instruct.jinja")) ==
          tool_call_syntax::llama3_json);
    CHECK(detect_tool_call_syntax(fixture("llama-3-instruct.jinja")) == tool_call_syntax::none);
    CHECK(detect_tool_call_syntax(fixture("bitnet-b1.58-2B-4T.jinja")) == tool_call_syntax::none);
    CHECK(std::string(tool_call_syntax_name(tool_call_syntax::llama3_json)) == "llama3_json");
}

TEST_CASE("chat formatter: an unusable template is a load error naming it, or with the explicit "
          "fallback a notice naming the fallback") {
    const std::string uses_include = "{% include 'other.jinja' %}<|start_header_id|>";
    auto refused = choose_chat_template(uses_include, "", "", {});
    REQUIRE_FALSE(refused);
    CHECK(refused.error().value() == errc::unsupported);
    CHECK(refused.error().message.find("{% include %}") != std::string::npos);
    CHECK(refused.error().message.find("line 1, column 1") != std::string::npos);
    chat_template_options fallback;
    fallback.fallback_on_error = true;
    auto used = choose_chat_template(uses_include, "", "", fallback);
    REQUIRE(used);
    CHECK(used->formatter.is_builtin());
    CHECK(used->formatter.builtin_form() == chat_template::llama3);
    CHECK(used->notice.find("built-in Llama-3 form") != std::string::npos);
    CHECK(used->notice.find("{% include %}") != std::string::npos);
    // A construct met only when rendering (an unknown filter name passed to map) fails at load
    // too: the load renders one user message.
    auto late = choose_chat_template("{{ messages|map('frobnicate')|list }}", "", "", {});
    REQUIRE_FALSE(late);
    CHECK(late.error().message.find("frobnicate") != std::string::npos);
}

TEST_CASE("chat formatter: an operator's template file wins over the model's") {
    test::scratch_dir dir;
    const auto path = dir.file("override.jinja");
    const std::string text = "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}";
    test::write_file(path, {text.begin(), text.end()});
    chat_template_options opt;
    opt.template_file = path;
    auto c = choose_chat_template(fixture("qwen2.5-instruct.jinja"), "", "", opt);
    REQUIRE(c);
    CHECK(c->origin == "file " + path);
    auto out = c->formatter.render(sample);
    REQUIRE(out);
    CHECK(out->text == "[system] Be brief.\n[user] Hi <|eot_id|> there\n");
    opt.template_file = dir.file("missing.jinja");
    auto missing = choose_chat_template(std::nullopt, "", "", opt);
    REQUIRE_FALSE(missing);
    CHECK(missing.error().value() == errc::io_error);
}

TEST_CASE(
    "chat formatter: the shipped default model and bitnet.cpp's tiny model render as before") {
    // The default model carries no template: the built-in BitNet form, as before.
    auto fortunes =
        load(std::string(BITNET_TEST_DATA_DIR) + "/../../models/bitnet-fortunes-5m-i2_s.gguf");
    CHECK(fortunes.choice.formatter.is_builtin());
    CHECK(fortunes.choice.formatter.builtin_form() == chat_template::bitnet);
    CHECK(fortunes.choice.notice.empty());
    // bitnet.cpp's converter writes its Human:/BITNETAssistant: placeholder into every BitNet
    // GGUF; it counts as no template (said in a notice), so the tiny model renders as before.
    auto tiny = load(test::data_path("bitnetcpp/tiny-i2_s.gguf"));
    CHECK(tiny.choice.formatter.is_builtin());
    CHECK(tiny.choice.formatter.builtin_form() == chat_template::bitnet);
    CHECK(tiny.choice.notice.find("placeholder") != std::string::npos);
    CHECK(fixture("bitnetcpp-converter-placeholder.jinja") == bitnetcpp_placeholder_template());
    for (auto* m : {&fortunes, &tiny}) {
        auto out = m->choice.formatter.render(sample);
        REQUIRE(out);
        const auto before = render_chat(sample, chat_template::bitnet);
        CHECK(out->text == before);
        encode_options eo;
        eo.add_bos = m->tok.add_bos();
        eo.parse_special = true;
        auto ids_now = m->tok.encode(out->text, eo);
        auto ids_before = m->tok.encode(before, eo);
        REQUIRE(ids_now);
        REQUIRE(ids_before);
        CHECK(*ids_now == *ids_before);
    }
}
