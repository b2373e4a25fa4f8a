// n > 1 on the real binary: the choices of one request share the prompt's KV (the prompt is
// computed once however many choices), choice i equals a single request with seed + i, streamed
// chunks carry the choice's index, usage counts the prompt once; n above max_n and n on the
// native routes are 400s naming `n`.
#include "server/server_process.hpp"

#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace bitnet;

namespace {

std::string ids_json(int n) {
    boost::json::array p;
    for (int i = 0; i < n; ++i)
        p.push_back(3 + (i * 11) % 140);
    return boost::json::serialize(p);
}

std::string completion(int n, const std::string& sampling, int prompt_len = 37) {
    return R"({"prompt":)" + ids_json(prompt_len) + R"(,"max_tokens":12,"n":)" + std::to_string(n) +
           sampling + "}";
}

std::int64_t prompt_computed(const test::server_process& s) {
    const auto o = test::parse_object(s.get("/v1/stats").body);
    return o.at("models").as_array().at(0).as_object().at("prompt_tokens_computed").as_int64();
}

std::vector<std::string> texts_of(const boost::json::object& reply) {
    std::vector<std::string> out;
    for (const auto& c : reply.at("choices").as_array()) {
        const auto& o = c.as_object();
        CHECK(o.at("index").as_int64() == static_cast<std::int64_t>(out.size()));
        out.emplace_back(o.at("text").as_string());
    }
    return out;
}

} // namespace

TEST_CASE("n > 1: one prefill for all choices, choice i is the single request with seed + i") {
    // Without the prefix cache, so prompt_tokens_computed counts exactly what was prefilled.
    test::server_process s({"--prefix-caching", "0"});
    const std::string sampled = R"(,"temperature":1.2,"seed":40)";
    const auto before = prompt_computed(s);
    auto r = s.post("/v1/completions", completion(8, sampled));
    REQUIRE_MESSAGE(r.status == 200, r.body);
    // /v1/stats shows the batcher's figures as admission last polled them (every 20 ms).
    auto computed = prompt_computed(s) - before;
    for (int i = 0; i < 100 && computed == 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        computed = prompt_computed(s) - before;
    }
    CHECK(computed == 37); // not 8 x 37
    const auto reply = test::parse_object(r.body);
    const auto texts = texts_of(reply);
    REQUIRE(texts.size() == 8);
    const auto& usage = reply.at("usage").as_object();
    CHECK(usage.at("prompt_tokens").as_int64() == 37);

    std::int64_t singles_tokens = 0;
    for (int i = 0; i < 8; ++i) {
        auto one = s.post("/v1/completions",
                          completion(1, R"(,"temperature":1.2,"seed":)" + std::to_string(40 + i)));
        REQUIRE(one.status == 200);
        const auto o = test::parse_object(one.body);
        CHECK_MESSAGE(texts_of(o).at(0) == texts[static_cast<std::size_t>(i)], "choice " << i);
        singles_tokens += o.at("usage").as_object().at("completion_tokens").as_int64();
    }
    CHECK(usage.at("completion_tokens").as_int64() == singles_tokens);
    CHECK(usage.at("total_tokens").as_int64() == 37 + singles_tokens);
    // The choices differ (temperature > 0, own seeds).
    CHECK(std::set<std::string>(texts.begin(), texts.end()).size() > 1);

    // Greedy: every choice is the greedy output.
    auto g =
        test::parse_object(s.post("/v1/completions", completion(4, R"(,"temperature":0)")).body);
    const auto greedy = texts_of(g);
    auto g1 =
        test::parse_object(s.post("/v1/completions", completion(1, R"(,"temperature":0)")).body);
    for (const auto& t : greedy)
        CHECK(t == texts_of(g1).at(0));
}

TEST_CASE("n > 1 streamed on chat: chunks carry the choice index, each choice ends once, usage "
          "once, and the text equals the plain reply's") {
    test::server_process s;
    const std::string req = R"({"messages":[{"role":"user","content":"Tell me a story"}],
        "max_tokens":10,"temperature":0.9,"seed":3,"n":3)";
    auto plain = s.post("/v1/chat/completions", req + "}");
    REQUIRE_MESSAGE(plain.status == 200, plain.body);
    const auto o = test::parse_object(plain.body);
    const auto& choices = o.at("choices").as_array();
    REQUIRE(choices.size() == 3);

    auto st = s.post("/v1/chat/completions",
                     req + R"(,"stream":true,"stream_options":{"include_usage":true}})");
    REQUIRE(st.status == 200);
    const auto chunks = test::sse_data(st.body);
    REQUIRE(chunks.size() >= 5);
    CHECK(chunks.back() == "[DONE]");
    std::map<std::int64_t, std::string> text, finish;
    std::map<std::int64_t, int> roles;
    int usage_chunks = 0;
    for (std::size_t i = 0; i + 1 < chunks.size(); ++i) {
        const auto c = test::parse_object(chunks[i]);
        const auto& cs = c.at("choices").as_array();
        if (cs.empty()) {
            ++usage_chunks;
            // The same usage, except that the repeat took its prompt's whole blocks from the cache.
            CHECK(test::usage_without_cache(c.at("usage")) ==
                  test::usage_without_cache(o.at("usage")));
            CHECK(test::cached_tokens(o.at("usage")) == 0);
            CHECK(test::cached_tokens(c.at("usage")) > 0);
            continue;
        }
        const auto& ch = cs[0].as_object();
        const auto index = ch.at("index").as_int64();
        // Each choice's first delta carries the role (OpenAI's SDK stream helper needs it), and
        // only the first.
        const auto& delta = ch.at("delta").as_object();
        if (delta.contains("role")) {
            CHECK(delta.at("role").as_string() == "assistant");
            CHECK(text[index].empty());
            ++roles[index];
        } else {
            CHECK_MESSAGE(roles[index] == 1, "choice " << index << " had no role first");
        }
        if (const auto* d = delta.if_contains("content"))
            text[index] += d->as_string();
        if (!ch.at("finish_reason").is_null()) {
            CHECK(finish.count(index) == 0);
            finish[index] = ch.at("finish_reason").as_string();
        }
    }
    CHECK(usage_chunks == 1);
    CHECK(roles == std::map<std::int64_t, int>{{0, 1}, {1, 1}, {2, 1}});
    REQUIRE(finish.size() == 3);
    for (std::int64_t i = 0; i < 3; ++i) {
        const auto& want = choices[static_cast<std::size_t>(i)].as_object();
        CHECK(want.at("index").as_int64() == i);
        CHECK(text[i] == want.at("message").as_object().at("content").as_string());
        CHECK(finish[i] == want.at("finish_reason").as_string());
    }
}

TEST_CASE("n above max_n, and n on the native routes, are 400s naming n") {
    test::server_process s({"--max-n", "4"});
    auto over = s.post("/v1/completions", completion(5, R"(,"temperature":0)"));
    CHECK(over.status == 400);
    CHECK(test::parse_object(over.body).at("error").as_object().at("param").as_string() == "n");
    CHECK(s.post("/v1/completions", completion(4, R"(,"temperature":0)")).status == 200);
    auto native = s.post("/v1/inference", R"({"prompt":"Hi","max_tokens":4,"n":2})");
    CHECK(native.status == 400);
    CHECK(test::parse_object(native.body).at("error").as_object().at("param").as_string() == "n");
    CHECK(s.post("/v1/inference", R"({"prompt":"Hi","max_tokens":4,"n":1})").status == 200);
    auto zero =
        s.post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"x"}],"n":0})");
    CHECK(zero.status == 400);
}
