// Anthropic's message threads (`thread` on POST /v1/messages) on the real binary: a create keeps
// its reply per API key, a continue sends only its new messages and gets the prompt of the whole
// conversation (system and tools from the create), a stored reply is continued once, a streamed
// reply is kept too, another key's reply is not found, and each refusal carries the
// `error.details.error_code` Anthropic's SDK recovers by.
#include "server/server_process.hpp"

using namespace bitnet;
namespace json = boost::json;

namespace {

const std::string key_a = "thread-key-a1";
const std::string key_b = "thread-key-b2";

const std::string tools =
    R"("tools":[{"name":"get_weather","description":"the weather","input_schema":{
       "type":"object","properties":{"city":{"type":"string","maxLength":12}},
       "required":["city"],"additionalProperties":false}}])";
const std::string system_prompt = R"("system":"You answer weather questions.")";
const std::string question = R"({"role":"user","content":"Weather in Oslo?"})";

std::string tool_result(const json::value& tool_use_id) {
    return R"({"role":"user","content":[{"type":"tool_result","tool_use_id":)" +
           json::serialize(tool_use_id) + R"(,"content":"sunny, 20 C"}]})";
}

std::string continue_of(const std::string& id) {
    return R"("thread":{"type":"continue","previous_message_id":")" + id + R"("})";
}

/// The refusal's error.details.error_code, checked to be Anthropic's shape and final.
std::string error_code(const test::http_reply& r) {
    const auto o = test::parse_object(r.body);
    CHECK(o.at("type") == "error");
    CHECK(r.headers.count("x-should-retry") == 1);
    if (r.headers.count("x-should-retry"))
        CHECK(r.headers.at("x-should-retry") == "false");
    return std::string(o.at("error").at("details").at("error_code").as_string());
}

} // namespace

TEST_CASE("messages threads: a continue gets the whole conversation's prompt, once, for its own "
          "key only") {
    test::server_process s({"--api-keys", key_a + "," + key_b});
    const auto create =
        s.post("/v1/messages",
               R"({"max_tokens":48,"temperature":0,)" + system_prompt + "," + tools +
                   R"(,"tool_choice":{"type":"tool","name":"get_weather"},)"
                   R"("thread":{"type":"create"},"messages":[)" +
                   question + "]}",
               key_a);
    REQUIRE_MESSAGE(create.status == 200, create.body);
    const auto co = test::parse_object(create.body);
    const std::string first(co.at("id").as_string());
    CHECK(first.size() == 4 + 32); // msg_ and 128 bits: never reused after a restart
    REQUIRE(co.at("stop_reason") == "tool_use");
    const auto& call = co.at("content").at(0);

    // The continue: only the tool result, no system, no tools.
    const auto cont = s.post("/v1/messages",
                             R"({"max_tokens":6,"temperature":0,)" + continue_of(first) +
                                 R"(,"messages":[)" + tool_result(call.at("id")) + "]}",
                             key_a);
    REQUIRE_MESSAGE(cont.status == 200, cont.body);
    const auto c = test::parse_object(cont.body);
    // The same turn sent whole, without a thread: the same prompt and the same greedy text.
    const auto whole =
        s.post("/v1/messages",
               R"({"max_tokens":6,"temperature":0,)" + system_prompt + "," + tools +
                   R"(,"messages":[)" + question + R"(,{"role":"assistant","content":[)" +
                   json::serialize(call) + "]}," + tool_result(call.at("id")) + "]}",
               key_a);
    REQUIRE_MESSAGE(whole.status == 200, whole.body);
    const auto w = test::parse_object(whole.body);
    const auto prompt = [](const json::object& m) {
        return m.at("usage").at("input_tokens").as_int64() +
               m.at("usage").at("cache_read_input_tokens").as_int64();
    };
    CHECK(prompt(c) == prompt(w));
    CHECK(prompt(c) > prompt(co));
    CHECK(c.at("content") == w.at("content"));

    // Continued once: the same anchor again is thread_already_continued (409).
    const auto again = s.post("/v1/messages",
                              R"({"max_tokens":2,)" + continue_of(first) + R"(,"messages":[)" +
                                  tool_result(call.at("id")) + "]}",
                              key_a);
    CHECK(again.status == 409);
    CHECK(error_code(again) == "thread_already_continued");

    // Another key cannot continue it: not found, as if it were never stored.
    const std::string second(c.at("id").as_string());
    const auto next_turn = R"(,"messages":[{"role":"user","content":"And tomorrow?"}]})";
    const auto stranger =
        s.post("/v1/messages", R"({"max_tokens":2,)" + continue_of(second) + next_turn, key_b);
    CHECK(stranger.status == 404);
    CHECK(error_code(stranger) == "thread_not_found");
    CHECK(test::parse_object(stranger.body).at("error").at("type") == "not_found_error");
    const auto unknown = s.post(
        "/v1/messages", R"({"max_tokens":2,)" + continue_of("msg_nothing") + next_turn, key_a);
    CHECK(unknown.status == 404);
    CHECK(error_code(unknown) == "thread_not_found");

    // A continue that repeats system (kept from the create) is refused, naming it.
    const auto repeats = s.post(
        "/v1/messages",
        R"({"max_tokens":2,)" + system_prompt + "," + continue_of(second) + next_turn, key_a);
    CHECK(repeats.status == 400);
    CHECK(test::parse_object(repeats.body).at("error").at("message").as_string().find("system") !=
          std::string::npos);

    // The owner continues it streamed; the streamed reply is kept and continues in turn.
    const auto streamed =
        s.post("/v1/messages",
               R"({"max_tokens":4,"stream":true,)" + continue_of(second) + next_turn, key_a);
    REQUIRE_MESSAGE(streamed.status == 200, streamed.body);
    std::string third;
    for (const auto& [ev, data] : test::sse_events(streamed.body))
        if (ev == "message_start")
            third = std::string(test::parse_object(data).at("message").at("id").as_string());
    REQUIRE(!third.empty());
    const auto fourth = s.post("/v1/messages",
                               R"({"max_tokens":2,)" + continue_of(third) +
                                   R"(,"messages":[{"role":"user","content":"Thanks."}]})",
                               key_a);
    CHECK_MESSAGE(fourth.status == 200, fourth.body);
}

TEST_CASE("messages threads: bad thread shapes are 400s naming the field, count_tokens takes no "
          "thread, and a server that stores nothing says thread_unsupported_request") {
    test::server_process s;
    const std::string ask = R"("max_tokens":2,"messages":[)" + question + "]";
    for (const std::string bad :
         {R"({"type":"fork"})", R"("continue")", R"({"type":"continue"})",
          R"({"type":"create","previous_message_id":"msg_x"})", R"({"type":"create","x":1})"}) {
        const auto r = s.post("/v1/messages", "{" + ask + R"(,"thread":)" + bad + "}");
        CHECK_MESSAGE(r.status == 400, bad);
        CHECK(test::parse_object(r.body).at("error").at("message").as_string().find("thread") !=
              std::string::npos);
    }
    const auto counted = s.post("/v1/messages/count_tokens",
                                R"({"thread":{"type":"create"},"messages":[)" + question + "]}");
    CHECK(counted.status == 400);

    test::server_process none({"--responses-store-max", "0"});
    const auto refused = none.post("/v1/messages", "{" + ask + R"(,"thread":{"type":"create"}})");
    CHECK(refused.status == 400);
    CHECK(error_code(refused) == "thread_unsupported_request");
    const auto details = test::parse_object(refused.body).at("error").at("details");
    CHECK(details.at("unsupported") == json::parse(R"(["thread"])"));
    // Without thread the same request is served.
    CHECK(none.post("/v1/messages", "{" + ask + "}").status == 200);
}
