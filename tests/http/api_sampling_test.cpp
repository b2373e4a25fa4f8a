// The sampling and guided fields of the native, completions and chat routes (http/api_sampling.hpp,
// http/api_guided.hpp): each reaches the sampler's settings or the request's schema in every
// shape, and each malformed or conflicting use is a 400 naming its field.
#include "http/api_json.hpp"

#include <boost/json.hpp>
#include <doctest/doctest.h>

using namespace bitnet;
using namespace bitnet::http;
namespace json = boost::json;

namespace {

const char* kinds[] = {"native", "completions", "chat"};

/// `fields` (JSON members) in a body of `kind`.
std::string body_of(api_family kind, const std::string& fields) {
    const std::string head = kind == api_family::chat
                                 ? R"({"messages":[{"role":"user","content":"Hi"}])"
                                 : R"({"prompt":"Hi")";
    return head + (fields.empty() ? "" : "," + fields) + "}";
}

inference_input parsed(api_family kind, const std::string& fields) {
    auto r = parse_inference(body_of(kind, fields), kind);
    if (auto* e = std::get_if<api_error>(&r))
        FAIL(e->param << ": " << e->message);
    return std::get<inference_input>(r);
}

std::string refused(api_family kind, const std::string& fields) {
    auto r = parse_inference(body_of(kind, fields), kind);
    REQUIRE(std::holds_alternative<api_error>(r));
    const auto& e = std::get<api_error>(r);
    CHECK(e.status == 400);
    return e.param;
}

} // namespace

TEST_CASE("penalties, logit_bias, ignore_eos and min_tokens reach the sampler in every shape") {
    for (auto kind : {api_family::native, api_family::completions, api_family::chat}) {
        CAPTURE(kinds[static_cast<int>(kind)]);
        const auto in = parsed(kind, R"("presence_penalty":0.5,"frequency_penalty":-1.25,
            "logit_bias":{"42":-100,"7":12.5,"1000":100},"ignore_eos":true,"min_tokens":3,
            "max_tokens":8)");
        CHECK(in.params.presence_penalty == 0.5f);
        CHECK(in.params.frequency_penalty == -1.25f);
        // Sorted by id, as the sampler wants them.
        CHECK(in.params.logit_bias ==
              std::vector<model::logit_bias_entry>{{7, 12.5f}, {42, -100.0f}, {1000, 100.0f}});
        CHECK(in.params.ignore_eos);
        CHECK(in.params.min_tokens == 3);
        // Off by default.
        const auto plain = parsed(kind, "");
        CHECK_FALSE(plain.params.shapes_logits());
    }
}

TEST_CASE("malformed sampling fields are a 400 naming the field") {
    const auto k = api_family::completions;
    CHECK(refused(k, R"("presence_penalty":2.5)") == "presence_penalty");
    CHECK(refused(k, R"("frequency_penalty":"high")") == "frequency_penalty");
    CHECK(refused(k, R"("logit_bias":[[1,2]])") == "logit_bias");
    CHECK(refused(k, R"("logit_bias":{"x":1})") == "logit_bias");
    CHECK(refused(k, R"("logit_bias":{"-1":1})") == "logit_bias");
    CHECK(refused(k, R"("logit_bias":{"1":101})") == "logit_bias");
    CHECK(refused(k, R"("logit_bias":{"7":1,"07":2})") == "logit_bias");
    std::string many = R"("logit_bias":{)";
    for (int i = 0; i <= 300; ++i)
        many += (i ? "," : "") + std::string("\"") + std::to_string(i) + "\":1";
    CHECK(refused(k, many + "}") == "logit_bias");
    CHECK(refused(k, R"("ignore_eos":1)") == "ignore_eos");
    CHECK(refused(k, R"("min_tokens":-1)") == "min_tokens");
    CHECK(refused(k, R"("min_tokens":9,"max_tokens":8)") == "min_tokens");
    // With structured output the hold-back would refuse the value's own end.
    CHECK(refused(k, R"("ignore_eos":true,"response_format":{"type":"json_object"})") ==
          "ignore_eos");
    CHECK(refused(api_family::native, R"("min_tokens":2,"guided_choice":["a","b"])") ==
          "min_tokens");
}

TEST_CASE("vLLM's guided fields become the request's schema, named by their field") {
    for (auto kind : {api_family::native, api_family::completions, api_family::chat}) {
        CAPTURE(kinds[static_cast<int>(kind)]);
        auto in = parsed(kind, R"("guided_choice":["yes","no"])");
        CHECK(json::parse(in.json_schema) ==
              json::parse(R"({"x-bitnet-text":{"choice":["yes","no"]}})"));
        CHECK(in.schema_param == "guided_choice");
        in = parsed(kind, R"("guided_regex":"[0-9]+")");
        CHECK(json::parse(in.json_schema) ==
              json::parse(R"({"x-bitnet-text":{"regex":"[0-9]+"}})"));
        CHECK(in.schema_param == "guided_regex");
        in = parsed(kind, R"("guided_json":{"type":"integer"})");
        CHECK(json::parse(in.json_schema) == json::parse(R"({"type":"integer"})"));
        in = parsed(kind, R"("guided_json":"{\"type\":\"integer\"}")"); // its JSON text
        CHECK(json::parse(in.json_schema) == json::parse(R"({"type":"integer"})"));
        in = parsed(kind, R"("structured_outputs":{"regex":"a+","disable_any_whitespace":true})");
        CHECK(json::parse(in.json_schema) == json::parse(R"({"x-bitnet-text":{"regex":"a+"}})"));
        CHECK(in.schema_param == "structured_outputs.regex");
        in = parsed(kind, R"("structured_outputs":{"json_object":true})");
        CHECK(in.json_schema == R"({"type":"object"})");
    }
}

TEST_CASE("guided fields: one structured output per request, and the forms not served") {
    const auto k = api_family::chat;
    CHECK(refused(k, R"("guided_choice":["a"],"guided_regex":"b")") == "guided_regex");
    CHECK(refused(k, R"("guided_choice":["a"],"response_format":{"type":"json_object"})") ==
          "guided_choice");
    CHECK(refused(k, R"("guided_choice":[])") == "guided_choice");
    CHECK(refused(k, R"("guided_choice":["a",""])") == "guided_choice");
    CHECK(refused(k, R"("guided_regex":"")") == "guided_regex");
    CHECK(refused(k, R"("guided_json":"not json")") == "guided_json");
    CHECK(refused(k, R"("guided_grammar":"root ::= \"a\"")") == "guided_grammar");
    CHECK(refused(k, R"("structured_outputs":{"grammar":"root ::= x"})") ==
          "structured_outputs.grammar");
    CHECK(refused(k, R"("structured_outputs":{"choice":["a"],"regex":"b"})") ==
          "structured_outputs.regex");
    CHECK(refused(k, R"("tools":[{"type":"function","function":{"name":"f"}}],
        "tool_choice":"required","guided_regex":"a")") == "guided_regex");
}

TEST_CASE("chat: tools [] means no tools, and only none and auto may be chosen then") {
    auto in = parsed(api_family::chat, R"("tools":[])");
    CHECK(in.json_schema.empty());
    CHECK_FALSE(in.tool_call);
    in = parsed(api_family::chat, R"("tools":[],"tool_choice":"auto")");
    CHECK(in.json_schema.empty());
    CHECK(refused(api_family::chat, R"("tools":[],"tool_choice":"required")") == "tool_choice");
    CHECK(refused(api_family::chat, R"("tools":{})") == "tools");
}

TEST_CASE("native: stream is read so that the handler can check it agrees with the route") {
    CHECK_FALSE(parsed(api_family::native, "").native_stream);
    CHECK(*parsed(api_family::native, R"("stream":true)").native_stream);
    CHECK_FALSE(*parsed(api_family::native, R"("stream":false)").native_stream);
}
