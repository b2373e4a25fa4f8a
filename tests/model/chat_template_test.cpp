// Chat templates (model/tokenizer/chat_template.hpp): the BitNet and Llama-3 forms, and recognising
// a GGUF's Jinja template as one of them.
#include "model/tokenizer/chat_template.hpp"

#include <doctest/doctest.h>

using namespace bitnet::model;

TEST_CASE("chat templates: BitNet and Llama-3 forms") {
    std::vector<chat_turn> m{{"system", "S"}, {"user", "U"}, {"assistant", "A"}, {"user", "V"}};
    CHECK(render_chat(m, chat_template::bitnet) ==
          "System: SUser: U<|eot_id|>Assistant: AUser: V<|eot_id|>Assistant: ");
    CHECK(render_chat({{"user", "hi"}}, chat_template::llama3) ==
          "<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"
          "<|start_header_id|>assistant<|end_header_id|>\n\n");
    auto l3 = recognise_chat_template(
        "{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>{% endfor %}");
    CHECK(l3.known);
    CHECK(l3.tmpl == chat_template::llama3);
    auto bn = recognise_chat_template("{{ 'User: ' + m.content + '<|eot_id|>Assistant: ' }}");
    CHECK(bn.known);
    CHECK(bn.tmpl == chat_template::bitnet);
    auto unknown = recognise_chat_template("{{ m.content }}");
    CHECK_FALSE(unknown.known);
    CHECK(unknown.tmpl == chat_template::bitnet);
}

TEST_CASE("chat templates: tool calls and results, Llama 3.1's form and the BitNet fallback") {
    std::vector<chat_turn> m{{"user", "Weather?"},
                             {"assistant", "", {{"get_weather", R"({"city":"Paris"})"}}},
                             {"tool", "sunny", {}, "get_weather"},
                             {"assistant", "Let me check two.", {{"f", "{}"}, {"g", ""}}}};
    CHECK(render_chat(m, chat_template::llama3) ==
          "<|start_header_id|>user<|end_header_id|>\n\nWeather?<|eot_id|>"
          "<|start_header_id|>assistant<|end_header_id|>\n\n"
          "{\"name\": \"get_weather\", \"parameters\": {\"city\":\"Paris\"}}<|eot_id|>"
          "<|start_header_id|>ipython<|end_header_id|>\n\nsunny<|eot_id|>"
          "<|start_header_id|>assistant<|end_header_id|>\n\nLet me check two.\n"
          "{\"name\": \"f\", \"parameters\": {}}\n{\"name\": \"g\", \"parameters\": {}}<|eot_id|>"
          "<|start_header_id|>assistant<|end_header_id|>\n\n");
    CHECK(render_chat(m, chat_template::bitnet) ==
          "User: Weather?<|eot_id|>Assistant: "
          "{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Paris\"}}"
          "User: Tool result (get_weather): sunny<|eot_id|>Assistant: "
          "Let me check two.\n{\"name\": \"f\", \"arguments\": {}}\n"
          "{\"name\": \"g\", \"arguments\": {}}");
}
