// bitnet-server as a process on the shipped default model (models/bitnet-fortunes-5m-i2_s.gguf):
// structured output. Sampled at temperature 1 with several seeds, every reply must parse and
// validate against its schema (or be cut by max_tokens, finish_reason "length"); forced tool
// calls come back as tool_calls; a schema keyword we cannot enforce is a 400 naming it.
#include "server/model_admin.hpp"
#include "server/server_process.hpp"

#include <string>

using namespace bitnet;
namespace json = boost::json;

namespace {

const char* person_schema = R"({"type":"object","properties":{
    "name":{"type":"string","maxLength":16},
    "age":{"type":"integer","minimum":0,"maximum":120},
    "tags":{"type":"array","items":{"enum":["red","green"]},"maxItems":3}},
    "required":["name","age"],"additionalProperties":false})";

/// The person schema's rules, checked by hand on a parsed value.
void check_person(const std::string& text) {
    boost::system::error_code ec;
    const auto v = json::parse(text, ec);
    REQUIRE_MESSAGE(!ec, "not JSON: " << text);
    REQUIRE_MESSAGE(v.is_object(), text);
    const auto& o = v.get_object();
    for (const auto& kv : o)
        CHECK_MESSAGE((kv.key() == "name" || kv.key() == "age" || kv.key() == "tags"), text);
    REQUIRE_MESSAGE(o.contains("name"), text);
    REQUIRE_MESSAGE(o.contains("age"), text);
    REQUIRE(o.at("name").is_string());
    // maxLength counts code points.
    std::size_t cps = 0;
    for (unsigned char ch : std::string(o.at("name").get_string()))
        cps += (ch & 0xC0) != 0x80 ? 1 : 0;
    CHECK_MESSAGE(cps <= 16, text);
    REQUIRE(o.at("age").is_int64());
    CHECK(o.at("age").get_int64() >= 0);
    CHECK(o.at("age").get_int64() <= 120);
    if (o.contains("tags")) {
        REQUIRE(o.at("tags").is_array());
        CHECK(o.at("tags").get_array().size() <= 3);
        for (const auto& t : o.at("tags").get_array())
            CHECK((t == "red" || t == "green"));
    }
    // The canonical layout: compact, so re-serialising gives the same text.
    CHECK(json::serialize(v) == text);
}

using test::sse_data;

std::string response_format(const char* schema) {
    return R"("response_format":{"type":"json_schema","json_schema":{"name":"person","strict":true,"schema":)" +
           std::string(schema) + "}}";
}

struct reply {
    std::string text;
    std::string finish;
    std::int64_t completion_tokens = -1;
};

reply run(const test::server_process& s, bool chat, bool stream, int seed, int max_tokens) {
    const std::string common = R"("max_tokens":)" + std::to_string(max_tokens) +
                               R"(,"temperature":1,"seed":)" + std::to_string(seed) +
                               R"(,"stream":)" + (stream ? "true" : "false") + "," +
                               response_format(person_schema);
    const auto body =
        chat ? R"({"messages":[{"role":"user","content":"Describe a person."}],)" + common + "}"
             : R"({"prompt":"A person:",)" + common + "}";
    auto r = s.post(chat ? "/v1/chat/completions" : "/v1/completions", body);
    REQUIRE_MESSAGE(r.status == 200, r.body);
    reply out;
    if (!stream) {
        const auto o = test::parse_object(r.body);
        const auto& c = o.at("choices").as_array().at(0).as_object();
        out.text = chat ? std::string(c.at("message").as_object().at("content").as_string())
                        : std::string(c.at("text").as_string());
        out.finish = std::string(c.at("finish_reason").as_string());
        out.completion_tokens = o.at("usage").as_object().at("completion_tokens").as_int64();
        return out;
    }
    for (const auto& d : sse_data(r.body)) {
        if (d == "[DONE]")
            break;
        const auto o = test::parse_object(d);
        const auto& c = o.at("choices").as_array().at(0).as_object();
        if (chat) {
            const auto& delta = c.at("delta").as_object();
            if (const auto* t = delta.if_contains("content"); t && t->is_string())
                out.text += t->get_string();
        } else {
            out.text += c.at("text").as_string();
        }
        if (!c.at("finish_reason").is_null())
            out.finish = std::string(c.at("finish_reason").as_string());
    }
    return out;
}

} // namespace

TEST_CASE("structured output on the default model: every sampled reply validates, or is cut") {
    test::server_process s;
    const auto path = test::data_path("../../models/bitnet-fortunes-5m-i2_s.gguf");
    auto op = test::load_and_wait(s, "tiny", path);
    REQUIRE_MESSAGE(op.at("state").as_string() == "ready", json::serialize(op));
    int stopped = 0;
    for (bool chat : {false, true})
        for (bool stream : {false, true})
            for (int seed = 1; seed <= 4; ++seed) {
                const auto r = run(s, chat, stream, seed, 96);
                CAPTURE(chat);
                CAPTURE(stream);
                CAPTURE(seed);
                CAPTURE(r.text);
                REQUIRE((r.finish == "stop" || r.finish == "length"));
                if (r.finish == "stop") {
                    check_person(r.text);
                    ++stopped;
                } else if (r.completion_tokens >= 0) {
                    CHECK(r.completion_tokens == 96);
                }
            }
    CHECK(stopped > 0);
    // 16 requests with one schema: compiled once (the batcher's check and the executor share it).
    const auto stats = test::parse_object(s.get("/v1/stats").body);
    int found = 0;
    for (const auto& m : stats.at("models").as_array())
        if (m.as_object().at("model") == "tiny") {
            CHECK(m.as_object().at("schema_compilations").as_int64() == 1);
            ++found;
        }
    CHECK(found == 1);
    // Cut by max_tokens: "length", and a prefix of the schema's language (not whole JSON).
    const auto cut = run(s, false, false, 1, 3);
    CHECK(cut.finish == "length");
    CHECK(cut.text.rfind("{", 0) == 0);
}

TEST_CASE("structured output: json_object and the native json_schema") {
    test::server_process s;
    const auto path = test::data_path("../../models/bitnet-fortunes-5m-i2_s.gguf");
    REQUIRE(test::load_and_wait(s, "tiny", path).at("state").as_string() == "ready");
    for (int seed = 1; seed <= 3; ++seed) {
        auto r = s.post("/v1/completions",
                        R"({"prompt":"x","max_tokens":64,"temperature":1,"seed":)" +
                            std::to_string(seed) + R"(,"response_format":{"type":"json_object"}})");
        REQUIRE_MESSAGE(r.status == 200, r.body);
        const auto c = test::parse_object(r.body).at("choices").as_array().at(0).as_object();
        if (c.at("finish_reason") == "stop")
            CHECK(json::parse(c.at("text").as_string()).is_object());
        auto n = s.post("/v1/inference",
                        R"({"prompt":"y","max_tokens":64,"temperature":1,"seed":)" +
                            std::to_string(seed) + R"(,"json_schema":)" + person_schema + "}");
        REQUIRE_MESSAGE(n.status == 200, n.body);
        const auto no = test::parse_object(n.body);
        if (no.at("finish_reason") == "eos")
            check_person(std::string(no.at("text").as_string()));
    }
}

TEST_CASE("tool calls: required and named tool_choice give tool_calls with valid arguments") {
    test::server_process s;
    const auto path = test::data_path("../../models/bitnet-fortunes-5m-i2_s.gguf");
    REQUIRE(test::load_and_wait(s, "tiny", path).at("state").as_string() == "ready");
    const std::string tools =
        R"("tools":[{"type":"function","function":{"name":"get_weather","description":"w",
        "parameters":{"type":"object","properties":{"city":{"type":"string","maxLength":12}},
        "required":["city"],"additionalProperties":false}}},{"type":"function","function":
        {"name":"add","parameters":{"type":"object","properties":{"a":{"type":"integer"},
        "b":{"type":"integer"}},"required":["a","b"],"additionalProperties":false}}}])";
    for (const std::string choice :
         {R"("required")", R"({"type":"function","function":{"name":"add"}})"})
        for (bool stream : {false, true})
            for (int seed = 1; seed <= 3; ++seed) {
                auto r = s.post("/v1/chat/completions",
                                R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":96,)"
                                R"("temperature":1,"seed":)" +
                                    std::to_string(seed) + R"(,"stream":)" +
                                    (stream ? "true" : "false") + "," + tools +
                                    R"(,"tool_choice":)" + choice + "}");
                REQUIRE_MESSAGE(r.status == 200, r.body);
                json::object call;
                std::string finish;
                if (!stream) {
                    const auto c =
                        test::parse_object(r.body).at("choices").as_array().at(0).as_object();
                    finish = std::string(c.at("finish_reason").as_string());
                    if (finish == "tool_calls") {
                        CHECK(c.at("message").as_object().at("content").is_null());
                        call = c.at("message")
                                   .as_object()
                                   .at("tool_calls")
                                   .as_array()
                                   .at(0)
                                   .as_object();
                    }
                } else {
                    for (const auto& d : sse_data(r.body)) {
                        if (d == "[DONE]")
                            break;
                        const auto c =
                            test::parse_object(d).at("choices").as_array().at(0).as_object();
                        const auto& delta = c.at("delta").as_object();
                        // A call streams as OpenAI's do: the id and name first, then argument
                        // deltas (a call to one of several functions comes in one piece).
                        if (const auto* tc = delta.if_contains("tool_calls")) {
                            const auto& part = tc->as_array().at(0).as_object();
                            CHECK(part.at("index").as_int64() == 0);
                            if (part.contains("id")) {
                                CHECK(call.empty());
                                call = part;
                            } else {
                                REQUIRE_FALSE(call.empty());
                                auto& fn = call["function"].as_object();
                                fn["arguments"] = std::string(fn["arguments"].as_string()) +
                                                  std::string(part.at("function")
                                                                  .as_object()
                                                                  .at("arguments")
                                                                  .as_string());
                            }
                        }
                        if (const auto* content = delta.if_contains("content"))
                            CHECK((content->is_null() || content->as_string().empty()));
                        if (!c.at("finish_reason").is_null())
                            finish = std::string(c.at("finish_reason").as_string());
                    }
                }
                CAPTURE(r.body);
                REQUIRE((finish == "tool_calls" || finish == "length"));
                if (finish != "tool_calls")
                    continue;
                CHECK(call.at("type") == "function");
                const auto& fn = call.at("function").as_object();
                const std::string name(fn.at("name").as_string());
                const auto args = json::parse(fn.at("arguments").as_string()).as_object();
                if (choice != R"("required")")
                    CHECK(name == "add");
                if (name == "add") {
                    CHECK(args.size() == 2);
                    CHECK(args.at("a").is_int64());
                    CHECK(args.at("b").is_int64());
                } else {
                    REQUIRE(name == "get_weather");
                    CHECK(args.size() == 1);
                    CHECK(args.at("city").is_string());
                }
            }
    auto unknown = s.post("/v1/chat/completions",
                          R"({"messages":[{"role":"user","content":"hi"}],)" + tools +
                              R"(,"tool_choice":{"type":"function","function":{"name":"nope"}}})");
    CHECK(unknown.status == 400);
    CHECK(test::parse_object(unknown.body).at("error").as_object().at("param") == "tool_choice");
}

TEST_CASE("a call forced to one function generates only its arguments: at most 12 tokens over "
          "them, and a cut call is no call and no content") {
    test::server_process s;
    const auto path = test::data_path("../../models/bitnet-fortunes-5m-i2_s.gguf");
    REQUIRE(test::load_and_wait(s, "tiny", path).at("state").as_string() == "ready");
    const std::string tools =
        R"("tools":[{"type":"function","function":{"name":"lookup","parameters":{"type":"object",
        "properties":{"query":{"type":"string","minLength":20,"maxLength":20}},
        "required":["query"],"additionalProperties":false}}}])";
    for (const std::string choice :
         {R"("required")", R"({"type":"function","function":{"name":"lookup"}})"})
        for (int seed = 1; seed <= 3; ++seed) {
            CAPTURE(choice);
            CAPTURE(seed);
            const auto r = s.post("/v1/chat/completions",
                                  R"({"model":"tiny","messages":[{"role":"user","content":"hi"}],)"
                                  R"("max_tokens":200,"temperature":1,"seed":)" +
                                      std::to_string(seed) + "," + tools + R"(,"tool_choice":)" +
                                      choice + "}");
            REQUIRE_MESSAGE(r.status == 200, r.body);
            const auto o = test::parse_object(r.body);
            const auto& c = o.at("choices").as_array().at(0).as_object();
            REQUIRE(c.at("finish_reason").as_string() == "tool_calls");
            const auto& fn = c.at("message")
                                 .as_object()
                                 .at("tool_calls")
                                 .as_array()
                                 .at(0)
                                 .as_object()
                                 .at("function")
                                 .as_object();
            CHECK(fn.at("name").as_string() == "lookup");
            const std::string args(fn.at("arguments").as_string());
            const auto parsed = json::parse(args).as_object();
            REQUIRE(parsed.at("query").is_string());
            CHECK(parsed.at("query").as_string().size() == 20);
            // The cost over the arguments' own tokens: no wrapper, no name.
            const auto tok = s.post("/v1/tokenize", R"({"model":"tiny","text":)" +
                                                        json::serialize(json::value(args)) +
                                                        R"(,"add_bos":false})");
            REQUIRE_MESSAGE(tok.status == 200, tok.body);
            const auto arg_tokens = static_cast<std::int64_t>(
                test::parse_object(tok.body).at("tokens").as_array().size());
            const auto spent = o.at("usage").as_object().at("completion_tokens").as_int64();
            MESSAGE("arguments " << args << ": " << arg_tokens << " tokens, the call spent "
                                 << spent);
            CHECK(spent <= arg_tokens + 12);
        }
    // Cut by max_tokens: no call and no content, plain or streamed.
    const std::string cut = R"({"model":"tiny","messages":[{"role":"user","content":"hi"}],)"
                            R"("max_tokens":4,"temperature":0,)" +
                            tools + R"(,"tool_choice":"required")";
    const auto plain = s.post("/v1/chat/completions", cut + "}");
    REQUIRE(plain.status == 200);
    const auto plain_o = test::parse_object(plain.body);
    const auto& pc = plain_o.at("choices").as_array().at(0).as_object();
    CHECK(pc.at("finish_reason").as_string() == "length");
    CHECK(pc.at("message").as_object().at("content").is_null());
    CHECK_FALSE(pc.at("message").as_object().contains("tool_calls"));
    const auto streamed = s.post("/v1/chat/completions", cut + R"(,"stream":true})");
    REQUIRE(streamed.status == 200);
    std::string finish;
    for (const auto& d : sse_data(streamed.body)) {
        if (d == "[DONE]")
            break;
        const auto chunk = test::parse_object(d);
        const auto& ch = chunk.at("choices").as_array().at(0).as_object();
        if (const auto* content = ch.at("delta").as_object().if_contains("content"))
            CHECK((content->is_null() || content->as_string().empty()));
        if (!ch.at("finish_reason").is_null())
            finish = std::string(ch.at("finish_reason").as_string());
    }
    CHECK(finish == "length");
}

TEST_CASE("structured output: a keyword that cannot be enforced is a 400 naming it, before any "
          "stream") {
    test::server_process s;
    for (bool stream : {false, true}) {
        auto r = s.post("/v1/completions",
                        R"({"prompt":"x","stream":)" + std::string(stream ? "true" : "false") +
                            R"(,"response_format":{"type":"json_schema","json_schema":{"name":"n",)"
                            R"("schema":{"type":"array","uniqueItems":true}}}})");
        REQUIRE_MESSAGE(r.status == 400, r.body);
        const auto e = test::parse_object(r.body).at("error").as_object();
        CHECK(e.at("code") == "invalid_value");
        CHECK(e.at("param") == "response_format");
        CHECK(std::string(e.at("message").as_string()).find("uniqueItems") != std::string::npos);
    }
    auto t = s.post("/v1/chat/completions",
                    R"({"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function",)"
                    R"("function":{"name":"f","parameters":{"type":"object","not":{}}}}],)"
                    R"("tool_choice":"required"})");
    REQUIRE_MESSAGE(t.status == 400, t.body);
    const auto te = test::parse_object(t.body).at("error").as_object();
    CHECK(te.at("param") == "tools");
    CHECK(std::string(te.at("message").as_string()).find("\"not\"") != std::string::npos);
    auto bad = s.post("/v1/completions", R"({"prompt":"x","response_format":{"type":"yaml"}})");
    CHECK(bad.status == 400);
}

TEST_CASE("structured output with n > 1: every choice decodes under its own matcher") {
    // The choices fork from the prompt's sequence and copy its schema state: each must validate
    // on its own, and choice i must equal the single request with seed + i (the mask and the
    // seed stream are per choice, so nothing of one choice leaks into another).
    test::server_process s;
    const std::string body =
        R"({"prompt":"A person:","max_tokens":48,"temperature":1,"seed":7,"n":4,)" +
        response_format(person_schema) + "}";
    auto r = s.post("/v1/completions", body);
    REQUIRE_MESSAGE(r.status == 200, r.body);
    const auto reply = test::parse_object(r.body);
    const auto& choices = reply.at("choices").as_array();
    REQUIRE(choices.size() == 4);
    for (std::size_t i = 0; i < choices.size(); ++i) {
        const auto& c = choices[i].as_object();
        CHECK(c.at("index").as_int64() == static_cast<std::int64_t>(i));
        const std::string text(c.at("text").as_string());
        if (c.at("finish_reason").as_string() == "stop")
            check_person(text);
        else
            CHECK(c.at("finish_reason").as_string() == "length");
        const std::string one = R"({"prompt":"A person:","max_tokens":48,"temperature":1,"seed":)" +
                                std::to_string(7 + i) + "," + response_format(person_schema) + "}";
        auto single = s.post("/v1/completions", one);
        REQUIRE(single.status == 200);
        CHECK_MESSAGE(test::parse_object(single.body)
                              .at("choices")
                              .as_array()
                              .at(0)
                              .as_object()
                              .at("text")
                              .as_string() == text,
                      "choice " << i);
    }
}

TEST_CASE("a forced tool call and an echo take n 1: 400s naming n") {
    test::server_process s;
    auto tool = s.post(
        "/v1/chat/completions",
        R"({"messages":[{"role":"user","content":"x"}],"n":2,"tool_choice":"required","tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false}}}]})");
    CHECK(tool.status == 400);
    CHECK(test::parse_object(tool.body).at("error").as_object().at("param").as_string() == "n");
    auto echo = s.post("/v1/completions",
                       R"({"prompt":"Hi","max_tokens":0,"echo":true,"logprobs":1,"n":2})");
    CHECK(echo.status == 400);
    CHECK(test::parse_object(echo.body).at("error").as_object().at("param").as_string() == "n");
    CHECK(s.post("/v1/completions", R"({"prompt":"Hi","max_tokens":0,"echo":true,"logprobs":1})")
              .status == 200);
}
