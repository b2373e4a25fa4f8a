// Prompt logprobs on the real binary (`echo` on /v1/completions, what lm-evaluation-harness's
// local-completions sends for loglikelihood tasks), over the default test model (`bitnet-model
// make --shape tiny --seed 1`).
#include "server/server_process.hpp"

#include <cmath>
#include <string>
#include <vector>

using namespace bitnet;
namespace json = boost::json;

namespace {

std::string ids_json(const std::vector<std::int64_t>& ids) {
    json::array a;
    for (auto id : ids)
        a.emplace_back(id);
    return json::serialize(a);
}

std::vector<std::int64_t> tokenize(test::server_process& s, const std::string& text) {
    auto r = s.post("/v1/tokenize",
                    R"({"text":)" + json::serialize(json::value(text)) + R"(,"add_bos":true})");
    REQUIRE(r.status == 200);
    const auto o = test::parse_object(r.body);
    std::vector<std::int64_t> out;
    for (const auto& v : o.at("tokens").as_array())
        out.push_back(v.to_number<std::int64_t>());
    return out;
}

/// choices[0] of a completions reply that must succeed.
json::object choice_of(const test::http_reply& r) {
    REQUIRE_MESSAGE(r.status == 200, r.body);
    return test::parse_object(r.body).at("choices").as_array().at(0).as_object();
}

/// The prompt-echo invariants of a logprobs object: one entry per token in every column, the
/// first logprob and alternatives null, every other logprob <= 0 with at most `k` alternatives.
void check_echo_shape(const json::object& lp, std::size_t n_tokens, std::size_t k) {
    const auto& toks = lp.at("tokens").as_array();
    const auto& lps = lp.at("token_logprobs").as_array();
    const auto& tops = lp.at("top_logprobs").as_array();
    const auto& offs = lp.at("text_offset").as_array();
    REQUIRE(toks.size() == n_tokens);
    REQUIRE(lps.size() == n_tokens);
    REQUIRE(tops.size() == n_tokens);
    REQUIRE(offs.size() == n_tokens);
    CHECK(lps[0].is_null());
    CHECK(tops[0].is_null());
    for (std::size_t i = 1; i < n_tokens; ++i) {
        CAPTURE(i);
        REQUIRE(lps[i].is_number());
        CHECK(lps[i].to_number<double>() <= 0.0);
        REQUIRE(tops[i].is_object());
        CHECK(!tops[i].as_object().empty());
        CHECK(tops[i].as_object().size() <= k);
        // The alternatives are the most likely tokens: none is less likely than... the chosen
        // token can only be as likely as the best alternative or less.
        double best = -1e30;
        for (const auto& kv : tops[i].as_object())
            best = std::max(best, kv.value().to_number<double>());
        CHECK(lps[i].to_number<double>() <= best + 1e-6);
        CHECK(offs[i].to_number<std::int64_t>() >= offs[i - 1].to_number<std::int64_t>());
    }
}

} // namespace

TEST_CASE("echo + logprobs + max_tokens 0: the prompt back with its logprobs, first null, "
          "text == prompt, finish length, text and token-id prompts agree") {
    test::server_process s;
    const std::string prompt = "Hello, world";
    const std::string body_tail = R"(,"max_tokens":0,"temperature":0,"logprobs":3,"echo":true})";
    auto c = choice_of(s.post("/v1/completions",
                              R"({"prompt":)" + json::serialize(json::value(prompt)) + body_tail));
    CHECK(c.at("text").as_string() == prompt);
    CHECK(c.at("finish_reason").as_string() == "length");
    const auto ids = tokenize(s, prompt);
    const auto& lp = c.at("logprobs").as_object();
    check_echo_shape(lp, ids.size(), 3);

    // lm-evaluation-harness's form: a list holding one list of token ids. Same numbers.
    auto r = s.post("/v1/completions",
                    R"({"model":"tiny","prompt":[)" + ids_json(ids) + "]" + body_tail);
    REQUIRE(r.status == 200);
    const auto o = test::parse_object(r.body);
    const auto& usage = o.at("usage").as_object();
    CHECK(usage.at("prompt_tokens").to_number<std::int64_t>() ==
          static_cast<std::int64_t>(ids.size()));
    CHECK(usage.at("completion_tokens").to_number<std::int64_t>() == 0);
    const auto& c2 = o.at("choices").as_array().at(0).as_object();
    CHECK(c2.at("text").as_string() == prompt); // token ids echo as the tokenizer renders them
    CHECK(c2.at("logprobs").at("token_logprobs") == lp.at("token_logprobs"));
    CHECK(c2.at("logprobs").at("top_logprobs") == lp.at("top_logprobs"));
    CHECK(c2.at("logprobs").at("tokens") == lp.at("tokens"));

    // Echo without logprobs: the prompt's text, no logprobs object.
    auto plain = choice_of(s.post("/v1/completions", R"({"prompt":"Hello","max_tokens":0,
                                                        "echo":true})"));
    CHECK(plain.at("text").as_string() == "Hello");
    CHECK(plain.at("logprobs").is_null());
}

// The consistency the issue asks for: the teacher-forced logprobs of a prompt equal, token by
// token, what single requests report, so their sums are equal too. Not circular: the echo values
// come from one pass computing every row (seq_chunk::all_logits) and the prompt scorer, the single
// values from ordinary requests (the last row of each prefix and the sampler). To read a given
// token's logprob off a single request without any other machinery, the prompt is built greedily:
// P[0] = BOS, then P[k] = the greedy token of a request whose prompt is P[0..k) (max_tokens 1,
// native stream, which reports the token id and its logprob). Both sides compute row k-1 as a
// prompt (prefill) row over the same tokens, so the floats are the same bits and their 6-decimal
// renderings are equal: compared exactly. (P[0..1) is a one-token prompt, computed as a decode;
// with a single key its attention weight is exactly 1 either way: tests/engine/all_logits_test.)
TEST_CASE("echo consistency: the prompt's logprobs equal single requests' per token, and their "
          "sums") {
    test::server_process s;
    std::vector<std::int64_t> prompt = {tokenize(s, "x").front()}; // BOS
    REQUIRE(prompt.size() == 1);
    std::vector<double> single; // single[k - 1]: logprob of prompt[k]
    for (int k = 1; k <= 12; ++k) {
        auto r = s.post("/v1/inference/stream",
                        R"({"prompt":)" + ids_json(prompt) + R"(,"max_tokens":1,"temperature":0})");
        REQUIRE(r.status == 200);
        const auto events = test::sse_events(r.body);
        REQUIRE(!events.empty());
        REQUIRE(events[0].first == "token");
        const auto ev = test::parse_object(events[0].second);
        prompt.push_back(ev.at("token_id").to_number<std::int64_t>());
        single.push_back(ev.at("logprob").to_number<double>());
    }
    auto c = choice_of(s.post("/v1/completions", R"({"prompt":[)" + ids_json(prompt) +
                                                     R"(],"max_tokens":0,"temperature":0,)"
                                                     R"("logprobs":1,"echo":true,"seed":1234})"));
    const auto& lp = c.at("logprobs").as_object();
    check_echo_shape(lp, prompt.size(), 1);
    const auto& lps = lp.at("token_logprobs").as_array();
    const auto& tops = lp.at("top_logprobs").as_array();
    double sum_echo = 0.0, sum_single = 0.0;
    for (std::size_t k = 1; k < prompt.size(); ++k) {
        CAPTURE(k);
        CHECK(lps[k].to_number<double>() == single[k - 1]);
        sum_echo += lps[k].to_number<double>();
        sum_single += single[k - 1];
        // Every token is the greedy one: lm-evaluation-harness's is_greedy check holds (the
        // chosen logprob is the best alternative's).
        CHECK(lps[k].to_number<double>() ==
              tops[k].as_object().begin()->value().to_number<double>());
    }
    CHECK(sum_echo == sum_single);
}

TEST_CASE("echo with max_tokens > 0: prompt then completion in text and logprobs, streamed, the "
          "prompt comes first in its own chunk") {
    test::server_process s;
    const std::string body = R"({"prompt":"Hello, world","max_tokens":4,"temperature":0,
                                 "logprobs":2,"echo":true})";
    auto c = choice_of(s.post("/v1/completions", body));
    const std::string text(c.at("text").as_string());
    REQUIRE(text.rfind("Hello, world", 0) == 0);
    const auto n_prompt = tokenize(s, "Hello, world").size();
    const auto& lp = c.at("logprobs").as_object();
    const auto n = lp.at("tokens").as_array().size();
    CHECK(n > n_prompt);
    CHECK(n <= n_prompt + 4);
    const auto& lps = lp.at("token_logprobs").as_array();
    CHECK(lps[0].is_null());
    for (std::size_t i = 1; i < n; ++i)
        CHECK(lps[i].is_number());
    // The completion without echo is the echoed reply's tail, logprobs included.
    auto plain = choice_of(s.post("/v1/completions", R"({"prompt":"Hello, world","max_tokens":4,
                                                        "temperature":0,"logprobs":2})"));
    CHECK(text == "Hello, world" + std::string(plain.at("text").as_string()));
    const auto& tail = plain.at("logprobs").at("token_logprobs").as_array();
    REQUIRE(tail.size() == n - n_prompt);
    for (std::size_t i = 0; i < tail.size(); ++i)
        CHECK(tail[i] == lps[n_prompt + i]);

    // Streamed: the first chunk is the prompt with its logprobs, then the generated tokens.
    auto st = s.post("/v1/completions", R"({"prompt":"Hello, world","max_tokens":4,
        "temperature":0,"logprobs":2,"echo":true,"stream":true})");
    REQUIRE(st.status == 200);
    const auto data = test::sse_data(st.body);
    REQUIRE(data.size() >= 3);
    CHECK(data.back() == "[DONE]");
    const auto first = test::parse_object(data[0]).at("choices").as_array().at(0).as_object();
    CHECK(first.at("text").as_string() == "Hello, world");
    check_echo_shape(first.at("logprobs").as_object(), n_prompt, 2);
    std::string streamed;
    for (std::size_t i = 0; i + 1 < data.size(); ++i)
        streamed +=
            test::parse_object(data[i]).at("choices").as_array().at(0).at("text").as_string();
    CHECK(streamed == text);
}

TEST_CASE("echo: bad combinations get clear 400s") {
    test::server_process s;
    auto expect_400 = [&](const std::string& route, const std::string& body,
                          const std::string& param) {
        auto r = s.post(route, body);
        CAPTURE(body);
        CHECK(r.status == 400);
        const auto e = test::parse_object(r.body).at("error").as_object();
        CHECK(e.at("param").as_string() == param);
        CHECK(!e.at("message").as_string().empty());
    };
    expect_400("/v1/completions", R"({"prompt":"hi","echo":true,"logprobs":21,"max_tokens":0})",
               "logprobs");
    expect_400("/v1/completions", R"({"prompt":"hi","max_tokens":0})", "max_tokens");
    expect_400("/v1/chat/completions",
               R"({"messages":[{"role":"user","content":"hi"}],"echo":true})", "echo");
    expect_400("/v1/inference", R"({"prompt":"hi","echo":true})", "echo");
    expect_400("/v1/completions", R"({"prompt":[[1,2],[3,4]],"echo":true,"max_tokens":0})",
               "prompt");
    // A token id outside the vocabulary in an echoed prompt fails that request alone.
    auto r = s.post("/v1/completions",
                    R"({"prompt":[[1,2,99999999]],"echo":true,"max_tokens":0,"logprobs":1})");
    CHECK(r.status == 400);
    // The server is still serving.
    CHECK(s.post("/v1/completions", R"({"prompt":"hi","max_tokens":1})").status == 200);
}

TEST_CASE("echo logprobs with the prefix cache warm: the same values as a cold server") {
    // A prompt-logprobs request never takes cached blocks (their rows were never computed):
    // after a plain request has filled the cache with the same prompt, the echo's values must
    // still equal those of a server without the cache, and the echo adds no cache hits: `warm`
    // (plain, echo, plain) ends with exactly the hits of `twice` (plain, plain).
    test::server_process warm;
    test::server_process twice;
    test::server_process cold({"--prefix-caching", "0"});
    // Several KV blocks long, so the plain request leaves whole blocks in the cache.
    std::string prompt;
    for (int i = 0; i < 3; ++i)
        prompt += "The cat sat on the mat and looked at the dog, who sat on the rug and looked "
                  "back at the cat for a long time before either of them moved. ";
    const auto plain = R"({"prompt":")" + prompt + R"(","max_tokens":1,"temperature":0})";
    const auto echo = R"({"prompt":")" + prompt + R"(","max_tokens":0,"echo":true,"logprobs":2})";
    REQUIRE(warm.post("/v1/completions", plain).status == 200);
    auto a = warm.post("/v1/completions", echo);
    REQUIRE(warm.post("/v1/completions", plain).status == 200);
    auto b = cold.post("/v1/completions", echo);
    REQUIRE(twice.post("/v1/completions", plain).status == 200);
    REQUIRE(twice.post("/v1/completions", plain).status == 200);

    // The stats the batchers report reach /v1/stats a moment later: wait for the second plain
    // request's hits to show on both servers.
    const auto hits = [](const test::server_process& s) {
        for (int i = 0;; ++i) {
            const auto h = test::parse_object(s.get("/v1/stats").body)
                               .at("prefix_cache")
                               .as_object()
                               .at("hit_tokens")
                               .as_int64();
            if (h > 0 || i == 100)
                return h;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    };
    const auto h_twice = hits(twice);
    CHECK(h_twice > 0); // the plain repeat is served from the cache
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    CHECK(hits(warm) == hits(twice)); // and the echo between took nothing

    REQUIRE_MESSAGE(a.status == 200, a.body);
    REQUIRE_MESSAGE(b.status == 200, b.body);
    const auto la =
        test::parse_object(a.body).at("choices").as_array().at(0).as_object().at("logprobs");
    const auto lb =
        test::parse_object(b.body).at("choices").as_array().at(0).as_object().at("logprobs");
    CHECK(la.as_object().at("token_logprobs").as_array().size() > 16);
    CHECK(la == lb);
}

TEST_CASE("native: a plain reply with logprobs N lists each returned token's logprob and N "
          "alternatives, the stream's values") {
    test::server_process s;
    const std::string ask =
        R"({"prompt":"Hello there","max_tokens":6,"temperature":0,"logprobs":2)";
    const auto plain = s.post("/v1/inference", ask + "}");
    REQUIRE_MESSAGE(plain.status == 200, plain.body);
    const auto o = test::parse_object(plain.body);
    const auto& tokens = o.at("tokens").as_array();
    const auto& lps = o.at("logprobs").as_array();
    REQUIRE(lps.size() == tokens.size());
    const auto stream = s.post("/v1/inference/stream", ask + "}");
    REQUIRE(stream.status == 200);
    std::vector<double> streamed;
    for (const auto& ev : test::sse_events(stream.body))
        if (ev.first == "token")
            streamed.push_back(json::parse(ev.second).at("logprob").to_number<double>());
    REQUIRE(streamed.size() == lps.size());
    for (std::size_t i = 0; i < lps.size(); ++i) {
        CAPTURE(i);
        CHECK(lps[i].at("token_id") == tokens[i]);
        const double lp = lps[i].at("logprob").to_number<double>();
        CHECK(lp <= 0.0);
        CHECK(std::abs(lp - streamed[i]) < 1e-5);
        const auto& top = lps[i].at("top_logprobs").as_array();
        REQUIRE(top.size() == 2);
        // Greedy: the chosen token is the most likely one.
        CHECK(top[0].at("token_id") == tokens[i]);
    }
    // Without logprobs: no field.
    CHECK_FALSE(
        test::parse_object(s.post("/v1/inference", R"({"prompt":"Hi","max_tokens":2})").body)
            .contains("logprobs"));
}
