// Fair shares between API keys on the real binary: key A's four n = 8 requests fill all 32
// sequence slots with long outputs; key B's short request then runs to its end while every one
// of A's requests is still running (first come, first served would have B wait for one of A's
// 8-choice requests to end). The step-level bound (B's first token within two steps) is the
// policy's own test (tests/actors/sched_fair_share_test.cpp); quotas count sequences (n = 8
// costs 8).
#include "server/server_process.hpp"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

using namespace bitnet;

namespace {

const std::string key_a = "key-aaaaaaaa", key_b = "key-bbbbbbbb", admin = "key-admin000";

std::string prompt_ids(int v, int n) {
    boost::json::array p;
    for (int i = 0; i < n; ++i)
        p.push_back(3 + (i * 13 + v * 29) % 400);
    return boost::json::serialize(p);
}

std::int64_t running(const test::server_process& s) {
    auto r = test::http_request(s.port(), boost::beast::http::verb::get, "/v1/stats", {}, admin);
    REQUIRE_MESSAGE(r.status == 200, r.body);
    std::int64_t n = 0;
    const auto stats = test::parse_object(r.body);
    for (const auto& m : stats.at("models").as_array())
        n += m.at("running").as_int64();
    return n;
}

} // namespace

TEST_CASE(
    "fair shares: another key's request runs while one key's n = 8 requests fill every slot") {
    test::server_process s(
        {"--api-keys", key_a + "," + key_b, "--admin-key", admin, "--max-batch-seqs", "32"});
    std::atomic<int> a_done{0};
    std::vector<std::string> a_bodies(4);
    std::vector<std::thread> a;
    for (int i = 0; i < 4; ++i)
        a.emplace_back([&, i] {
            auto r = s.post("/v1/completions",
                            R"({"prompt":)" + prompt_ids(i, 12) +
                                R"(,"max_tokens":600,"n":8,"temperature":0})",
                            key_a);
            a_bodies[static_cast<std::size_t>(i)] = r.body;
            ++a_done;
        });
    // All 32 of A's sequences decode.
    for (int i = 0; i < 600 && running(s) < 32; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    REQUIRE(running(s) == 32);
    REQUIRE(a_done == 0);

    auto b =
        s.post("/v1/completions",
               R"({"prompt":)" + prompt_ids(9, 30) + R"(,"max_tokens":30,"temperature":0})", key_b);
    const int a_done_when_b_ended = a_done;
    for (auto& t : a)
        t.join();
    REQUIRE_MESSAGE(b.status == 200, b.body);
    CHECK(test::parse_object(b.body).at("usage").at("completion_tokens").as_int64() > 0);
    CHECK(a_done_when_b_ended == 0);
    // A's requests ran to their length: they held their slots the whole time B ran (an early end
    // of generation would have freed a slot for B anyway, and this test would prove nothing).
    for (const auto& body : a_bodies) {
        const auto o = test::parse_object(body);
        REQUIRE_MESSAGE(o.contains("choices"), body);
        for (const auto& c : o.at("choices").as_array())
            CHECK(c.at("finish_reason").as_string() == "length");
    }
}

TEST_CASE("quotas count sequences: a request with n = 4 takes 4 of a key's quota") {
    test::server_process s({"--api-keys", key_a + "," + key_b, "--quota-requests-per-minute", "6",
                            "--quota-burst", "6"});
    const auto ask = [&](const std::string& key, int n) {
        return s
            .post("/v1/completions",
                  R"({"prompt":[5,6,7],"max_tokens":1,"n":)" + std::to_string(n) + "}", key)
            .status;
    };
    CHECK(ask(key_a, 4) == 200);
    CHECK(ask(key_a, 4) == 429); // 2 left of 6
    CHECK(ask(key_a, 2) == 200);
    CHECK(ask(key_b, 4) == 200); // another key's bucket
}

TEST_CASE("without API keys a client is its address: each one has its own quota") {
    // Fair shares and quotas count the same client (admission's client key): its address here.
    // Loopback is the trusted proxy in front, so X-Forwarded-For names each client.
    const auto ask = [](const test::server_process& s, const std::string& client, int n) {
        return test::http_request(s.port(), boost::beast::http::verb::post, "/v1/completions",
                                  R"({"prompt":[5,6,7],"max_tokens":1,"n":)" + std::to_string(n) +
                                      "}",
                                  {}, {{"X-Forwarded-For", client}})
            .status;
    };
    {
        test::server_process s({"--trusted-proxies", "127.0.0.1,::1", "--quota-requests-per-minute",
                                "6", "--quota-burst", "6"});
        CHECK(ask(s, "198.51.100.1", 4) == 200);
        CHECK(ask(s, "198.51.100.1", 4) == 429);
        CHECK(ask(s, "198.51.100.2", 4) == 200); // another client: its own bucket
        // What a client writes left of the hop the proxy added is not believed.
        CHECK(ask(s, "198.51.100.2, 198.51.100.1", 4) == 429);
    }
    {
        // No proxy trusted: the header is the client's own word, and both are the peer.
        test::server_process s({"--quota-requests-per-minute", "6", "--quota-burst", "6"});
        CHECK(ask(s, "198.51.100.1", 4) == 200);
        CHECK(ask(s, "198.51.100.2", 4) == 429);
    }
}
