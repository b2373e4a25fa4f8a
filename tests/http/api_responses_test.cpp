// OpenAI's Responses API shapes (http/responses/api_responses.hpp): input items become the chat
// request that asks the same (instructions, messages with text parts, function calls and their
// outputs, tools, tool_choice, text.format), refusals name the Responses field, and the response
// object and output items are the Responses shapes.
#include "http/responses/api_responses.hpp"

#include <boost/json.hpp>
#include <doctest/doctest.h>

using namespace bitnet;
using namespace bitnet::http;
namespace json = boost::json;

namespace {

json::object chat_of(std::string_view body) {
    auto r = responses_as_chat(body);
    if (auto* e = std::get_if<api_error>(&r))
        FAIL(e->message);
    return json::parse(std::get<std::string>(r)).as_object();
}

api_error error_of(std::string_view body) {
    auto r = parse_responses(body);
    REQUIRE(std::holds_alternative<api_error>(r));
    return std::get<api_error>(r);
}

} // namespace

TEST_CASE("responses: a function-call round trip becomes the chat request that asks the same") {
    const auto chat = chat_of(R"({"model":"m","instructions":"Be brief.","max_output_tokens":32,
        "temperature":0.2,"store":true,"metadata":{"a":"b"},
        "input":[{"role":"user","content":[{"type":"input_text","text":"Weather?"}]},
                 {"type":"function_call","call_id":"call_1","name":"get_weather",
                  "arguments":"{\"city\":\"Oslo\"}"},
                 {"type":"function_call","call_id":"call_2","name":"get_time","arguments":"{}"},
                 {"type":"function_call_output","call_id":"call_1","output":"sunny"},
                 {"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]}],
        "tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}],
        "tool_choice":{"type":"function","name":"get_weather"},
        "text":{"format":{"type":"json_schema","name":"x","schema":{"type":"object"},"strict":true}}})");
    CHECK(chat.at("max_tokens") == 32);
    CHECK_FALSE(chat.contains("store"));
    const auto& m = chat.at("messages").as_array();
    REQUIRE(m.size() == 5);
    CHECK(m[0] == json::parse(R"({"role":"system","content":"Be brief."})"));
    CHECK(m[1] == json::parse(R"({"role":"user","content":"Weather?"})"));
    // Calls in a row are one assistant turn.
    CHECK(m[2].at("role") == "assistant");
    CHECK(m[2].at("content").is_null());
    REQUIRE(m[2].at("tool_calls").as_array().size() == 2);
    CHECK(m[2].at("tool_calls").at(1).at("function").at("name") == "get_time");
    CHECK(m[3] == json::parse(R"({"role":"tool","tool_call_id":"call_1","content":"sunny"})"));
    CHECK(m[4] == json::parse(R"({"role":"assistant","content":"ok"})"));
    CHECK(chat.at("tools").at(0).at("function").at("name") == "get_weather");
    CHECK(chat.at("tool_choice").at("function").at("name") == "get_weather");
    CHECK(chat.at("response_format").at("json_schema").at("name") == "x");
    // A string input is one user message.
    CHECK(chat_of(R"({"input":"hi"})").at("messages") ==
          json::parse(R"([{"role":"user","content":"hi"}])"));
    // Parsed as chat: the forced function's arguments alone.
    auto in = parse_responses(R"({"input":"x","tools":[{"type":"function","name":"f"}],
                                  "tool_choice":"required"})");
    REQUIRE(std::holds_alternative<inference_input>(in));
    CHECK(std::get<inference_input>(in).tool_name == "f");
}

TEST_CASE("responses: one reply's message and function_call items are one assistant turn") {
    // What a stored auto turn's output is: its text, then its calls (two turns before).
    const auto chat = chat_of(R"({"input":[{"role":"user","content":"Weather?"},
        {"type":"message","role":"assistant","content":[{"type":"output_text","text":"Let me look."}]},
        {"type":"function_call","call_id":"c1","name":"get_weather","arguments":"{}"},
        {"type":"function_call","call_id":"c2","name":"get_time","arguments":"{}"},
        {"type":"function_call_output","call_id":"c1","output":"sunny"}]})");
    const auto& m = chat.at("messages").as_array();
    REQUIRE(m.size() == 3);
    CHECK(m[1].at("role") == "assistant");
    CHECK(m[1].at("content") == "Let me look.");
    REQUIRE(m[1].at("tool_calls").as_array().size() == 2);
    CHECK(m[1].at("tool_calls").at(0).at("id") == "c1");
    CHECK(m[2].at("role") == "tool");
}

TEST_CASE("responses: refusals name the Responses field") {
    CHECK(error_of(R"({"model":"m"})").param == "input");
    CHECK(error_of(R"({"input":"x","previous_response_id":"resp_1"})").param ==
          "previous_response_id");
    CHECK(error_of(R"({"input":"x","max_output_tokens":0})").param == "max_output_tokens");
    CHECK(error_of(R"({"input":[{"role":"user","content":[{"type":"input_image"}]}]})")
              .message.find("'input_image' is not supported") != std::string::npos);
    CHECK(error_of(R"({"input":[{"type":"reasoning","summary":[]}]})").param == "input");
    CHECK(error_of(R"({"input":"x","tools":[{"type":"web_search"}]})").param == "tools");
    CHECK(error_of(R"({"input":"x","text":{"format":{"type":"yaml"}}})").param == "text.format");
    CHECK(error_of(R"({"input":[{"role":"robot","content":"x"}]})").param == "input");
}

TEST_CASE("responses: the response object and its output items") {
    msg::completion c;
    c.prompt_tokens = 10;
    c.cached_tokens = 4;
    c.completion_tokens = 3;
    auto msg = json::parse(response_message_item("req-7", "hi", true));
    // Ids: the prefix, then 128 bits (32 hex digits) that only this process's secret key
    // derives from the request id: the same for every id of one request, unrelated between
    // requests, so neither an id's neighbour nor a later one can be guessed.
    const std::string msg_id(msg.at("id").as_string());
    CHECK(msg_id.rfind("msg_", 0) == 0);
    const auto tag = msg_id.substr(4);
    CHECK(tag.size() == 32);
    CHECK(tag.find_first_not_of("0123456789abcdef") == std::string::npos);
    const auto next = response_id("req-8").substr(5);
    CHECK(next.size() == 32);
    CHECK(next != tag);
    std::size_t same = 0; // hex digits in the same place: 2 of 32 expected by chance
    for (std::size_t i = 0; i < 32; ++i)
        same += next[i] == tag[i] ? 1 : 0;
    CHECK(same < 12);
    CHECK(response_id("req-7") == "resp_" + tag);
    msg.as_object()["id"] = "x";
    CHECK(msg == json::parse(R"({"id":"x","type":"message","status":"completed",
        "role":"assistant","content":[{"type":"output_text","text":"hi","annotations":[]}]})"));
    CHECK(json::parse(response_message_item("req-7", "hi", true, true)).at("status") ==
          "incomplete");
    const auto call = json::parse(response_call_item("req-7", "f", R"({"a":1})", true));
    CHECK(call.at("type") == "function_call");
    CHECK(call.at("call_id") == "call_7");
    CHECK(call.at("id").as_string() == "fc_" + tag);
    CHECK(json::parse(response_call_item("req-7", "f", "{}", true, 2)).at("id").as_string() ==
          "fc_" + tag + "_2");
    CHECK(call.at("arguments") == R"({"a":1})");
    const auto r = json::parse(response_object("req-7", 100, "m", "incomplete",
                                               "[" + json::serialize(msg) + "]", &c, "null", false,
                                               responses_request_echo("{}", 0.8f, 0.95f)));
    CHECK(r.at("id").as_string() == "resp_" + tag);
    CHECK(r.at("object") == "response");
    CHECK(r.at("created_at") == 100);
    CHECK(r.at("incomplete_details").at("reason") == "max_output_tokens");
    CHECK(r.at("usage") == json::parse(R"({"input_tokens":10,"input_tokens_details":
        {"cached_tokens":4},"output_tokens":3,"output_tokens_details":{"reasoning_tokens":0},
        "total_tokens":13})"));
    CHECK(r.at("store") == false);
    CHECK(r.at("parallel_tool_calls") == true);
    const auto kept = json::parse(
        response_object("req-7", 1, "m", "completed", "[]", nullptr, "null", true,
                        responses_request_echo(R"({"parallel_tool_calls":false})", 1.0f, 1.0f)));
    CHECK(kept.at("store") == true);
    CHECK(kept.at("parallel_tool_calls") == false);
    CHECK(kept.at("incomplete_details").is_null());
    // A call cut short: its arguments so far, status incomplete.
    const auto cut = json::parse(response_call_item("req-7", "f", R"({"a":)", true, 0, true));
    CHECK(cut.at("status") == "incomplete");
    CHECK(cut.at("arguments") == R"({"a":)");
}

TEST_CASE("responses: the object echoes the request as sent, and what the server used otherwise") {
    const auto echo = [](std::string_view body, float t = 0.8f, float p = 0.95f) {
        return json::parse(response_object("req-1", 1, "m", "completed", "[]", nullptr, "null",
                                           false, responses_request_echo(body, t, p)))
            .as_object();
    };
    const auto tools = R"([{"type":"function","name":"f","parameters":{"type":"object"}}])";
    const auto sent = echo(std::string(R"({"input":"x","instructions":"Be brief.",
        "previous_response_id":"resp_abc","parallel_tool_calls":false,"tool_choice":"required",
        "max_output_tokens":16,"temperature":0.25,"top_p":0.5,"user":"u","metadata":{"k":"v"},
        "text":{"format":{"type":"json_object"}},"tools":)") +
                           tools + "}");
    CHECK(sent.at("instructions") == "Be brief.");
    CHECK(sent.at("previous_response_id") == "resp_abc");
    CHECK(sent.at("parallel_tool_calls") == false);
    CHECK(sent.at("tool_choice") == "required");
    CHECK(sent.at("tools") == json::parse(tools));
    CHECK(sent.at("max_output_tokens") == 16);
    CHECK(sent.at("temperature").to_number<double>() == 0.25);
    CHECK(sent.at("top_p").to_number<double>() == 0.5);
    CHECK(sent.at("user") == "u");
    CHECK(sent.at("metadata") == json::parse(R"({"k":"v"})"));
    CHECK(sent.at("text") == json::parse(R"({"format":{"type":"json_object"}})"));
    // Nothing sent: OpenAI's defaults, and this server's sampling defaults as they are in effect.
    const auto plain = echo(R"({"input":"x"})");
    CHECK(plain.at("instructions").is_null());
    CHECK(plain.at("previous_response_id").is_null());
    CHECK(plain.at("parallel_tool_calls") == true);
    CHECK(plain.at("tool_choice") == "auto");
    CHECK(plain.at("tools") == json::array{});
    CHECK(plain.at("truncation") == "disabled");
    CHECK(plain.at("text") == json::parse(R"({"format":{"type":"text"}})"));
    CHECK(plain.at("temperature").to_number<double>() == doctest::Approx(0.8));
    CHECK(plain.at("top_p").to_number<double>() == doctest::Approx(0.95));
    CHECK(plain.at("reasoning") == json::parse(R"({"effort":null,"summary":null})"));
}

TEST_CASE("responses: tools [] means none, conversation and text.verbosity are refused") {
    const auto chat = chat_of(R"({"input":"x","tools":[],"include":[]})");
    CHECK(chat.at("tools") == json::array{});
    auto r = parse_responses(R"({"input":"x","tools":[]})");
    REQUIRE(std::holds_alternative<inference_input>(r));
    CHECK(std::get<inference_input>(r).json_schema.empty());
    CHECK(error_of(R"({"input":"x","conversation":"conv_1"})").param == "conversation");
    CHECK(error_of(R"({"input":"x","text":{"verbosity":"low"}})").param == "text.verbosity");
    CHECK(error_of(R"({"input":"x","tools":[],"tool_choice":"required"})").param == "tool_choice");
    // Schema errors of text.format name it (the compiler's come back with schema_param).
    r = parse_responses(R"({"input":"x","text":{"format":{"type":"json_object"}}})");
    CHECK(std::get<inference_input>(r).schema_param == "text.format");
}
