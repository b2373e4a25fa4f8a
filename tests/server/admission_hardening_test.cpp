// bitnet-server as a process: what admission refuses as the caller's error. A prompt token id
// outside the vocabulary is a 400 naming the field and the vocabulary size, refused before it
// can reach a batched step (where it would fail every stream batched with it); a prompt the
// context window (or the whole KV pool) cannot hold is a 400 context_length_exceeded naming the
// limit, never a 503 that clients would retry forever.
#include "server/server_process.hpp"

using namespace bitnet;

namespace {

/// `bitnet-model make --shape tiny` writes a 512-token byte-level vocabulary
/// (tools/model_synth.cpp); the server exposes the context length but not the vocabulary size.
constexpr int tiny_vocab = 512;

std::string ids_request(const std::vector<int>& prompt, int max_tokens,
                        const std::string& extra = {}) {
    boost::json::array p;
    for (int t : prompt)
        p.push_back(t);
    return R"({"prompt":)" + boost::json::serialize(p) + R"(,"max_tokens":)" +
           std::to_string(max_tokens) + R"(,"temperature":0)" + extra + "}";
}

std::int64_t running(const test::server_process& s) {
    auto m = test::parse_object(s.get("/v1/stats").body).at("models").as_array();
    return m.empty() ? -1 : m[0].as_object().at("running").as_int64();
}

std::int64_t context_length(const test::server_process& s) {
    return test::parse_object(s.get("/v1/models/tiny").body).at("context_length").as_int64();
}

/// The error object of a refusal; empty when the body is not one (an SSE stream, say), so a
/// wrong answer fails the checks instead of throwing past the joins of the client threads.
boost::json::object error_of(const test::http_reply& r) {
    boost::system::error_code ec;
    auto v = boost::json::parse(r.body, ec);
    if (ec || !v.is_object() || !v.as_object().contains("error") ||
        !v.as_object().at("error").is_object())
        return {};
    return v.as_object().at("error").as_object();
}

std::string str(const boost::json::object& o, const char* key) {
    const auto* v = o.if_contains(key);
    return v && v->is_string() ? std::string(v->get_string())
                               : std::string("<") + key + " not a string>";
}

/// A stream's token ids and its finish reason ("" when it never finished); `error` is set when
/// an error event came instead.
struct stream_outcome {
    std::vector<std::int64_t> ids;
    std::string finish;
    bool error = false;
};

stream_outcome outcome_of(const std::string& body) {
    stream_outcome out;
    for (const auto& [ev, data] : test::sse_events(body)) {
        if (ev == "error") {
            out.error = true;
            continue;
        }
        auto o = test::parse_object(data);
        if (ev == "token" && !o.at("token_id").is_null())
            out.ids.push_back(o.at("token_id").as_int64());
        if (ev == "done")
            out.finish = o.at("finish_reason").as_string();
    }
    return out;
}

void check_context_refusal(const test::http_reply& r, std::int64_t limit, std::size_t n_prompt) {
    CHECK(r.status == 400);
    CHECK(r.complete);
    CHECK(r.retry_after.empty()); // the caller's error: retrying the same request cannot help
    auto e = error_of(r);
    CHECK(str(e, "type") == "invalid_request_error");
    CHECK(str(e, "code") == "context_length_exceeded");
    CHECK(str(e, "param") == "prompt");
    const auto message = str(e, "message");
    CHECK(message.find(std::to_string(limit)) != std::string::npos);
    CHECK(message.find(std::to_string(n_prompt)) != std::string::npos);
}

} // namespace

TEST_CASE("a prompt id outside the vocabulary is a 400 and 8 streams beside it complete") {
    test::server_process s({"--max-seqs", "16"});
    constexpr int n = 8;
    // Long enough (each runs to its length, none meets EOS) that all 8 are still decoding when
    // the bad requests have been answered (checked below): 600 steps without speculation, whose
    // accepted drafts would end them in fewer steps, against three refusals' round trips.
    constexpr int max_tokens = 600;
    const std::string no_drafts = R"(,"speculative":"off")";
    auto prompt_of = [](int i) { return std::vector<int>{1 + i, 20 + 3 * i, 100 + 7 * i}; };
    std::vector<std::vector<std::int64_t>> alone(n);
    for (int i = 0; i < n; ++i) {
        auto r = s.post_long("/v1/inference", ids_request(prompt_of(i), max_tokens, no_drafts));
        REQUIRE_MESSAGE(r.status == 200, r.body);
        const auto o = test::parse_object(r.body); // a named object: the loop reads into it
        for (const auto& v : o.at("tokens").as_array())
            alone[i].push_back(v.as_int64());
    }

    std::vector<test::http_reply> streams(n);
    std::vector<std::thread> clients;
    for (int i = 0; i < n; ++i)
        clients.emplace_back([&, i] {
            streams[i] = s.post_long("/v1/inference/stream",
                                     ids_request(prompt_of(i), max_tokens, no_drafts));
        });
    // The bad requests arrive while all 8 are decoding, so a step could have held them all.
    for (int i = 0; i < 2000 && running(s) != n; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    CHECK(running(s) == n);

    auto plain = s.post("/v1/inference", ids_request({1, tiny_vocab, 2}, 8));
    auto streamed = s.post("/v1/inference/stream", ids_request({tiny_vocab + 7}, 8));
    auto stop_ids = s.post(
        "/v1/inference",
        ids_request({1, 2}, 8, R"(,"stop_token_ids":[5,)" + std::to_string(tiny_vocab) + "]"));
    for (auto* r : {&plain, &streamed}) {
        CHECK(r->status == 400);
        CHECK(r->retry_after.empty());
        auto e = error_of(*r);
        CHECK(str(e, "type") == "invalid_request_error");
        CHECK(str(e, "code") == "invalid_value");
        CHECK(str(e, "param") == "prompt");
        CHECK(str(e, "message").find(std::to_string(tiny_vocab)) != std::string::npos);
    }
    CHECK(stop_ids.status == 400);
    CHECK(str(error_of(stop_ids), "param") == "stop_token_ids");
    CHECK(str(error_of(stop_ids), "message").find(std::to_string(tiny_vocab)) != std::string::npos);
    // The refusals came while every stream was still decoding: a batched step could have held
    // the bad ids, had admission let them through.
    CHECK(running(s) == n);

    for (auto& t : clients)
        t.join();
    for (int i = 0; i < n; ++i) {
        CAPTURE(i);
        REQUIRE(streams[i].status == 200);
        CHECK(streams[i].complete);
        const auto o = outcome_of(streams[i].body);
        CHECK_FALSE(o.error);
        CHECK(o.finish == "length");
        CHECK(o.ids == alone[i]);
    }
    // The server keeps serving.
    CHECK(s.post("/v1/inference", ids_request({1, 2, 3}, 4)).status == 200);
}

TEST_CASE("a prompt longer than the context is a 400 context_length_exceeded, not a 503") {
    test::server_process s;
    const auto n_ctx = context_length(s);
    REQUIRE(n_ctx > 0);

    // n_ctx + 1 ids.
    std::vector<int> ids(static_cast<std::size_t>(n_ctx) + 1);
    for (std::size_t i = 0; i < ids.size(); ++i)
        ids[i] = static_cast<int>(1 + i % (tiny_vocab - 1));
    check_context_refusal(s.post("/v1/inference", ids_request(ids, 4)), n_ctx, ids.size());
    // Exactly n_ctx ids leave no room for one generated token.
    ids.pop_back();
    check_context_refusal(s.post("/v1/inference/stream", ids_request(ids, 4)), n_ctx, ids.size());

    // About 1 MB of text (under the 1 MiB body limit): far more tokens than the waiting-tokens
    // cap, which used to answer 503 queue_full with a Retry-After first.
    std::string text;
    while (text.size() < 1'000'000)
        text += "never trust a fortune ";
    auto big = s.post("/v1/completions", R"({"prompt":")" + text + R"(","max_tokens":4})");
    CHECK(big.status == 400);
    CHECK(big.retry_after.empty());
    if (big.status == 400) {
        auto e = error_of(big);
        CHECK(str(e, "code") == "context_length_exceeded");
        CHECK(str(e, "param") == "prompt");
        CHECK(str(e, "message").find(std::to_string(n_ctx)) != std::string::npos);
    }
    // Nothing was queued by the refusals: a fitting request still runs.
    CHECK(s.post("/v1/inference", ids_request({1, 2, 3}, 4)).status == 200);
}

TEST_CASE("a prompt that fits the context but never the whole KV pool is a 400 too") {
    // 16 KV blocks of 16 tokens (tiny: 2 layers x 2 KV heads x 64 x F16 x K,V = 16 KiB a block):
    // 256 tokens, far below the 2048-token context.
    test::server_process s({"--kv-budget-bytes", "262144"});
    std::vector<int> ids(300, 5);
    auto r = s.post("/v1/inference", ids_request(ids, 4));
    CHECK(r.status == 400);
    CHECK(r.retry_after.empty());
    auto e = error_of(r);
    CHECK(str(e, "code") == "context_length_exceeded");
    CHECK(str(e, "param") == "prompt");
    const auto message = str(e, "message");
    CHECK(message.find("KV") != std::string::npos);
    CHECK(message.find("300 tokens") != std::string::npos);
    CHECK(message.find("256 tokens") != std::string::npos);
    CHECK(s.post("/v1/inference", ids_request({1, 2, 3}, 4)).status == 200);
}
