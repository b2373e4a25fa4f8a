// bitnet-server as a process, under the schemas of the structured-output abuse table: requests
// that crashed the process are 400s with the process alive (and a normal request served after
// them); requests that hung or stalled a model finish within their stated deadline; the mask
// cache stays within its budget over 200 distinct schemas; wrong answers are right. The library
// tests (tests/constrain/schema_abuse_test.cpp) check the same rows on the grammar itself.
#include "server/server_process.hpp"
#include "support/utf8_encode.hpp"

#include <string>

using namespace bitnet;
namespace json = boost::json;

namespace {

std::string quoted(const std::string& s) {
    return json::serialize(json::value(s));
}

std::string rf(const std::string& schema) {
    return R"("response_format":{"type":"json_schema","json_schema":{"name":"t","schema":)" +
           schema + "}}";
}

/// A completion under `schema`, bounded by a deadline: a hang would end as an error, not a reply.
test::http_reply constrained(const test::server_process& s, const std::string& schema,
                             int max_tokens = 24, int seed = 1) {
    return s.post("/v1/completions", R"({"prompt":"x","max_tokens":)" + std::to_string(max_tokens) +
                                         R"(,"temperature":1,"seed":)" + std::to_string(seed) +
                                         R"(,"timeout_ms":60000,)" + rf(schema) + "}");
}

json::object choice0(const test::http_reply& r) {
    return test::parse_object(r.body).at("choices").as_array().at(0).as_object();
}

/// The server still serves an ordinary request.
void check_serving(const test::server_process& s) {
    REQUIRE(s.alive());
    CHECK(s.get("/health/live").status == 200);
    auto r = s.post("/v1/completions", R"({"prompt":"Never","max_tokens":4})");
    CHECK(r.status == 200);
}

void check_400(const test::http_reply& r, const std::string& needle) {
    CHECK_MESSAGE(r.status == 400, r.body);
    const auto e = test::parse_object(r.body).at("error").as_object();
    CHECK(e.at("code") == "invalid_value");
    CHECK_MESSAGE(std::string(e.at("message").as_string()).find(needle) != std::string::npos,
                  r.body);
    CHECK(r.body.size() < 2000); // an excerpt of the offending text, not all of it
}

} // namespace

TEST_CASE("abuse (server): schemas that crashed the process are 400s, through every way in") {
    test::server_process s;
    const std::string nested = std::string(12000, '(') + "a" + std::string(12000, ')');
    const std::string schema = R"({"type":"string","pattern":)" + quoted(nested) + "}";
    check_400(constrained(s, schema), "max_pattern_nesting");
    // The same schema as tool parameters and as the native json_schema.
    check_400(
        s.post(
            "/v1/chat/completions",
            R"({"messages":[{"role":"user","content":"x"}],"tool_choice":"required",)"
            R"("tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"p":)" +
                schema + "}}}}]}"),
        "max_pattern_nesting");
    check_400(s.post("/v1/inference", R"({"prompt":"x","json_schema":)" + schema + "}"),
              "max_pattern_nesting");
    const std::string stars = "a" + std::string(300000, '*');
    check_400(constrained(s, R"({"type":"string","pattern":)" + quoted(stars) + "}"),
              "quantifier after a quantifier");
    check_serving(s);
    // 20,000 chained $defs compile (no recursion) and constrain the output.
    std::string defs;
    for (int i = 0; i < 20000; ++i)
        defs +=
            "\"d" + std::to_string(i) + "\":{\"$ref\":\"#/$defs/d" + std::to_string(i + 1) + "\"},";
    defs += R"("d20000":{"type":"integer","minimum":0,"maximum":9})";
    auto chain = constrained(s, R"({"$defs":{)" + defs + R"(},"$ref":"#/$defs/d0"})", 8);
    REQUIRE_MESSAGE(chain.status == 200, chain.body);
    const auto c = choice0(chain);
    if (c.at("finish_reason") == "stop") {
        const auto v = json::parse(c.at("text").as_string());
        CHECK(v.is_int64());
        CHECK(v.to_number<std::int64_t>() <= 9);
    }
    check_serving(s);
}

TEST_CASE("abuse (server): schemas that wedged a model are refused or finish, and it serves on") {
    test::server_process s;
    check_400(constrained(s, R"({"anyOf":[{"$ref":"#"},{"$ref":"#"},{"$ref":"#"}]})"),
              "left recursion");
    check_serving(s);
    const auto rss0 = test::rss_bytes(s.pid());
    std::string defs;
    for (int i = 0; i < 25; ++i)
        defs += "\"d" + std::to_string(i) + "\":{\"anyOf\":[{\"$ref\":\"#/$defs/d" +
                std::to_string(i + 1) + "\"},{\"$ref\":\"#/$defs/d" + std::to_string(i + 1) +
                "\"}]},";
    defs += R"("d25":{"type":"array","items":{"$ref":"#/$defs/d0"},"maxItems":3})";
    const char* twin =
        R"({"type":"object","properties":{"c":{"$ref":"#"}},"additionalProperties":false})";
    for (const std::string& schema : {R"({"$defs":{)" + defs + R"(},"$ref":"#/$defs/d0"})",
                                      std::string(R"({"anyOf":[)") + twin + "," + twin + "]}"}) {
        for (int seed = 1; seed <= 3; ++seed) {
            auto r = constrained(s, schema, 64, seed);
            REQUIRE_MESSAGE(r.status == 200, r.body);
            const auto f = choice0(r).at("finish_reason");
            CHECK((f == "stop" || f == "length"));
        }
    }
    // Was +550 MiB and growing; the bound is generous for the allocator's own slack.
    CHECK(test::rss_bytes(s.pid()) < rss0 + (64u << 20));
    check_serving(s);
}

TEST_CASE("abuse (server): the schemas that stalled other streams finish within their deadline") {
    test::server_process s;
    // A 140,000-range negated class.
    const std::string cls = test::sparse_code_points(140000);
    std::string members;
    for (int i = 0; i < 14000; ++i)
        members += (i ? "," : "") + quoted("value-" + std::to_string(i));
    for (const std::string& schema :
         {R"({"type":"string","pattern":)" + quoted("^[^" + cls + "]*$") + "}",
          R"({"enum":[)" + members + "]}"}) {
        auto r = constrained(s, schema, 16);
        REQUIRE_MESSAGE(r.status == 200, r.body.substr(0, 300));
        const auto f = choice0(r).at("finish_reason");
        CHECK((f == "stop" || f == "length"));
    }
    std::string tools;
    for (int i = 0; i < 1000; ++i)
        tools +=
            std::string(i ? "," : "") + R"({"type":"function","function":{"name":"tool_)" +
            std::to_string(i) +
            R"(","parameters":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"],"additionalProperties":false}}})";
    auto t = s.post(
        "/v1/chat/completions",
        R"({"messages":[{"role":"user","content":"x"}],"max_tokens":24,"timeout_ms":60000,"tools":[)" +
            tools + R"(],"tool_choice":"required"})");
    REQUIRE_MESSAGE(t.status == 200, t.body.substr(0, 300));
    const auto f = choice0(t).at("finish_reason");
    CHECK((f == "tool_calls" || f == "length"));
    check_serving(s);
}

TEST_CASE("abuse (server): the mask cache stays within its budget over 200 distinct schemas") {
    test::server_process s({"--mask-cache-bytes", "1048576"});
    for (int i = 0; i < 200; ++i) {
        auto r = constrained(s,
                             R"({"type":"array","items":{"type":"integer","minimum":)" +
                                 std::to_string(i) + R"(,"maximum":)" +
                                 std::to_string(1000 + i * 7) + "}}",
                             6, i);
        REQUIRE_MESSAGE(r.status == 200, r.body);
    }
    const auto st = test::parse_object(s.get("/v1/stats").body).at("mask_cache").as_object();
    CHECK(st.at("budget_bytes").as_int64() == 1048576);
    CHECK(st.at("bytes").as_int64() <= 1048576);
    CHECK(st.at("masks").as_int64() > 0);
}

TEST_CASE("abuse (server): exact answers — multipleOf, enum numbers, tool $defs, stop, cut calls") {
    test::server_process s;
    for (int seed = 1; seed <= 4; ++seed) {
        auto r = constrained(s, R"({"type":"integer","multipleOf":10000000000})", 12, seed);
        REQUIRE(r.status == 200);
        const auto c = choice0(r);
        if (c.at("finish_reason") == "stop") {
            const std::string t(c.at("text").as_string());
            CHECK_MESSAGE((t == "0" || t.size() >= 11), t);
            CHECK_MESSAGE(
                t.substr(t.size() > 10 ? t.size() - 10 : 0) == (t == "0" ? "0" : "0000000000"), t);
        }
    }
    auto e = constrained(s, R"({"enum":[123456789012345678901234567890]})", 40);
    REQUIRE(e.status == 200);
    CHECK(choice0(e).at("text") == "123456789012345678901234567890");
    // Pydantic-style tool parameters: $defs and $ref inside the parameters resolve there.
    const std::string tools =
        R"("tools":[{"type":"function","function":{"name":"put","parameters":{"$defs":{"Item":{"type":"object","properties":{"n":{"type":"integer","minimum":0,"maximum":9}},"required":["n"],"additionalProperties":false}},"type":"object","properties":{"item":{"$ref":"#/$defs/Item"}},"required":["item"],"additionalProperties":false}}}])";
    auto t =
        s.post("/v1/chat/completions",
               R"({"messages":[{"role":"user","content":"x"}],"max_tokens":64,"temperature":0,)" +
                   tools + R"(,"tool_choice":"required"})");
    REQUIRE_MESSAGE(t.status == 200, t.body);
    const auto tc = choice0(t);
    if (tc.at("finish_reason") == "tool_calls") {
        const auto args = json::parse(tc.at("message")
                                          .at("tool_calls")
                                          .as_array()
                                          .at(0)
                                          .at("function")
                                          .at("arguments")
                                          .as_string());
        CHECK(args.at("item").at("n").is_int64());
    }
    // A forced call cut by max_tokens: "length", no content, no calls.
    auto cut = s.post("/v1/chat/completions",
                      R"({"messages":[{"role":"user","content":"x"}],"max_tokens":3,)" + tools +
                          R"(,"tool_choice":"required"})");
    REQUIRE(cut.status == 200);
    const auto cc = choice0(cut);
    CHECK(cc.at("finish_reason") == "length");
    CHECK(cc.at("message").at("content").is_null());
    CHECK_FALSE(cc.at("message").as_object().contains("tool_calls"));
    // Stop strings never cut a constrained value: "finish_reason":"stop" means a whole value.
    for (int seed = 1; seed <= 4; ++seed) {
        auto r = s.post(
            "/v1/completions",
            R"({"prompt":"x","max_tokens":48,"temperature":1,"seed":)" + std::to_string(seed) +
                R"(,"stop":["\"",":",","],)" +
                rf(R"({"type":"object","properties":{"a":{"type":"string","maxLength":4}},"required":["a"],"additionalProperties":false})") +
                "}");
        REQUIRE(r.status == 200);
        const auto c = choice0(r);
        if (c.at("finish_reason") == "stop") {
            boost::system::error_code ec;
            const auto v = json::parse(c.at("text").as_string(), ec);
            CHECK_MESSAGE(!ec, c.at("text").as_string());
        }
    }
}

TEST_CASE("readiness per alias: /health/ready?model= names one model") {
    test::server_process s;
    CHECK(s.get("/health/ready?model=tiny").status == 200);
    const auto no = s.get("/health/ready?model=nope");
    CHECK(no.status == 503);
    CHECK(no.body.find("no model 'nope'") != std::string::npos);
}
