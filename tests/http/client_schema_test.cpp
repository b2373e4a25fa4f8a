// A client's JSON Schema, wherever a family carries it: this server's own keywords (x-bitnet-*)
// are refused by name, names and data that merely look like them are not, and the schema
// nesting limit the README states (64) is reachable and is what the error names.
#include "http/anthropic/api_anthropic.hpp"
#include "http/api_structured.hpp"
#include "http/responses/api_responses.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace bitnet;
using namespace bitnet::http;

namespace {

/// `depth` objects, each the `items` of the one before: {"type":"array","items":{...}}.
std::string nested_schema(std::size_t depth) {
    std::string s;
    for (std::size_t i = 1; i < depth; ++i)
        s += R"({"type":"array","items":)";
    s += R"({"type":"integer"})";
    s.append(depth - 1, '}');
    return s;
}

std::string chat_with_format(const std::string& schema) {
    return R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema",)"
           R"("json_schema":{"name":"t","schema":)" +
           schema + "}}}";
}

const api_error* error_of(const parse_result& r) {
    return std::get_if<api_error>(&r);
}

} // namespace

TEST_CASE("x-bitnet-* keywords are refused in every place a client's schema enters") {
    const std::string union_kw = R"({"x-bitnet-tool-union":[{"name":"f","arguments":{}}]})";
    const std::string text_kw =
        R"({"type":"object","properties":{"a":{"x-bitnet-text":{"regex":"a"}}}})";
    const std::pair<std::string, std::string> cases[] = {
        {chat_with_format(union_kw), "response_format"},
        {chat_with_format(text_kw), "response_format"},
        {R"({"messages":[{"role":"user","content":"x"}],"tool_choice":"required","tools":[)"
         R"({"type":"function","function":{"name":"f","parameters":)" +
             text_kw + "}}]}",
         "tools"},
        {R"({"messages":[{"role":"user","content":"x"}],"guided_json":)" + union_kw + "}",
         "guided_json"},
        {R"({"messages":[{"role":"user","content":"x"}],"guided_json":")" +
             std::string(R"({\"x-bitnet-text\":{\"choice\":[\"a\"]}})") + "\"}",
         "guided_json"},
    };
    for (const auto& [body, param] : cases) {
        CAPTURE(body);
        const auto r = parse_inference(body, api_family::chat);
        const auto* e = error_of(r);
        REQUIRE(e != nullptr);
        CHECK(e->status == 400);
        CHECK(e->param == param);
        CHECK(e->message.find("x-bitnet-") != std::string::npos);
        CHECK(e->message.find("server's own keyword") != std::string::npos);
    }
    // The native json_schema field.
    const auto native =
        parse_inference(R"({"prompt":"x","json_schema":)" + union_kw + "}", api_family::native);
    REQUIRE(error_of(native) != nullptr);
    CHECK(error_of(native)->param == "json_schema");
    // Anthropic's output_config.format, through the chat form it is parsed as.
    const auto messages =
        parse_messages(R"({"model":"m","max_tokens":4,"messages":[{"role":"user","content":"x"}],)"
                       R"("output_config":{"format":{"type":"json_schema","schema":)" +
                       text_kw + "}}}");
    REQUIRE(error_of(messages) != nullptr);
    CHECK(error_of(messages)->param == "output_config.format");
}

TEST_CASE("names and data that look like x-bitnet keywords are the client's own") {
    // A property, a $defs entry, an enum member and a const are data, not keywords.
    const std::string schema =
        R"({"type":"object","properties":{"x-bitnet-text":{"type":"string"}},)"
        R"("$defs":{"x-bitnet-tool-union":{"type":"integer"}},)"
        R"("enum":[{"x-bitnet-text":1}],"const":{"x-bitnet-tool-union":2}})";
    const auto r = parse_inference(chat_with_format(schema), api_family::chat);
    REQUIRE(std::holds_alternative<inference_input>(r));
    CHECK(std::get<inference_input>(r).json_schema.find("x-bitnet-text") != std::string::npos);
}

TEST_CASE("schema nesting: 64 levels pass the request parser, 65 name max_schema_nesting") {
    // Boost.JSON's default parser depth (32) used to refuse these as invalid JSON.
    for (const std::size_t depth : {std::size_t{33}, std::size_t{60}, max_schema_nesting}) {
        CAPTURE(depth);
        const auto r = parse_inference(chat_with_format(nested_schema(depth)), api_family::chat);
        CHECK(std::holds_alternative<inference_input>(r));
    }
    const auto over =
        parse_inference(chat_with_format(nested_schema(max_schema_nesting + 1)), api_family::chat);
    REQUIRE(error_of(over) != nullptr);
    CHECK(error_of(over)->param == "response_format");
    CHECK(error_of(over)->message.find("max_schema_nesting") != std::string::npos);
    // Past what any envelope needs, the body itself is refused, naming both limits.
    const auto deep = parse_inference(chat_with_format(nested_schema(200)), api_family::chat);
    REQUIRE(error_of(deep) != nullptr);
    CHECK(error_of(deep)->param.empty());
    CHECK(error_of(deep)->message.find("max_request_nesting") != std::string::npos);
    CHECK(error_of(deep)->message.find("max_schema_nesting") != std::string::npos);
    // The same limits in a Responses body (parsed before it becomes a chat).
    const auto responses = responses_as_chat(
        R"({"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"t","schema":)" +
        nested_schema(200) + "}}}");
    REQUIRE(std::holds_alternative<api_error>(responses));
    CHECK(std::get<api_error>(responses).message.find("max_request_nesting") != std::string::npos);
}
