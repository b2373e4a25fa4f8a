// Structured output in requests: response_format, the native json_schema and forced tool calls
// become one schema text with the field it came from; the tool-call rendering of a reply.
#include "http/api_structured.hpp"

#include <boost/json.hpp>
#include <doctest/doctest.h>

using namespace bitnet;
using namespace bitnet::http;
namespace json = boost::json;

namespace {

parse_result parse(std::string_view body, api_family kind) {
    return parse_inference(body, kind);
}

inference_input ok(std::string_view body, api_family kind) {
    auto r = parse(body, kind);
    if (auto* e = std::get_if<api_error>(&r))
        FAIL(e->message);
    return std::get<inference_input>(r);
}

std::string param_of(std::string_view body, api_family kind) {
    auto r = parse(body, kind);
    REQUIRE(std::holds_alternative<api_error>(r));
    CHECK(std::get<api_error>(r).status == 400);
    return std::get<api_error>(r).param;
}

const char* tools = R"("tools":[{"type":"function","function":{"name":"f","parameters":
    {"type":"object","properties":{"x":{"type":"integer"}}}}},{"type":"function",
    "function":{"name":"g"}}])";

} // namespace

TEST_CASE("response_format: json_object, json_schema and text, native json_schema") {
    auto o =
        ok(R"({"prompt":"p","response_format":{"type":"json_object"}})", api_family::completions);
    CHECK(json::parse(o.json_schema) == json::parse(R"({"type":"object"})"));
    CHECK(o.schema_param == "response_format");
    auto s = ok(R"({"messages":[{"role":"user","content":"c"}],"response_format":{"type":
        "json_schema","json_schema":{"name":"n","strict":true,"schema":{"enum":[1,2]}}}})",
                api_family::chat);
    CHECK(json::parse(s.json_schema) == json::parse(R"({"enum":[1,2]})"));
    CHECK_FALSE(s.tool_call);
    CHECK(ok(R"({"prompt":"p","response_format":{"type":"text"}})", api_family::completions)
              .json_schema.empty());
    auto n = ok(R"({"prompt":"p","json_schema":{"type":"string"}})", api_family::native);
    CHECK(json::parse(n.json_schema) == json::parse(R"({"type":"string"})"));
    CHECK(n.schema_param == "json_schema");
    CHECK(param_of(R"({"prompt":"p","response_format":{"type":"yaml"}})",
                   api_family::completions) == "response_format");
    CHECK(param_of(R"({"prompt":"p","response_format":{"type":"json_schema"}})",
                   api_family::completions) == "response_format");
}

TEST_CASE("tools: required is any of the functions, a named choice is that one, auto is free") {
    const std::string head = R"({"messages":[{"role":"user","content":"c"}],)";
    auto r = ok(head + tools + R"(,"tool_choice":"required"})", api_family::chat);
    CHECK(r.tool_call);
    CHECK(r.schema_param == "tools");
    const auto root = json::parse(r.json_schema);
    // parallel_tool_calls (true unless sent false): an array of 1 to 8 calls.
    CHECK(r.parallel_tool_calls);
    CHECK(root.at("type") == "array");
    CHECK(root.at("minItems") == 1);
    CHECK(root.at("maxItems") == max_parallel_tool_calls);
    const auto any = root.at("items").at("x-bitnet-tool-union").as_array();
    REQUIRE(any.size() == 2);
    CHECK(any[0].at("name") == "f");
    // Parameters are their own root, under the wrapper's $defs.
    CHECK(any[0].at("arguments") == json::parse(R"({"$ref":"#/$defs/bitnet_tool_0"})"));
    CHECK(root.at("$defs").at("bitnet_tool_0").at("properties").at("x").at("type") == "integer");
    CHECK(any[1].at("arguments") == json::parse(R"({"type":"object"})"));
    CHECK(r.tool_name.empty()); // several functions: the name is generated too
    // parallel_tool_calls false: one call, the union at the root.
    auto single = ok(head + tools + R"(,"tool_choice":"required","parallel_tool_calls":false})",
                     api_family::chat);
    CHECK_FALSE(single.parallel_tool_calls);
    const auto single_root = json::parse(single.json_schema);
    CHECK(single_root.at("x-bitnet-tool-union").as_array().size() == 2);
    CHECK_FALSE(single_root.as_object().contains("type"));
    CHECK(param_of(head + tools + R"(,"tool_choice":"required","parallel_tool_calls":"yes"})",
                   api_family::chat) == "parallel_tool_calls");
    // A named function: only its arguments are generated, under its parameters as the root.
    auto f = ok(head + tools + R"(,"tool_choice":{"type":"function","function":{"name":"f"}}})",
                api_family::chat);
    CHECK(f.tool_call);
    CHECK(f.tool_name == "f");
    CHECK(json::parse(f.json_schema) ==
          json::parse(R"({"type":"object","properties":{"x":{"type":"integer"}}})"));
    // No parameters: the empty object.
    auto g = ok(head + tools + R"(,"tool_choice":{"type":"function","function":{"name":"g"}}})",
                api_family::chat);
    CHECK(g.tool_name == "g");
    CHECK(json::parse(g.json_schema) == json::parse(R"({"type":"object","maxProperties":0})"));
    // "required" with one tool is that one.
    auto one = ok(head + R"("tools":[{"type":"function","function":{"name":"only"}}],)" +
                      R"("tool_choice":"required"})",
                  api_family::chat);
    CHECK(one.tool_name == "only");
    auto a = ok(head + tools + R"(,"tool_choice":"auto"})", api_family::chat);
    CHECK(a.json_schema.empty());
    CHECK_FALSE(a.tool_call);
    CHECK_FALSE(a.tool_union.empty());
    CHECK(a.schema_param == "tools"); // what the batcher's call grammar errors and spans name
    CHECK(ok(head + tools + "}", api_family::chat).json_schema.empty());
    CHECK(param_of(head + tools + R"(,"tool_choice":{"type":"function","function":{"name":"h"}}})",
                   api_family::chat) == "tool_choice");
    CHECK(param_of(head + R"("tools":[{"type":"function"}],"tool_choice":"required"})",
                   api_family::chat) == "tools");
    CHECK(param_of(head + R"("tool_choice":"required"})", api_family::chat) == "tool_choice");
}

TEST_CASE("tools: references inside parameters resolve inside them (Pydantic's $defs)") {
    const std::string body =
        R"({"messages":[{"role":"user","content":"c"}],"tools":[{"type":"function","function":{
        "name":"f","parameters":{"$schema":"x","$defs":{"Item":{"type":"object","properties":{
        "next":{"anyOf":[{"$ref":"#/$defs/Item"},{"type":"null"}]}}}},"type":"object",
        "properties":{"item":{"$ref":"#/$defs/Item"},"self":{"$ref":"#"},
        "e":{"enum":[{"$ref":"#"}]}}}}},{"type":"function","function":{"name":"g"}}],
        "tool_choice":"required"})";
    auto r = ok(body, api_family::chat);
    const auto root = json::parse(r.json_schema);
    CHECK(root.at("items").at("x-bitnet-tool-union").at(0).at("arguments").at("$ref") ==
          "#/$defs/bitnet_tool_0");
    const auto& p = root.at("$defs").at("bitnet_tool_0");
    CHECK_FALSE(p.as_object().contains("$schema"));
    CHECK(p.at("properties").at("item").at("$ref") == "#/$defs/bitnet_tool_0/$defs/Item");
    CHECK(p.at("properties").at("self").at("$ref") == "#/$defs/bitnet_tool_0");
    CHECK(p.at("$defs").at("Item").at("properties").at("next").at("anyOf").at(0).at("$ref") ==
          "#/$defs/bitnet_tool_0/$defs/Item");
    // enum members are data: left as written.
    CHECK(p.at("properties").at("e").at("enum").at(0).at("$ref") == "#");

    // Forced to f alone, the parameters are the root: their references stay as written.
    auto alone = ok(std::string(body).replace(body.find(R"("tool_choice":"required")"),
                                              std::string(R"("tool_choice":"required")").size(),
                                              R"("tool_choice":{"type":"function",
                                                 "function":{"name":"f"}})"),
                    api_family::chat);
    CHECK(alone.tool_name == "f");
    const auto root_f = json::parse(alone.json_schema);
    CHECK(root_f.at("properties").at("item").at("$ref") == "#/$defs/Item");
    CHECK(root_f.at("properties").at("self").at("$ref") == "#");
}

TEST_CASE("tool_calls_json: arguments as a JSON string, nothing for a cut call") {
    auto calls = tool_calls_json(R"({"arguments":{"x":1},"name":"f"})", "req-7", false);
    REQUIRE(calls);
    const auto a = json::parse(*calls).as_array();
    REQUIRE(a.size() == 1);
    CHECK(a[0].at("id") == "call_7");
    CHECK(a[0].at("type") == "function");
    CHECK(a[0].at("function").at("name") == "f");
    CHECK(a[0].at("function").at("arguments") == R"({"x":1})");
    CHECK_FALSE(a[0].as_object().contains("index"));
    CHECK(json::parse(*tool_calls_json(R"({"name":"f","arguments":{}})", "req-1", true))
              .as_array()[0]
              .at("index") == 0);
    CHECK_FALSE(tool_calls_json(R"({"name":"f","argu)", "req-1", false));
    // Arguments alone, for the function the request forced.
    const auto only = json::parse(*tool_calls_json(R"({"x":1})", "req-9", false, "f")).as_array();
    CHECK(only[0].at("function").at("name") == "f");
    CHECK(only[0].at("function").at("arguments") == R"({"x":1})");
    CHECK(only[0].at("id") == "call_9");
    CHECK_FALSE(tool_calls_json(R"({"x":)", "req-9", false, "f"));
}

TEST_CASE("tool_calls_json: parallel calls, an id and an index each, nothing for a cut array") {
    const auto calls = tool_calls_json(
        R"([{"name":"f","arguments":{"x":1}},{"name":"g","arguments":{}}])", "req-7", true);
    REQUIRE(calls);
    const auto a = json::parse(*calls).as_array();
    REQUIRE(a.size() == 2);
    CHECK(a[0].at("id") == "call_7");
    CHECK(a[1].at("id") == "call_7_1");
    CHECK(a[0].at("index") == 0);
    CHECK(a[1].at("index") == 1);
    CHECK(a[1].at("function").at("name") == "g");
    CHECK(a[1].at("function").at("arguments") == "{}");
    CHECK_FALSE(
        tool_calls_json(R"([{"name":"f","arguments":{"x":1}},{"name":"g")", "req-7", false));
    CHECK_FALSE(tool_calls_json("[]", "req-7", false));
    CHECK_FALSE(tool_calls_json(R"([{"name":"f"}])", "req-7", false));
    const auto parsed = parse_forced_calls(R"([{"name":"f","arguments":{"x":1}}])");
    REQUIRE(parsed);
    REQUIRE(parsed->size() == 1);
    CHECK((*parsed)[0].arguments == R"({"x":1})");
}
