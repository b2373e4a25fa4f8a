// Anthropic's Messages API shapes (http/anthropic/api_anthropic.hpp): a request becomes the chat
// request that asks the same (system, text and tool blocks, tools and tool_choice), refusals name
// the Messages field, and replies, stop reasons, usage and errors are Anthropic's.
#include "http/anthropic/api_anthropic.hpp"

#include <boost/json.hpp>
#include <doctest/doctest.h>

using namespace bitnet;
using namespace bitnet::http;
namespace json = boost::json;

namespace {

json::object chat_of(std::string_view body) {
    auto r = messages_as_chat(body);
    if (auto* e = std::get_if<api_error>(&r))
        FAIL(e->message);
    return json::parse(std::get<std::string>(r)).as_object();
}

api_error error_of(std::string_view body) {
    auto r = parse_messages(body);
    REQUIRE(std::holds_alternative<api_error>(r));
    return std::get<api_error>(r);
}

bool has(const std::string& s, std::string_view what) {
    return s.find(what) != std::string::npos;
}

} // namespace

TEST_CASE("messages: a tool round trip becomes the chat request that asks the same") {
    const auto chat = chat_of(R"({"model":"m","max_tokens":64,"temperature":0.5,"top_k":3,
        "system":[{"type":"text","text":"Be brief."},{"type":"text","text":"Use tools."}],
        "stop_sequences":["END"],"metadata":{"user_id":"u"},
        "tools":[{"name":"get_weather","description":"w","input_schema":{"type":"object",
            "properties":{"city":{"type":"string"}},"required":["city"]}}],
        "tool_choice":{"type":"tool","name":"get_weather"},
        "messages":[
          {"role":"user","content":"Weather in Paris?"},
          {"role":"assistant","content":[{"type":"text","text":"Checking."},
             {"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},
          {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1",
             "content":[{"type":"text","text":"sunny"}]},{"type":"text","text":"And now?"}]}]})");
    CHECK(chat.at("model") == "m");
    CHECK(chat.at("max_tokens") == 64);
    CHECK(chat.at("top_k") == 3);
    CHECK(chat.at("stop") == json::parse(R"(["END"])"));
    CHECK_FALSE(chat.contains("metadata"));
    const auto& m = chat.at("messages").as_array();
    REQUIRE(m.size() == 5);
    CHECK(m[0] == json::parse(R"({"role":"system","content":"Be brief.\nUse tools."})"));
    CHECK(m[1] == json::parse(R"({"role":"user","content":"Weather in Paris?"})"));
    CHECK(m[2].at("content") == "Checking.");
    CHECK(m[2].at("tool_calls").at(0).at("id") == "toolu_1");
    CHECK(m[2].at("tool_calls").at(0).at("function").at("arguments") == R"({"city":"Paris"})");
    // A user turn's results come first, as tool messages, then its text.
    CHECK(m[3] == json::parse(R"({"role":"tool","tool_call_id":"toolu_1","content":"sunny"})"));
    CHECK(m[4] == json::parse(R"({"role":"user","content":"And now?"})"));
    CHECK(chat.at("tools").at(0).at("function").at("parameters").at("required").at(0) == "city");
    CHECK(chat.at("tool_choice").at("function").at("name") == "get_weather");
    // Parsed as chat: one function forced, arguments alone.
    auto in = parse_messages(R"({"max_tokens":8,"messages":[{"role":"user","content":"x"}],
        "tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"any"}})");
    REQUIRE(std::holds_alternative<inference_input>(in));
    CHECK(std::get<inference_input>(in).tool_name == "f");
    CHECK(chat_of(R"({"max_tokens":1,"messages":[{"role":"user","content":"x"}],
                      "tool_choice":{"type":"auto"}})")
              .at("tool_choice") == "auto");
}

TEST_CASE("messages: refusals name the Messages field") {
    CHECK(error_of(R"({"messages":[{"role":"user","content":"x"}]})").param == "max_tokens");
    // null means absent (a 200 with the default 128 tokens before).
    const auto null_max =
        error_of(R"({"max_tokens":null,"messages":[{"role":"user","content":"x"}]})");
    CHECK(null_max.param == "max_tokens");
    CHECK(null_max.message.find("required") != std::string::npos);
    auto e = error_of(R"({"max_tokens":8,"messages":[{"role":"user","content":[
        {"type":"image","source":{}}]}]})");
    CHECK(e.param == "messages");
    CHECK(has(e.message, "content block type 'image' is not supported"));
    e = error_of(R"({"max_tokens":8,"messages":[{"role":"system","content":"x"}]})");
    CHECK(has(e.message, "role must be \"user\" or \"assistant\""));
    e = error_of(R"({"max_tokens":8,"messages":[{"role":"user","content":[
        {"type":"tool_use","id":"a","name":"f","input":{}}]}]})");
    CHECK(has(e.message, "not allowed in a user turn"));
    CHECK(error_of(R"({"max_tokens":8,"stop_sequences":[""],
                       "messages":[{"role":"user","content":"x"}]})")
              .param == "stop_sequences");
    CHECK(error_of(R"({"max_tokens":8,"messages":[]})").param == "messages");
    CHECK(error_of(R"({"max_tokens":8,"messages":[{"role":"user","content":"x"}],
                       "tool_choice":{"type":"maybe"}})")
              .param == "tool_choice");
    CHECK(error_of(R"({"max_tokens":8,"messages":[{"role":"user","content":"x"}],
                       "tools":[{"type":"web_search_20250305","name":"w"}]})")
              .param == "tools");
}

TEST_CASE("messages: stop reasons, usage, blocks and errors in Anthropic's shapes") {
    CHECK(anthropic_stop_reason(msg::finish_reason::eos, false, false) == "end_turn");
    CHECK(anthropic_stop_reason(msg::finish_reason::stop, false, true) == "stop_sequence");
    CHECK(anthropic_stop_reason(msg::finish_reason::stop, false, false) == "end_turn");
    CHECK(anthropic_stop_reason(msg::finish_reason::length, false, false) == "max_tokens");
    CHECK(anthropic_stop_reason(msg::finish_reason::cancelled, false, false) == "max_tokens");
    CHECK(anthropic_stop_reason(msg::finish_reason::eos, true, false) == "tool_use");
    msg::completion c;
    c.prompt_tokens = 10;
    c.cached_tokens = 4;
    c.completion_tokens = 3;
    CHECK(json::parse(anthropic_usage(c)) ==
          json::parse(R"({"input_tokens":6,"output_tokens":3,"cache_read_input_tokens":4,
                          "cache_creation_input_tokens":0})"));
    const auto blocks = anthropic_tool_use_blocks({{"f", R"({"a":1})"}, {"g", "{}"}}, "req-7");
    REQUIRE(blocks.size() == 2);
    CHECK(json::value(blocks[0]) ==
          json::parse(R"({"type":"tool_use","id":"toolu_7","name":"f","input":{"a":1}})"));
    CHECK(json::value(blocks[1]) ==
          json::parse(R"({"type":"tool_use","id":"toolu_7_1","name":"g","input":{}})"));
    CHECK(anthropic_tool_use_blocks({}, "req-7").empty());
    CHECK(anthropic_tool_use_blocks({{"f", "not json"}}, "req-7").empty());
    const auto body = json::parse(anthropic_message_body(
        "req-7", "m", "[" + anthropic_text_block("hi") + "]", "end_turn", c));
    // The id a thread continues from: unguessable, the same for the same request, never the
    // request's number (which a restart reuses).
    CHECK(body.at("id").as_string() == anthropic_message_id("req-7"));
    CHECK(body.at("id").as_string().size() == 4 + 32);
    CHECK(body.at("id").as_string() != "msg_7");
    CHECK(anthropic_message_id("req-8") != anthropic_message_id("req-7"));
    CHECK(body.at("type") == "message");
    CHECK(body.at("role") == "assistant");
    CHECK(body.at("content") == json::parse(R"([{"type":"text","text":"hi"}])"));
    CHECK(body.at("stop_sequence").is_null());
    const auto err = json::parse(anthropic_error_body(
        {401, "authentication_error", "invalid_api_key", "missing API key", "", "", 0}, "req-3"));
    CHECK(err.at("type") == "error");
    CHECK(err.at("error").at("type") == "authentication_error");
    CHECK(err.at("request_id") == "req-3");
    CHECK(json::parse(anthropic_error_body({503, "overloaded", "draining", "x", "", "", 1}, "r"))
              .at("error")
              .at("type") == "overloaded_error");
    CHECK(json::parse(anthropic_error_body(invalid_value("max_tokens", "is required"), "r"))
              .at("error")
              .at("message") == "max_tokens: is required");
}

TEST_CASE("messages: output_config.format (and the beta's output_format) is structured output") {
    const std::string schema =
        R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})";
    for (const auto& field :
         {R"("output_config":{"format":{"type":"json_schema","schema":)" + schema + "}}",
          R"("output_format":{"type":"json_schema","schema":)" + schema + "}"}) {
        const auto body =
            R"({"max_tokens":16,"messages":[{"role":"user","content":"x"}],)" + field + "}";
        const auto chat = chat_of(body);
        CHECK(chat.at("response_format").at("type") == "json_schema");
        CHECK(chat.at("response_format").at("json_schema").at("schema") == json::parse(schema));
        auto r = parse_messages(body);
        REQUIRE(std::holds_alternative<inference_input>(r));
        const auto& in = std::get<inference_input>(r);
        CHECK(json::parse(in.json_schema) == json::parse(schema));
        CHECK_FALSE(in.tool_call); // the reply is a text block holding the JSON
        // The schema compiler's refusals name the Messages field.
        CHECK(in.schema_param == (field.find("output_config") != std::string::npos
                                      ? "output_config.format"
                                      : "output_format"));
    }
    // The field is the one the request used, whatever else its body holds: a schema with a
    // property named "output_config" does not rename the beta's output_format.
    auto mention = parse_messages(
        R"({"max_tokens":16,"messages":[{"role":"user","content":"x"}],"output_format":)"
        R"({"type":"json_schema","schema":{"type":"object","properties":)"
        R"({"output_config":{"type":"string"}}}}})");
    REQUIRE(std::holds_alternative<inference_input>(mention));
    CHECK(std::get<inference_input>(mention).schema_param == "output_format");
    const auto base =
        std::string(R"({"max_tokens":16,"messages":[{"role":"user","content":"x"}],)");
    CHECK(error_of(base + R"("output_config":{"effort":"high"}})").param == "output_config.effort");
    CHECK(error_of(base + R"("output_config":{"format":{"type":"text"}}})").param ==
          "output_config.format");
    CHECK(error_of(base + R"("output_config":{"format":{"type":"json_schema","schema":{}}},
        "output_format":{"type":"json_schema","schema":{}}})")
              .param == "output_format");
    // A forced call and a format at once: one structured output.
    CHECK(error_of(base + R"("tools":[{"name":"f","input_schema":{"type":"object"}}],
        "tool_choice":{"type":"any"},"output_config":{"format":{"type":"json_schema",
        "schema":{}}}})")
              .param == "tool_choice");
}

TEST_CASE("messages: tools [] is none, thinking on is refused, -1 is 'not set' for top_k/top_p") {
    const auto chat = chat_of(R"({"max_tokens":16,"messages":[{"role":"user","content":"x"}],
        "tools":[],"thinking":{"type":"disabled"},"top_k":-1,"top_p":-1,"temperature":1,
        "timeout_ms":5000,"priority":"low"})");
    CHECK(chat.at("tools") == json::array{});
    CHECK_FALSE(chat.contains("top_k"));
    CHECK_FALSE(chat.contains("top_p"));
    CHECK(chat.at("temperature") == 1);
    CHECK(chat.at("timeout_ms") == 5000);
    CHECK(chat.at("priority") == "low");
    auto e = error_of(R"({"max_tokens":16,"messages":[{"role":"user","content":"x"}],
        "thinking":{"type":"enabled","budget_tokens":1024}})");
    CHECK(e.param == "thinking");
    CHECK(has(e.message, "does not think"));
    CHECK(error_of(R"({"max_tokens":16,"messages":[{"role":"user","content":"x"}],
        "thinking":{"type":"adaptive"}})")
              .param == "thinking");
    CHECK(error_of(R"({"max_tokens":16,"messages":[{"role":"user","content":"x"}],"top_k":-2})")
              .param == "top_k");
}
