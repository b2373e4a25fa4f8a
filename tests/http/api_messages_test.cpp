// Chat messages as SDKs send them in a tool loop (http/api_messages.hpp): roles developer and
// tool, assistant content null with tool_calls, content as text parts; and the 400s that name
// the message and what is wrong with it.
#include "http/api_json.hpp"

#include <doctest/doctest.h>

using namespace bitnet;
using namespace bitnet::http;

namespace {

std::vector<msg::chat_message> messages_of(std::string_view messages) {
    const auto body = std::string(R"({"messages":)") + std::string(messages) + "}";
    auto r = parse_inference(body, api_family::chat);
    if (auto* e = std::get_if<api_error>(&r))
        FAIL(e->message);
    return std::get<inference_input>(r).messages;
}

std::string error_of(std::string_view messages) {
    const auto body = std::string(R"({"messages":)") + std::string(messages) + "}";
    auto r = parse_inference(body, api_family::chat);
    REQUIRE(std::holds_alternative<api_error>(r));
    const auto& e = std::get<api_error>(r);
    CHECK(e.status == 400);
    CHECK(e.param == "messages");
    return e.message;
}

bool has(const std::string& text, std::string_view what) {
    return text.find(what) != std::string::npos;
}

} // namespace

TEST_CASE("chat messages: a tool loop's second turn as the OpenAI SDK sends it") {
    const auto m = messages_of(R"([
        {"role":"developer","content":"Use the tools."},
        {"role":"user","content":[{"type":"text","text":"Weather in"},{"type":"text","text":"Paris?"}]},
        {"role":"assistant","content":null,"tool_calls":[
            {"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
            {"id":"call_2","type":"function","function":{"name":"get_time","arguments":{"tz":"CET"}}}]},
        {"role":"tool","tool_call_id":"call_2","content":"12:00"},
        {"role":"tool","tool_call_id":"call_1","content":[{"type":"text","text":"sunny"}]},
        {"role":"tool","tool_call_id":"call_9","name":"other","content":"x"}])");
    REQUIRE(m.size() == 6);
    CHECK(m[0].role == "system");
    CHECK(m[0].content == "Use the tools.");
    CHECK(m[1].role == "user");
    CHECK(m[1].content == "Weather in\nParis?");
    CHECK(m[2].role == "assistant");
    CHECK(m[2].content.empty());
    REQUIRE(m[2].tool_calls.size() == 2);
    CHECK(m[2].tool_calls[0].id == "call_1");
    CHECK(m[2].tool_calls[0].name == "get_weather");
    CHECK(m[2].tool_calls[0].arguments == R"({"city":"Paris"})");
    CHECK(m[2].tool_calls[1].arguments == R"({"tz":"CET"})"); // an object, taken as it is
    // A result names the function of the call it answers, else its own "name".
    CHECK(m[3].role == "tool");
    CHECK(m[3].tool_call_id == "call_2");
    CHECK(m[3].name == "get_time");
    CHECK(m[4].name == "get_weather");
    CHECK(m[4].content == "sunny");
    CHECK(m[5].name == "other");
    // An assistant reply with text and no calls stays as it was.
    const auto plain = messages_of(R"([{"role":"user","content":"hi"},
                                       {"role":"assistant","content":"hello"}])");
    CHECK(plain[1].content == "hello");
    CHECK(plain[1].tool_calls.empty());
}

TEST_CASE("chat messages: what is refused names the message and the problem") {
    CHECK(
        has(error_of(R"([{"role":"robot","content":"x"}])"), "messages[0]: unknown role 'robot'"));
    CHECK(has(error_of(R"([{"role":"user","content":"x"},{"role":"function","content":"x"}])"),
              "messages[1]: unknown role 'function'"));
    CHECK(has(error_of(R"([{"content":"x"}])"), "needs a string \"role\""));
    CHECK(has(error_of(R"([{"role":"user","content":[{"type":"image_url","image_url":{}}]}])"),
              "content part type 'image_url' is not supported"));
    CHECK(has(error_of(R"([{"role":"user","content":[{"type":"text"}]}])"),
              "content[0] needs a string \"text\""));
    CHECK(has(error_of(R"([{"role":"user","content":null}])"), "needs \"content\""));
    CHECK(has(error_of(R"([{"role":"user","content":7}])"), "a string or an array of text parts"));
    // Null content only with tool calls.
    CHECK(has(error_of(R"([{"role":"assistant","content":null}])"), "messages[0]: needs"));
    CHECK(has(error_of(R"([{"role":"tool","content":"x"}])"), "needs a string \"tool_call_id\""));
    CHECK(has(error_of(R"([{"role":"assistant","tool_calls":[{"id":"c","function":{}}]}])"),
              "each tool call needs"));
    CHECK(
        has(error_of(
                R"([{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":3}}]}])"),
            "arguments must be a JSON string"));
    std::string many = R"([{"role":"assistant","tool_calls":[)";
    for (int i = 0; i < 129; ++i)
        many += std::string(i ? "," : "") + R"({"function":{"name":"f","arguments":"{}"}})";
    many += "]}]";
    CHECK(has(error_of(many), "has 129 tool calls (at most 128)"));
    CHECK(has(error_of("[]"), "non-empty array"));
}
