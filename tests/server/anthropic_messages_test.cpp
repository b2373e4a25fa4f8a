// Anthropic's Messages API on the real binary and the shipped default model: a plain reply and a
// stream with Anthropic's event sequence give the chat route's greedy text; a forced tool call
// comes back as a tool_use block (streamed as input_json_delta) and its result goes back as a
// tool_result block; errors come in Anthropic's shape; x-api-key is a key like a Bearer one.
#include "server/model_admin.hpp"
#include "server/raw_client.hpp"
#include "server/server_process.hpp"

using namespace bitnet;
namespace json = boost::json;

namespace {

const std::string key = "messages-key-1";

const std::string weather_tool =
    R"("tools":[{"name":"get_weather","description":"the weather","input_schema":{
       "type":"object","properties":{"city":{"type":"string","maxLength":12}},
       "required":["city"],"additionalProperties":false}}])";

} // namespace

TEST_CASE("messages: a plain reply and a stream in Anthropic's shapes, the chat route's text") {
    test::default_model m;
    const std::string ask = R"("model":"fortunes","max_tokens":12,"temperature":0,)"
                            R"("system":"You tell fortunes.",)"
                            R"("messages":[{"role":"user","content":"Tell me one."}])";
    const auto chat = m.s.post("/v1/chat/completions",
                               R"({"model":"fortunes","max_tokens":12,"temperature":0,
                                   "messages":[{"role":"system","content":"You tell fortunes."},
                                               {"role":"user","content":"Tell me one."}]})",
                               {});
    REQUIRE_MESSAGE(chat.status == 200, chat.body);
    const auto chat_o = test::parse_object(chat.body);
    const std::string want(chat_o.at("choices").at(0).at("message").at("content").as_string());

    const auto plain = m.s.post("/v1/messages", "{" + ask + "}");
    REQUIRE_MESSAGE(plain.status == 200, plain.body);
    const auto o = test::parse_object(plain.body);
    CHECK(std::string(o.at("id").as_string()).rfind("msg_", 0) == 0);
    CHECK(o.at("type") == "message");
    CHECK(o.at("role") == "assistant");
    CHECK(o.at("model") == "fortunes");
    REQUIRE(o.at("content").as_array().size() == 1);
    CHECK(o.at("content").at(0).at("type") == "text");
    CHECK(o.at("content").at(0).at("text").as_string() == want);
    const std::string stop(o.at("stop_reason").as_string());
    CHECK((stop == "end_turn" || stop == "max_tokens"));
    CHECK(o.at("stop_sequence").is_null());
    const auto& usage = o.at("usage").as_object();
    CHECK(usage.at("output_tokens") == chat_o.at("usage").at("completion_tokens").as_int64());
    CHECK(usage.at("input_tokens").as_int64() + usage.at("cache_read_input_tokens").as_int64() ==
          chat_o.at("usage").at("prompt_tokens").as_int64());

    const auto streamed = m.s.post("/v1/messages", "{" + ask + R"(,"stream":true})");
    REQUIRE(streamed.status == 200);
    CHECK(streamed.complete);
    const auto evs = test::sse_events(streamed.body);
    REQUIRE(evs.size() >= 6);
    std::vector<std::string> kinds;
    std::string text;
    for (const auto& [ev, data] : evs) {
        const auto d = test::parse_object(data);
        CHECK(d.at("type").as_string() == ev); // every event's data names its event
        if (kinds.empty() || kinds.back() != ev)
            kinds.push_back(ev);
        if (ev == "content_block_delta") {
            CHECK(d.at("delta").at("type") == "text_delta");
            text += d.at("delta").at("text").as_string();
        }
        if (ev == "message_delta") {
            CHECK(d.at("delta").at("stop_reason").as_string() == stop);
            CHECK(d.at("usage").at("output_tokens") == usage.at("output_tokens"));
        }
    }
    CHECK(kinds == std::vector<std::string>{"message_start", "content_block_start", "ping",
                                            "content_block_delta", "content_block_stop",
                                            "message_delta", "message_stop"});
    CHECK(text == want);
}

TEST_CASE("messages: a forced tool call as a tool_use block, streamed as input_json_delta, and "
          "its tool_result answered") {
    test::default_model m;
    const std::string ask = R"({"model":"fortunes","max_tokens":64,"temperature":0,)" +
                            weather_tool +
                            R"(,"tool_choice":{"type":"tool","name":"get_weather"},)"
                            R"("messages":[{"role":"user","content":"Weather in Oslo?"}])";
    const auto plain = m.s.post("/v1/messages", ask + "}");
    REQUIRE_MESSAGE(plain.status == 200, plain.body);
    const auto o = test::parse_object(plain.body);
    REQUIRE(o.at("stop_reason") == "tool_use");
    const auto& block = o.at("content").at(0).as_object();
    CHECK(block.at("type") == "tool_use");
    CHECK(block.at("name") == "get_weather");
    CHECK(std::string(block.at("id").as_string()).rfind("toolu_", 0) == 0);
    REQUIRE(block.at("input").at("city").is_string());

    const auto streamed = m.s.post("/v1/messages", ask + R"(,"stream":true})");
    REQUIRE(streamed.status == 200);
    std::string partial;
    bool started = false;
    std::string stop;
    for (const auto& [ev, data] : test::sse_events(streamed.body)) {
        const auto d = test::parse_object(data);
        if (ev == "content_block_start") {
            CHECK(d.at("content_block").at("type") == "tool_use");
            CHECK(d.at("content_block").at("name") == "get_weather");
            started = true;
        }
        if (ev == "content_block_delta") {
            CHECK(d.at("delta").at("type") == "input_json_delta");
            partial += d.at("delta").at("partial_json").as_string();
        }
        if (ev == "message_delta")
            stop = std::string(d.at("delta").at("stop_reason").as_string());
    }
    CHECK(started);
    CHECK(stop == "tool_use");
    CHECK(json::parse(partial) == block.at("input")); // greedy: the same call

    // The second turn: the call and its result go back as blocks.
    const auto second = m.s.post(
        "/v1/messages", R"({"model":"fortunes","max_tokens":8,"temperature":0,)" + weather_tool +
                            R"(,"messages":[{"role":"user","content":"Weather in Oslo?"},)"
                            R"({"role":"assistant","content":[)" +
                            json::serialize(block) +
                            R"(]},{"role":"user","content":[{"type":"tool_result","tool_use_id":)" +
                            json::serialize(block.at("id")) + R"(,"content":"sunny, 20 C"}]}]})");
    REQUIRE_MESSAGE(second.status == 200, second.body);
    const auto reply = test::parse_object(second.body);
    CHECK(reply.at("content").at(0).at("type") == "text");
    CHECK((reply.at("stop_reason") == "end_turn" || reply.at("stop_reason") == "max_tokens"));
}

TEST_CASE("messages: errors in Anthropic's shape, and x-api-key as the key") {
    test::server_process s({"--api-keys", key});
    const auto no_max =
        s.post("/v1/messages", R"({"messages":[{"role":"user","content":"x"}]})", key);
    CHECK(no_max.status == 400);
    auto e = test::parse_object(no_max.body);
    CHECK(e.at("type") == "error");
    CHECK(e.at("error").at("type") == "invalid_request_error");
    CHECK(std::string(e.at("error").at("message").as_string()).find("max_tokens") !=
          std::string::npos);
    CHECK(e.contains("request_id"));
    const auto image = s.post("/v1/messages", R"({"max_tokens":4,"messages":[{"role":"user",
        "content":[{"type":"image","source":{"type":"base64","data":""}}]}]})",
                              key);
    CHECK(image.status == 400);
    CHECK(image.body.find("'image' is not supported") != std::string::npos);
    // No key: Anthropic's authentication_error.
    const auto anon = s.post("/v1/messages", R"({"max_tokens":4,
        "messages":[{"role":"user","content":"x"}]})");
    CHECK(anon.status == 401);
    CHECK(test::parse_object(anon.body).at("error").at("type") == "authentication_error");
    // The key in x-api-key, as Anthropic's SDK sends it.
    const std::string body = R"({"max_tokens":2,"messages":[{"role":"user","content":"Once"}]})";
    const auto raw = test::raw_exchange(
        s.port(), "POST /v1/messages HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                  "Content-Type: application/json\r\nanthropic-version: 2023-06-01\r\n"
                  "x-api-key: " +
                      key + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
                      body);
    CHECK(test::status_of(raw) == 200);
    CHECK(raw.find(R"("type":"message")") != std::string::npos);
}

TEST_CASE("messages: count_tokens gives the prompt tokens the same request is charged") {
    test::default_model m;
    const std::string req = R"({"model":"fortunes","system":"You tell fortunes.",
        "messages":[{"role":"user","content":"Tell me one."}])";
    const auto count = m.s.post("/v1/messages/count_tokens", req + "}");
    REQUIRE_MESSAGE(count.status == 200, count.body);
    const auto n = test::parse_object(count.body).at("input_tokens").as_int64();
    CHECK(n > 0);
    const auto run = m.s.post("/v1/messages", req + R"(,"max_tokens":2,"temperature":0})");
    REQUIRE_MESSAGE(run.status == 200, run.body);
    const auto run_o = test::parse_object(run.body);
    const auto& usage = run_o.at("usage").as_object();
    CHECK(usage.at("input_tokens").as_int64() + usage.at("cache_read_input_tokens").as_int64() ==
          n);
    const auto bad = m.s.post("/v1/messages/count_tokens", R"({"messages":"x"})");
    CHECK(bad.status == 400);
    CHECK(test::parse_object(bad.body).at("error").at("type") == "invalid_request_error");
}

TEST_CASE("messages: message_start counts the prompt, stop_sequence names the stop string that "
          "ended the reply, and every answer carries request-id") {
    test::default_model m;
    const std::string msgs = R"("model":"fortunes","temperature":0,"system":"You tell fortunes.",)"
                             R"("messages":[{"role":"user","content":"Tell me one."}])";
    const auto count = m.s.post("/v1/messages/count_tokens", "{" + msgs + "}");
    REQUIRE(count.status == 200);
    const auto n = test::parse_object(count.body).at("input_tokens").as_int64();

    // The greedy reply, then a stop string from its middle: the same reply ends there.
    const auto free = m.s.post("/v1/messages", "{" + msgs + R"(,"max_tokens":16})");
    REQUIRE(free.status == 200);
    const std::string text(
        test::parse_object(free.body).at("content").at(0).at("text").as_string());
    REQUIRE(text.size() >= 6);
    const auto stop = text.substr(3, 3);
    const std::string stops = R"(,"stop_sequences":["never-in-this-text",)" +
                              boost::json::serialize(boost::json::value(stop)) + "]";
    const auto stopped = m.s.post("/v1/messages", "{" + msgs + R"(,"max_tokens":16)" + stops + "}");
    REQUIRE(stopped.status == 200);
    const auto so = test::parse_object(stopped.body);
    CHECK(so.at("stop_reason") == "stop_sequence");
    REQUIRE(so.at("stop_sequence").is_string());
    CHECK(so.at("stop_sequence").as_string() == stop);

    // Streamed: message_start has the prompt's tokens (the count_tokens figure), message_delta
    // the stop string.
    const auto st =
        m.s.post("/v1/messages", "{" + msgs + R"(,"max_tokens":16,"stream":true)" + stops + "}");
    REQUIRE(st.status == 200);
    bool started = false, delta = false;
    for (const auto& ev : test::sse_data(st.body)) {
        const auto e = test::parse_object(ev);
        if (e.at("type") == "message_start") {
            started = true;
            CHECK(e.at("message").at("usage").at("input_tokens").as_int64() == n);
        }
        if (e.at("type") == "message_delta") {
            delta = true;
            CHECK(e.at("delta").at("stop_reason") == "stop_sequence");
            CHECK(e.at("delta").at("stop_sequence") == boost::json::value(stop));
        }
    }
    CHECK(started);
    CHECK(delta);

    // request-id (Anthropic's header) beside X-Request-Id, on errors and on streams.
    const std::string bad = R"({"model":"fortunes","max_tokens":4,"messages":"x"})";
    const auto raw = test::raw_exchange(
        m.s.port(), "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    "Connection: close\r\nContent-Length: " +
                        std::to_string(bad.size()) + "\r\n\r\n" + bad);
    CHECK(test::status_of(raw) == 400);
    const auto at = raw.find("\r\nrequest-id: req-");
    REQUIRE(at != std::string::npos);
    const auto id = raw.substr(at + 14, raw.find("\r\n", at + 2) - at - 14);
    CHECK(raw.find("X-Request-Id: " + id + "\r\n") != std::string::npos);
    CHECK(raw.find(R"("request_id":")" + id + "\"") != std::string::npos);
    const std::string sbody = "{" + msgs + R"(,"max_tokens":2,"stream":true})";
    const auto sraw = test::raw_exchange(
        m.s.port(), "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    "Connection: close\r\nContent-Length: " +
                        std::to_string(sbody.size()) + "\r\n\r\n" + sbody);
    CHECK(sraw.find("\r\nrequest-id: req-") != std::string::npos);
}
