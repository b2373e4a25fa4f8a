// bitnet-server as a process, the operational side: the drain deadline (what still runs is
// cancelled and answered, never cut off), per-key quotas (429 + Retry-After), /v1/stats' batch
// and rate figures, and 64 concurrent streams with the same greedy output as each alone.
#include "server/server_process.hpp"

#include <algorithm>
#include <atomic>
#include <map>

using namespace bitnet;

namespace {

std::string greedy_ids(const std::vector<int>& prompt, int max_tokens) {
    boost::json::array p;
    for (int t : prompt)
        p.push_back(t);
    return R"({"prompt":)" + boost::json::serialize(p) + R"(,"max_tokens":)" +
           std::to_string(max_tokens) + R"(,"temperature":0})";
}

std::int64_t stat_of(const test::server_process& s, const char* key) {
    auto m = test::parse_object(s.get("/v1/stats").body).at("models").as_array();
    return m.empty() ? -1 : m[0].as_object().at(key).as_int64();
}

} // namespace

TEST_CASE("past the drain deadline streams end with an error event and finish_reason cancelled") {
    // One sequence at a time: the first stream runs (2000 tokens take far longer than the
    // 100 ms drain timeout), a second stream and a plain request wait behind it.
    test::server_process s({"--max-seqs", "1", "--drain-timeout-ms", "100"});
    test::http_reply running, queued, plain;
    std::thread a([&] { running = s.post("/v1/inference/stream", greedy_ids({1, 2, 3}, 2000)); });
    for (int i = 0; i < 400 && stat_of(s, "running") != 1; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::thread b([&] { queued = s.post("/v1/inference/stream", greedy_ids({4, 5}, 8)); });
    std::thread c([&] { plain = s.post("/v1/inference", greedy_ids({6}, 8)); });
    bool both_waiting = false;
    for (int i = 0; i < 400 && !both_waiting; ++i) {
        auto m = test::parse_object(s.get("/v1/stats").body).at("models").as_array();
        both_waiting = m[0].as_object().at("waiting").as_object().at("normal").as_int64() == 2;
        if (!both_waiting)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    REQUIRE(both_waiting);
    CHECK(s.signal_and_wait(SIGTERM) == 0);
    a.join();
    b.join();
    c.join();

    for (auto* r : {&running, &queued}) {
        CHECK(r->status == 200);
        CHECK(r->complete); // the chunked body ended properly: nothing was cut off
        const auto evs = test::sse_events(r->body);
        REQUIRE(evs.size() >= 2);
        // ... an error event saying why, then done with finish_reason cancelled, last.
        CHECK(evs[evs.size() - 2].first == "error");
        auto err = test::parse_object(evs[evs.size() - 2].second).at("error").as_object();
        CHECK(err.at("code").as_string() == "draining");
        CHECK(err.at("type").as_string() == "overloaded");
        CHECK(evs.back().first == "done");
        auto done = test::parse_object(evs.back().second);
        CHECK(done.at("finish_reason").as_string() == "cancelled");
        const auto tokens = static_cast<std::int64_t>(std::count_if(
            evs.begin(), evs.end(), [](const auto& e) { return e.first == "token"; }));
        CHECK(done.at("usage").as_object().at("completion_tokens").as_int64() == tokens);
        if (r == &running) {
            CHECK(tokens > 0);
            CHECK(tokens < 2000);
        } else {
            CHECK(tokens == 0);
        }
    }
    CHECK(plain.status == 503);
    CHECK(plain.complete);
    CHECK(plain.retry_after == "1");
    CHECK(test::parse_object(plain.body).at("error").as_object().at("code").as_string() ==
          "draining");
    CHECK(s.log().find("drain timeout (100 ms) passed: cancelled 3 request(s)") !=
          std::string::npos);
}

TEST_CASE("past the drain deadline an n > 1 chat stream ends every choice with an OpenAI "
          "finish_reason, then usage, the drain error and [DONE]") {
    test::server_process s({"--drain-timeout-ms", "100"});
    test::http_reply r;
    std::thread a([&] {
        r = s.post("/v1/chat/completions",
                   R"({"messages":[{"role":"user","content":"Once upon a time"}],"n":3,
                       "max_tokens":2000,"temperature":0.8,"seed":5,"stream":true,
                       "stream_options":{"include_usage":true}})");
    });
    for (int i = 0; i < 400 && stat_of(s, "running") != 3; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    REQUIRE(stat_of(s, "running") == 3);
    CHECK(s.signal_and_wait(SIGTERM) == 0);
    a.join();
    CHECK(r.status == 200);
    CHECK(r.complete);
    const auto chunks = test::sse_data(r.body);
    REQUIRE(chunks.size() >= 6);
    CHECK(chunks.back() == "[DONE]");
    // The drain error, after the usage chunk.
    const auto err = test::parse_object(chunks[chunks.size() - 2]);
    REQUIRE(err.contains("error"));
    CHECK(err.at("error").as_object().at("code").as_string() == "draining");
    const auto usage = test::parse_object(chunks[chunks.size() - 3]);
    REQUIRE(usage.contains("usage"));
    CHECK(usage.at("choices").as_array().empty());
    std::map<std::int64_t, std::string> finish;
    std::map<std::int64_t, int> content_chunks;
    for (std::size_t i = 0; i + 3 < chunks.size(); ++i) {
        const auto c = test::parse_object(chunks[i]);
        const auto& ch = c.at("choices").as_array().at(0).as_object();
        const auto index = ch.at("index").as_int64();
        // Nothing of a choice after its finish.
        CHECK_MESSAGE(finish.count(index) == 0, "choice " << index << " went on after its end");
        if (ch.at("delta").as_object().contains("content"))
            ++content_chunks[index];
        if (!ch.at("finish_reason").is_null())
            finish[index] = ch.at("finish_reason").as_string();
    }
    REQUIRE(finish.size() == 3);
    for (const auto& [index, why] : finish) {
        INFO("choice " << index);
        CHECK((why == "length" || why == "stop")); // OpenAI's words; a cut one is "length"
    }
    CHECK(std::count_if(finish.begin(), finish.end(),
                        [](const auto& f) { return f.second == "length"; }) >= 1);
    std::int64_t total = 0;
    for (const auto& [index, n] : content_chunks)
        total += n;
    CHECK(usage.at("usage").as_object().at("completion_tokens").as_int64() >= total - 3);
}

TEST_CASE("a key past its quota gets 429 with Retry-After, other keys pass, metrics count it") {
    test::server_process s({"--api-key", "alice-key-1,bob-key-22", "--quota-requests-per-minute",
                            "2", "--admin-key", "admin-key-333"});
    const auto req = greedy_ids({1, 2}, 2);
    CHECK(s.post("/v1/inference", req, "alice-key-1").status == 200);
    CHECK(s.post("/v1/inference", req, "alice-key-1").status == 200);
    auto third = s.post("/v1/inference", req, "alice-key-1");
    CHECK(third.status == 429);
    CHECK(third.retry_after == "30"); // 2 per minute: the next one in 30 s
    auto err = test::parse_object(third.body).at("error").as_object();
    CHECK(err.at("type").as_string() == "rate_limit_error");
    CHECK(err.at("code").as_string() == "rate_limit_exceeded");
    CHECK(err.at("request_id").as_string().size() > 4);
    // A stream is refused the same way, before its headers: a real status with Retry-After.
    auto st = s.post("/v1/inference/stream", req, "alice-key-1");
    CHECK(st.status == 429);
    CHECK_FALSE(st.retry_after.empty());
    // Bob's quota is his own.
    CHECK(s.post("/v1/inference", req, "bob-key-22").status == 200);

    const auto m = s.get("/metrics").body;
    CHECK(m.find(R"(bitnet_admission_rejections_total{reason="quota"} 2)") != std::string::npos);
    // Global figures are the operator's (a user key sees its own: cache_scope_test.cpp).
    auto stats = test::parse_object(test::http_request(s.port(), boost::beast::http::verb::get,
                                                       "/v1/stats", {}, "admin-key-333")
                                        .body);
    CHECK(stats.at("rejects").as_object().at("quota").as_int64() == 2);
}

TEST_CASE("64 concurrent streams each get the greedy output they get alone, and stats move") {
    test::server_process s({"--max-seqs", "64"});
    constexpr int n = 64;
    auto prompt_of = [](int i) {
        return std::vector<int>{1 + i % 7, 10 + i, 100 + (i * 37) % 400};
    };
    std::vector<boost::json::value> alone(n);
    for (int i = 0; i < n; ++i) {
        auto r = s.post("/v1/inference", greedy_ids(prompt_of(i), 12));
        REQUIRE(r.status == 200);
        alone[i] = test::parse_object(r.body).at("tokens");
    }
    std::vector<test::http_reply> streams(n);
    std::vector<std::thread> clients;
    for (int i = 0; i < n; ++i)
        clients.emplace_back(
            [&, i] { streams[i] = s.post("/v1/inference/stream", greedy_ids(prompt_of(i), 12)); });
    for (auto& t : clients)
        t.join();
    for (int i = 0; i < n; ++i) {
        CAPTURE(i);
        REQUIRE(streams[i].status == 200);
        CHECK(streams[i].complete);
        boost::json::array ids;
        std::string finish;
        for (const auto& [ev, data] : test::sse_events(streams[i].body)) {
            auto o = test::parse_object(data);
            if (ev == "token" && !o.at("token_id").is_null())
                ids.push_back(o.at("token_id"));
            if (ev == "done")
                finish = o.at("finish_reason").as_string();
        }
        CHECK(!finish.empty());
        CHECK(boost::json::value(ids) == alone[i]);
    }
    // /v1/stats: the batch-size summary saw shared steps, and the 10 s generated-token rate
    // counts the streams' tokens once their second is over (bounded poll).
    boost::json::object st;
    for (int i = 0; i < 100; ++i) {
        st = test::parse_object(s.get("/v1/stats").body);
        if (st.at("tokens_per_second")
                .as_object()
                .at("generated")
                .as_object()
                .at("10s")
                .to_number<double>() > 0)
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    const auto& batch = st.at("batch_size").as_object();
    CHECK(batch.at("steps").as_int64() > 0);
    CHECK(batch.at("max").as_int64() > 1);
    CHECK(batch.at("max").as_int64() <= n);
    CHECK(batch.at("p50").as_int64() >= 1);
    const auto& tps = st.at("tokens_per_second").as_object();
    CHECK(tps.at("generated").as_object().at("10s").to_number<double>() > 0);
    CHECK(tps.at("generated").as_object().at("60s").to_number<double>() > 0);
    CHECK(tps.at("prompt").as_object().at("60s").to_number<double>() > 0);
    CHECK(st.at("rejects").as_object().at("queue_full").as_int64() == 0);
}
