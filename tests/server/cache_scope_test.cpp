// The prefix cache scoped per API key (the side channel of a shared cache: a tenant could tell
// from its time to first token whether another tenant sent a prompt): bitnet-server with four
// keys, two of them in a share group. A key hits its own cached prompt, another key does not,
// cache_salt separates one key's requests, the group shares; outputs are the same everywhere.
#include "server/server_process.hpp"

#include <string>
#include <thread>

using namespace bitnet;

namespace {

const std::string key_a = "key-aaaaaaaa", key_b = "key-bbbbbbbb", key_c = "key-cccccccc",
                  key_d = "key-dddddddd", admin = "key-admin000";

/// 100 prompt ids (six whole 16-token blocks) of variant `v`, greedy, 4 tokens.
std::string request(int v, const std::string& salt = {}) {
    boost::json::array p;
    for (int i = 0; i < 100; ++i)
        p.push_back(3 + (i * 7 + v * 31) % 150);
    return R"({"prompt":)" + boost::json::serialize(p) + R"(,"max_tokens":4,"temperature":0)" +
           (salt.empty() ? std::string() : R"(,"cache_salt":")" + salt + "\"") + "}";
}

/// The generated tokens, and the prompt tokens the response says came from the cache.
struct answer {
    std::string tokens;
    std::int64_t cached = -1;
};

answer ask(const test::server_process& s, const std::string& key, const std::string& body) {
    auto r = s.post("/v1/inference", body, key);
    REQUIRE_MESSAGE(r.status == 200, r.body);
    const auto o = test::parse_object(r.body);
    return {boost::json::serialize(o.at("tokens")),
            o.at("usage").at("prompt_tokens_details").at("cached_tokens").as_int64()};
}

std::string tokens(const test::server_process& s, const std::string& key, const std::string& body) {
    return ask(s, key, body).tokens;
}

/// Prompt tokens served from the cache so far (admission polls the batcher every 20 ms).
std::int64_t hits(const test::server_process& s) {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    // The global counters are the operator's: the admin key reads them.
    auto r = test::http_request(s.port(), boost::beast::http::verb::get, "/v1/stats", {}, admin);
    REQUIRE_MESSAGE(r.status == 200, r.body);
    return test::parse_object(r.body).at("prefix_cache").as_object().at("hit_tokens").as_int64();
}

} // namespace

TEST_CASE("prefix cache scope: per key, narrowed by cache_salt, shared by a key group") {
    test::server_process s({"--api-keys", key_a + "," + key_b + "," + key_c + "," + key_d,
                            "--prefix-cache-share-groups", key_c + "|" + key_d, "--admin-key",
                            admin});
    // A key hits its own cache, and its usage says how much of the prompt came from it: the six
    // whole 16-token blocks.
    const auto first = ask(s, key_a, request(1));
    CHECK(first.cached == 0);
    auto h = hits(s);
    const auto again = ask(s, key_a, request(1));
    CHECK(again.tokens == first.tokens);
    CHECK(again.cached == 96);
    auto h2 = hits(s);
    CHECK(h2 == h + 96);
    // Another key does not, gets the same output, and its usage says nothing of key A.
    const auto other = ask(s, key_b, request(1));
    CHECK(other.tokens == first.tokens);
    CHECK(other.cached == 0);
    auto h3 = hits(s);
    CHECK(h3 == h2);
    // cache_salt: one key's requests with different salts do not share; the same salt does.
    const auto salted = tokens(s, key_a, request(2, "one"));
    h = hits(s);
    CHECK(tokens(s, key_a, request(2, "two")) == salted);
    CHECK(hits(s) == h);
    CHECK(tokens(s, key_a, request(2)) == salted); // no salt is a scope of its own too
    CHECK(hits(s) == h);
    const auto same_salt = ask(s, key_a, request(2, "one"));
    CHECK(same_salt.tokens == salted);
    CHECK(same_salt.cached == 96);
    CHECK(hits(s) > h);
    // A share group: key C's cached prompt serves key D.
    const auto grouped = tokens(s, key_c, request(3));
    h = hits(s);
    const auto shared = ask(s, key_d, request(3));
    CHECK(shared.tokens == grouped);
    CHECK(shared.cached == 96);
    CHECK(hits(s) > h);
    // A key outside the group still does not see it.
    h = hits(s);
    CHECK(tokens(s, key_b, request(3)) == grouped);
    CHECK(hits(s) == h);
}

TEST_CASE("tenants: a user key sees its own figures, no paths, /metrics takes its credential") {
    test::server_process s({"--api-keys", key_a + "," + key_b, "--admin-key", admin,
                            "--metrics-api-key", "metrics-key-1"});
    using verb = boost::beast::http::verb;
    for (int i = 0; i < 2; ++i)
        (void)tokens(s, key_a, request(10 + i));
    (void)tokens(s, key_b, request(12));
    auto stats = [&](const std::string& key) {
        auto r = test::http_request(s.port(), verb::get, "/v1/stats", {}, key);
        REQUIRE_MESSAGE(r.status == 200, r.body);
        return test::parse_object(r.body);
    };
    const auto a = stats(key_a);
    CHECK(a.at("key").at("requests").as_int64() == 2);
    CHECK(a.at("key").at("prompt_tokens").as_int64() == 200);
    CHECK_FALSE(a.contains("models")); // no queue, cache or rate figures of anyone else
    CHECK_FALSE(a.contains("prefix_cache"));
    CHECK(stats(key_b).at("key").at("requests").as_int64() == 1);
    const auto all = stats(admin);
    CHECK(all.contains("models"));
    CHECK(all.contains("prefix_cache"));
    // Model listings: paths for the operator only.
    auto listing = [&](const std::string& key) {
        auto r = test::http_request(s.port(), verb::get, "/v1/models/tiny", {}, key);
        REQUIRE_MESSAGE(r.status == 200, r.body);
        return r.body;
    };
    CHECK(listing(key_a).find(s.model_path()) == std::string::npos);
    CHECK(listing(admin).find(s.model_path()) != std::string::npos);
    // /metrics: the metrics credential or an admin key.
    CHECK(test::http_request(s.port(), verb::get, "/metrics").status == 401);
    CHECK(test::http_request(s.port(), verb::get, "/metrics", {}, key_a).status == 401);
    CHECK(test::http_request(s.port(), verb::get, "/metrics", {}, "metrics-key-1").status == 200);
    CHECK(test::http_request(s.port(), verb::get, "/metrics", {}, admin).status == 200);
}

TEST_CASE("prefix cache scope: a share group must name API keys") {
    auto r = test::run_tool("bitnet-server", "--api-keys key-aaaaaaaa --prefix-cache-share-groups "
                                             "'key-aaaaaaaa|key-zzzzzzzz' --print-config");
    CHECK(r.exit_code != 0);
    CHECK(r.err.find("prefix_cache_share_groups") != std::string::npos);
}
