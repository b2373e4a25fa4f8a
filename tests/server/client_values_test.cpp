// What one request's own values may cost the server, on the real binary: a Responses request that
// names one stored item thousands of times is refused as its references are resolved (bounded
// memory, a 400 naming the limit), a deleted reply's text never reaches a later chain, and an
// unknown model name of 900 KB costs a short log line, not 900 KB of log.
#include "server/server_process.hpp"

#include <string>

using namespace bitnet;

TEST_CASE("responses: a stored item named 14,978 times is a 400 naming the limit, and the "
          "server's memory does not grow with it") {
    test::without_asan_quarantine();
    test::server_process s;
    // A stored reply.
    const std::string big(1000, 'x');
    const auto first = s.post("/v1/responses", R"({"input":[{"role":"user","content":")" + big +
                                                   R"("}],"max_output_tokens":1})");
    REQUIRE_MESSAGE(first.status == 200, first.body);
    const auto fo = test::parse_object(first.body);
    const std::string msg_id(fo.at("output").at(0).at("id").as_string());
    // Its message named 14,978 times: under the 1 MiB body limit as sent, far past it expanded.
    std::string body = R"({"max_output_tokens":1,"input":[)";
    for (int i = 0; i < 14978; ++i)
        body += std::string(i ? "," : "") + R"({"type":"item_reference","id":")" + msg_id + "\"}";
    body += "]}";
    REQUIRE(body.size() < (1u << 20));
    const auto before = test::rss_bytes(s.pid());
    const auto fan = s.post("/v1/responses", body);
    const auto after = test::rss_bytes(s.pid());
    CHECK(fan.status == 400);
    const auto err = test::parse_object(fan.body).at("error");
    // Refused where the references are resolved, naming the limit it passed (the body as sent
    // is near max_body_bytes, so the bytes of the first items pass it), not once the whole
    // expansion was built (then it named previous_response_id and the built body's size).
    CHECK(err.at("param") == "input");
    const std::string message(err.at("message").as_string());
    CHECK((message.find("max_body_bytes") != std::string::npos ||
           message.find("max_item_references") != std::string::npos));
    CHECK(message.find("input[") != std::string::npos);
    CHECK(after < before + (100u << 20));
    CHECK(s.alive());
}

TEST_CASE("responses: after DELETE of a reply, a chain that holds its text refuses to continue") {
    test::server_process s;
    const auto first = s.post("/v1/responses", R"({"input":"secret turn","max_output_tokens":2})");
    REQUIRE_MESSAGE(first.status == 200, first.body);
    const std::string a(test::parse_object(first.body).at("id").as_string());
    const auto second = s.post("/v1/responses", R"({"previous_response_id":")" + a +
                                                    R"(","input":"next","max_output_tokens":2})");
    REQUIRE_MESSAGE(second.status == 200, second.body);
    const std::string b(test::parse_object(second.body).at("id").as_string());
    const auto unrelated = s.post("/v1/responses", R"({"input":"other","max_output_tokens":2})");
    REQUIRE(unrelated.status == 200);
    const std::string c(test::parse_object(unrelated.body).at("id").as_string());

    REQUIRE(s.del("/v1/responses/" + a).status == 200);
    // b's conversation holds a's turn: continuing it would send the deleted text again.
    const auto past = s.post("/v1/responses", R"({"previous_response_id":")" + b +
                                                  R"(","input":"again","max_output_tokens":2})");
    CHECK(past.status == 400);
    const auto err = test::parse_object(past.body).at("error");
    CHECK(err.at("param") == "previous_response_id");
    const std::string message(err.at("message").as_string());
    CHECK(message.find(a) != std::string::npos);
    CHECK(message.find("deleted") != std::string::npos);
    // A chain that never held it goes on.
    CHECK(s.post("/v1/responses",
                 R"({"previous_response_id":")" + c + R"(","input":"x","max_output_tokens":2})")
              .status == 200);
}

TEST_CASE(
    "logs quote a short excerpt of a client's value: a 900 KB model name costs a short line") {
    test::server_process s;
    const auto log_before = s.log().size();
    const std::string name(900 * 1024, 'm');
    for (const char* route : {"/v1/chat/completions", "/v1/completions"}) {
        const std::string body =
            std::string(route).find("chat") != std::string::npos
                ? R"({"model":")" + name +
                      R"(","messages":[{"role":"user","content":"hi"}],"max_tokens":1})"
                : R"({"model":")" + name + R"(","prompt":"hi","max_tokens":1})";
        const auto r = s.post(route, body);
        CHECK(r.status >= 400);
        CHECK(r.body.size() < 4096); // the error body quotes an excerpt too
    }
    // A line or two per request, each a few KB at most; 900 KB per request before.
    CHECK(s.log().size() - log_before < 16 * 1024);
    // U+2028 in a name is escaped in the text log, not written raw.
    const auto sep = s.post("/v1/completions", R"({"model":"a\u2028b","prompt":"x"})");
    CHECK(sep.status >= 400);
    const auto log = s.log();
    CHECK(log.find("a\xE2\x80\xA8"
                   "b") == std::string::npos);
}
