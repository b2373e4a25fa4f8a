// The HTTP server over real loopback sockets, in-process, in front of the real actors. The model
// is the contract-checking fake engine (tests/actors/fake_engine.hpp) until model::engine lands;
// then these run against `bitnet-model make --shape tiny`.
#include "integration/live_server.hpp"

#include <boost/json.hpp>
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <regex>
#include <thread>

using namespace bitnet;
using namespace live_rig;
using namespace std::chrono_literals;
namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

TEST_CASE("health, a completion, the error shape, 404, 405, 413, 415, metrics and stats") {
    live_server s;
    CHECK(s.get("/health/live").status == 200);
    CHECK(s.get("/health/ready").status == 200);

    auto r = s.post("/v1/inference", R"({"prompt":[1,2,3],"max_tokens":4})");
    REQUIRE(r.status == 200);
    auto o = boost::json::parse(r.body).as_object();
    CHECK(o.at("finish_reason").as_string() == "length");
    CHECK(o.at("text").as_string() == "<4><5><6><7>");
    CHECK(o.at("tokens").as_array().size() == 4);
    CHECK(o.at("usage").as_object().at("total_tokens").as_int64() == 7);
    CHECK(o.at("timings").as_object().contains("ttft_ms"));

    auto c = s.post("/v1/completions", R"({"prompt":[27],"max_tokens":10})");
    REQUIRE(c.status == 200);
    auto co = boost::json::parse(c.body).as_object();
    CHECK(co.at("object").as_string() == "text_completion");
    CHECK(co.at("choices").as_array()[0].as_object().at("finish_reason").as_string() == "stop");

    auto bad = s.post("/v1/inference", R"({"prompt":[1],"temperature":9})");
    CHECK(bad.status == 400);
    auto e = error_of(bad);
    CHECK(e.at("param").as_string() == "temperature");
    CHECK(e.at("type").as_string() == "invalid_request_error");
    CHECK_FALSE(e.at("request_id").as_string().empty());
    CHECK_FALSE(e.at("suggestion").as_string().empty());

    auto malformed = s.post("/v1/inference", "{nope");
    CHECK(malformed.status == 400);

    auto unknown = s.post("/v1/inference", R"({"prompt":[1],"model":"nope"})");
    CHECK(unknown.status == 404);
    CHECK(error_of(unknown).at("code").as_string() == "model_not_found");

    auto bad_id = s.post("/v1/inference", R"({"prompt":[99999999999]})");
    CHECK(bad_id.status == 400);
    CHECK(error_of(bad_id).at("param").as_string() == "prompt");
    std::string ids = "1";
    for (int i = 1; i < 64; ++i) // the fake model's context holds 64 tokens
        ids += ",1";
    auto too_long = s.post("/v1/inference", R"({"prompt":[)" + ids + "]}");
    CHECK(too_long.status == 400);
    CHECK(error_of(too_long).at("code").as_string() == "context_length_exceeded");

    CHECK(s.get("/no/such/route").status == 404);
    CHECK(s.get("/v1/inference").status == 405);
    CHECK(s.post("/v1/inference", std::string(5000, ' ')).status == 413);
    CHECK(s.request(bhttp::verb::post, "/v1/inference", "prompt", "text/plain").status == 415);

    auto m = s.get("/metrics");
    CHECK(m.status == 200);
    CHECK(m.content_type.find("text/plain") == 0);
    for (const char* name : {"bitnet_requests_total", "bitnet_time_to_first_token_seconds",
                             "bitnet_generated_tokens_total", "vllm:num_requests_running",
                             "vllm:kv_cache_usage_perc", "bitnet_requests_waiting"})
        CHECK_MESSAGE(m.body.find(name) != std::string::npos, std::string(name));

    // /v1/stats is admission's polled view (every poll_interval): wait for it to catch up.
    boost::json::array models;
    for (int i = 0; i < 200; ++i) {
        auto st = s.get("/v1/stats");
        REQUIRE(st.status == 200);
        models = boost::json::parse(st.body).as_object().at("models").as_array();
        if (models.size() == 1 && models[0].as_object().at("kv_blocks_used").as_int64() == 0)
            break;
        std::this_thread::sleep_for(5ms);
    }
    REQUIRE(models.size() == 1);
    CHECK(models[0].as_object().at("kv_blocks_used").as_int64() == 0);
    CHECK(models[0].as_object().at("finished").as_int64() == 2);

    auto list = s.get("/v1/models");
    CHECK(list.status == 200);
    CHECK(list.body.find(R"("id":"tiny")") != std::string::npos);
}

TEST_CASE("SSE framing: native events and OpenAI chunks ending in [DONE]") {
    live_server s;
    auto native = s.post("/v1/inference/stream", R"({"prompt":[1],"max_tokens":3})");
    REQUIRE(native.status == 200);
    CHECK(native.content_type == "text/event-stream");
    CHECK(native.body.find("event: token\ndata: {\"index\":0,\"token_id\":2,") !=
          std::string::npos);
    CHECK(native.body.find("event: done\ndata: {\"finish_reason\":\"length\"") !=
          std::string::npos);

    auto chat = s.post("/v1/completions",
                       R"({"prompt":[1],"max_tokens":2,"stream":true,
                           "stream_options":{"include_usage":true}})");
    REQUIRE(chat.status == 200);
    const auto& b = chat.body;
    CHECK(b.find("data: {\"id\":\"cmpl-") == 0);
    CHECK(b.find("\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2") !=
          std::string::npos);
    REQUIRE(b.size() >= 14);
    CHECK(b.substr(b.size() - 14) == "data: [DONE]\n\n");
}

TEST_CASE("503 with Retry-After when the queue cap is hit") {
    live_server s(2, 20ms, 1); // slow steps, one sequence at a time, two may wait
    std::vector<std::thread> clients;
    std::atomic<int> refused{0};
    std::string retry_after;
    std::mutex mu;
    // Each admitted request holds its place for 60 slow steps, so the eight overlap even when the
    // client threads start late (sanitizer builds on a loaded machine).
    for (int i = 0; i < 8; ++i)
        clients.emplace_back([&] {
            auto r = s.post("/v1/inference", R"({"prompt":[1],"max_tokens":60})");
            if (r.status == 503) {
                ++refused;
                std::lock_guard lk(mu);
                retry_after = r.retry_after;
                CHECK(error_of(r).at("code").as_string() == "queue_full");
            } else {
                CHECK(r.status == 200);
            }
        });
    for (auto& t : clients)
        t.join();
    CHECK(refused > 0);
    CHECK_FALSE(retry_after.empty());
}

TEST_CASE("a client that disconnects mid-stream is cancelled and its KV freed") {
    live_server s(64, 10ms);
    {
        net::io_context ioc;
        beast::tcp_stream stream(ioc);
        stream.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), s.port));
        bhttp::request<bhttp::string_body> req{bhttp::verb::post, "/v1/inference/stream", 11};
        req.set(bhttp::field::host, "127.0.0.1"); // HTTP/1.1 needs one
        req.set(bhttp::field::content_type, "application/json");
        req.body() = R"({"prompt":[1,2,3,4,5,6,7,8,9],"max_tokens":40})";
        req.prepare_payload();
        bhttp::write(stream, req);
        char buf[256];
        stream.expires_after(5s);
        (void)stream.read_some(net::buffer(buf)); // headers and maybe a token: it is running
        // Gone: close the socket mid-stream.
    }
    bool freed = false;
    for (int i = 0; i < 300 && !freed; ++i) {
        std::this_thread::sleep_for(10ms);
        auto st = s.get("/v1/stats");
        auto m = boost::json::parse(st.body).as_object().at("models").as_array();
        freed = !m.empty() && m[0].as_object().at("finished").as_int64() == 1 &&
                m[0].as_object().at("kv_blocks_used").as_int64() == 0 && s.probe->blocks_used == 0;
    }
    CHECK(freed);
    CHECK(s.probe->steps < 15); // well before EOG (token 31, ~25 steps) or 40 tokens
}

TEST_CASE("a stream whose model crashes ends with an error event, and the model comes back") {
    live_server s(64, 10ms);
    // Steps counted from here: the load's warm-up generation has stepped the engine already.
    const auto steps_before = s.probe->steps.load();
    std::string body;
    std::thread client(
        [&] { body = s.post("/v1/inference/stream", R"({"prompt":[1],"max_tokens":60})").body; });
    // Let it start, then crash the batcher that serves it.
    caf::scoped_actor self{s.sys};
    msg::batcher_actor b;
    self->request(s.sup, 5s, msg::route_atom_v, std::string("tiny"))
        .receive([&](msg::batcher_actor x) { b = x; },
                 [](caf::error& e) { FAIL(caf::to_string(e)); });
    for (int i = 0; i < 200 && s.probe->steps < steps_before + 3; ++i)
        std::this_thread::sleep_for(5ms);
    self->send_exit(b, caf::make_error(caf::sec::runtime_error, "boom"));
    client.join();
    CHECK(body.find("event: error\ndata: {\"error\"") != std::string::npos);
    CHECK(body.find("event: done") == std::string::npos);
    // The supervisor restarted it: a new request completes.
    reply r;
    for (int i = 0; i < 200; ++i) {
        r = s.post("/v1/inference", R"({"prompt":[1],"max_tokens":2})");
        if (r.status == 200)
            break;
        std::this_thread::sleep_for(10ms);
    }
    CHECK(r.status == 200);
}

TEST_CASE("a slow stream carries ': ping' comments between events") {
    live_server s(64, 40ms); // steps slower than sse_ping (20 ms)
    auto r = s.post("/v1/inference/stream", R"({"prompt":[1],"max_tokens":3})");
    REQUIRE(r.status == 200);
    CHECK(r.body.find(": ping\n\n") != std::string::npos);
    CHECK(r.body.find("event: done") != std::string::npos);
}

TEST_CASE("a deadline that passes while queued answers 504") {
    live_server s(64, 20ms, 1); // one sequence per step
    std::thread busy([&] { (void)s.post("/v1/inference", R"({"prompt":[1],"max_tokens":20})"); });
    std::this_thread::sleep_for(60ms);
    auto r = s.post("/v1/inference", R"({"prompt":[1],"max_tokens":2,"timeout_ms":30})");
    busy.join();
    CHECK(r.status == 504);
    CHECK(error_of(r).at("code").as_string() == "deadline_exceeded");
}

TEST_CASE("a deadline that passes while the request runs is its failure, not a length cut: "
          "plain 504, a stream's error event") {
    live_server s(64, 20ms); // 20 ms a step: 40 tokens take 800 ms, past the 150 ms deadline
    const std::string body = R"({"prompt":[1],"max_tokens":40,"timeout_ms":150})";
    auto plain = s.post("/v1/inference", body);
    CHECK(plain.status == 504); // 200 with finish_reason "deadline" before
    CHECK(error_of(plain).at("code").as_string() == "deadline_exceeded");
    CHECK(error_of(plain).at("message").as_string().find("timeout_ms") != std::string::npos);
    auto stream = s.post("/v1/inference/stream", body);
    REQUIRE(stream.status == 200); // the head went out before the deadline
    CHECK(stream.body.find("event: error") != std::string::npos);
    CHECK(stream.body.find("deadline_exceeded") != std::string::npos);
    CHECK(stream.body.find("event: done") == std::string::npos);
    CHECK(stream.body.find("\"deadline\"") == std::string::npos);
}

TEST_CASE("API keys guard /v1 routes, health and metrics stay open") {
    live_server s(64, 2ms, 8, {"secret-key-1"});
    const std::string body = R"({"prompt":[1],"max_tokens":1})";
    auto none = s.post("/v1/inference", body);
    CHECK(none.status == 401);
    CHECK(error_of(none).at("type").as_string() == "authentication_error");
    CHECK(s.request(bhttp::verb::post, "/v1/inference", body, "application/json", "Bearer wrong")
              .status == 401);
    CHECK(s.request(bhttp::verb::post, "/v1/inference", body, "application/json",
                    "Bearer secret-key-1")
              .status == 200);
    CHECK(s.get("/health/live").status == 200);
    CHECK(s.get("/metrics").status == 200);
}

TEST_CASE("a client that disconnects while waiting for a non-streamed reply is cancelled") {
    live_server s(64, 10ms);
    {
        net::io_context ioc;
        beast::tcp_stream stream(ioc);
        stream.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), s.port));
        bhttp::request<bhttp::string_body> req{bhttp::verb::post, "/v1/inference", 11};
        req.set(bhttp::field::host, "127.0.0.1"); // HTTP/1.1 needs one
        req.set(bhttp::field::content_type, "application/json");
        req.body() = R"({"prompt":[1,2,3],"max_tokens":40})";
        req.prepare_payload();
        bhttp::write(stream, req);
        for (int i = 0; i < 200 && s.probe->steps < 3; ++i)
            std::this_thread::sleep_for(5ms);
    } // closed before the reply
    bool freed = false;
    for (int i = 0; i < 300 && !freed; ++i) {
        std::this_thread::sleep_for(10ms);
        auto m = boost::json::parse(s.get("/v1/stats").body).as_object().at("models").as_array();
        freed = !m.empty() && m[0].as_object().at("finished").as_int64() == 1 &&
                m[0].as_object().at("kv_blocks_used").as_int64() == 0 && s.probe->blocks_used == 0;
    }
    CHECK(freed);
    CHECK(s.probe->steps < 15); // well before EOG (token 31, ~28 steps) or 40 tokens
}

TEST_CASE("detokenize, one model's entry, health components, model management refusals") {
    live_server s;
    auto d = s.post("/v1/detokenize", R"({"tokens":[2,3,20,21,31]})");
    REQUIRE(d.status == 200);
    CHECK(boost::json::parse(d.body).as_object().at("text").as_string() == "<2><3>\xC3\xA9");
    CHECK(error_of(s.post("/v1/detokenize", R"({"tokens":"2"})")).at("param").as_string() ==
          "tokens");
    CHECK(error_of(s.post("/v1/detokenize", R"({"tokens":[-1]})")).at("param").as_string() ==
          "tokens");
    auto range = s.post("/v1/detokenize", R"({"tokens":[32]})");
    CHECK(range.status == 400);
    CHECK(s.post("/v1/detokenize", R"({"tokens":[1],"model":7})").status == 400);
    CHECK(s.get("/v1/detokenize").status == 405);

    auto one = s.get("/v1/models/tiny");
    REQUIRE(one.status == 200);
    auto mo = boost::json::parse(one.body).as_object();
    CHECK(mo.at("id").as_string() == "tiny");
    CHECK(mo.at("object").as_string() == "model");
    CHECK(mo.at("state").as_string() == "ready");
    CHECK(mo.at("architecture").as_string() == "fake");
    CHECK(mo.at("context_length").as_int64() == 64);
    CHECK(mo.at("device").as_string() == "cpu");
    CHECK(mo.at("loaded_at").as_int64() > 0);
    CHECK(mo.contains("performance"));
    auto missing = s.get("/v1/models/nope");
    CHECK(missing.status == 404);
    CHECK(error_of(missing).at("code").as_string() == "model_not_found");
    auto list = boost::json::parse(s.get("/v1/models").body).as_object();
    CHECK(list.at("data").as_array()[0].as_object().at("state").as_string() == "ready");

    auto h = s.get("/health");
    REQUIRE(h.status == 200);
    auto ho = boost::json::parse(h.body).as_object();
    CHECK(ho.at("status").as_string() == "ok");
    CHECK(ho.contains("build"));
    const auto& comp = ho.at("components").as_object();
    CHECK(comp.at("admission").as_object().at("status").as_string() == "ready");
    CHECK(comp.at("supervisor").as_object().at("status").as_string() == "up");
    CHECK(comp.at("models").as_array()[0].as_object().at("state").as_string() == "ready");
    CHECK(comp.at("executors").as_array()[0].as_object().at("device").as_string() == "cpu");
    CHECK_FALSE(
        comp.at("executors").as_array()[0].as_object().at("device_reason").as_string().empty());

    // This supervisor has no spec factory: run-time loads are refused, and nothing changes.
    auto load = s.post("/v1/models/load", R"({"alias":"x","path":"/x.gguf"})");
    CHECK(load.status == 400);
    CHECK(error_of(load).at("message").as_string().find("cannot load models at run time") !=
          std::string::npos);
    CHECK(s.post("/v1/models/load", R"({"alias":"x"})").status == 400);
    CHECK(error_of(s.post("/v1/models/load", R"({"alias":"a b","path":"/x"})"))
              .at("param")
              .as_string() == "alias");
    CHECK(s.get("/v1/models/load").status == 405);
    auto rb = s.post("/v1/models/tiny/rollback", "");
    CHECK(rb.status == 400); // nothing to roll back to
    CHECK(s.request(bhttp::verb::delete_, "/v1/models/nope", "").status == 404);
    // The crash hook is off unless test hooks are on: the route does not exist.
    CHECK(s.post("/v1/models/tiny/crash", "").status == 404);

    // bitnet_model_info comes from the supervisor's view once /metrics is scraped.
    auto m = s.get("/metrics");
    CHECK(m.body.find(R"(bitnet_model_info{alias="tiny")") != std::string::npos);
}

TEST_CASE("an admin route needs the admin key: 401 without a key, 403 with an inference key") {
    live_server s(64, 2ms, 8, {"secret-key-1"}, {"admin-key-1"});
    CHECK(s.request(bhttp::verb::post, "/v1/models/load", "{}").status == 401);
    CHECK(s.request(bhttp::verb::post, "/v1/models/load", "{}", "application/json",
                    "Bearer secret-key-1")
              .status == 403);
    CHECK(s.request(bhttp::verb::post, "/v1/models/load", "{}", "application/json",
                    "Bearer admin-key-1")
              .status == 400); // past the key check: the body lacks alias and path
    CHECK(s.request(bhttp::verb::delete_, "/v1/models/tiny", "", "application/json",
                    "Bearer secret-key-1")
              .status == 403);
    // The admin key also opens the inference routes.
    CHECK(s.request(bhttp::verb::get, "/v1/models", "", "application/json", "Bearer admin-key-1")
              .status == 200);
}

TEST_CASE("OpenAI logprobs: chat entries and completions columns, streamed and not") {
    live_server s;
    auto c = s.post("/v1/chat/completions",
                    R"({"messages":[{"role":"user","content":"x"}],"max_tokens":3})");
    // The rig's vocabulary cannot tokenize text: a chat request is refused, naming the field.
    CHECK(c.status == 400);
    CHECK(error_of(c).at("param").as_string() == "messages");

    auto r = s.post("/v1/completions", R"({"prompt":[1],"max_tokens":3,"logprobs":2})");
    REQUIRE(r.status == 200);
    auto lp = boost::json::parse(r.body)
                  .as_object()
                  .at("choices")
                  .as_array()[0]
                  .as_object()
                  .at("logprobs")
                  .as_object();
    const auto& toks = lp.at("tokens").as_array();
    REQUIRE(toks.size() == 3);
    CHECK(toks[0].as_string() == "<2>");
    CHECK(toks[2].as_string() == "<4>");
    CHECK(lp.at("token_logprobs").as_array()[0].as_double() < 0.0);
    CHECK(lp.at("top_logprobs").as_array()[0].as_object().size() == 2);
    CHECK(lp.at("top_logprobs").as_array()[0].as_object().contains("<2>"));
    CHECK(lp.at("text_offset").as_array()[1].as_int64() == 3);

    auto st =
        s.post("/v1/completions", R"({"prompt":[19],"max_tokens":2,"logprobs":1,"stream":true})");
    REQUIRE(st.status == 200);
    // Token 20 is the first byte of U+00E9: no text yet, but its logprobs chunk still comes, and
    // the piece is shown with the replacement character and its raw byte.
    CHECK(st.body.find("\"text\":\"\",\"index\":0,\"logprobs\":{\"tokens\":[\"\xEF\xBF\xBD\"]") !=
          std::string::npos);
    CHECK(st.body.find("\"text\":\"\xC3\xA9\"") != std::string::npos);

    auto none = s.post("/v1/completions", R"({"prompt":[1],"max_tokens":1})");
    CHECK(boost::json::parse(none.body)
              .as_object()
              .at("choices")
              .as_array()[0]
              .as_object()
              .at("logprobs")
              .is_null());
}
