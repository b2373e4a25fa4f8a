// The greedy screen (`greedy_screen 1`) on the real binary: a greedy request whose reply shows no
// logprob takes its tokens from the screen, with the same text and tokens as a request that
// computes every row (one showing its logprobs), on a random-weight model (small margins) and
// the trained default model; requests that need the row (logprobs shown, a native stream showing
// them, a repetition penalty, sampling) do not; /v1/stats and /metrics count the screen's tokens;
// steps verifying drafts take every row from the screen too.
#include "server/model_admin.hpp"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

using namespace bitnet;

namespace {

const std::string fortunes_path = test::data_path("../../models/bitnet-fortunes-5m-i2_s.gguf");

/// The screen on, every greedy-only row of a step from it: the count measured at load depends
/// on this machine's speed, and these tests count rows.
const std::vector<std::string> screen_flags{"--greedy-screen", "1", "--greedy-screen-rows", "64"};

/// `model`'s /v1/stats entry once `finished` requests have ended on it. A bounded poll: the
/// figures are the batcher's as admission last asked for them, and a request's screened tokens
/// are counted before its end is.
boost::json::object stats_after(const test::server_process& s, const std::string& model,
                                std::int64_t finished) {
    for (int i = 0; i < 1000; ++i) {
        const auto o = test::parse_object(s.get("/v1/stats").body);
        for (const auto& m : o.at("models").as_array())
            if (m.at("model") == model.c_str() && m.at("finished").as_int64() >= finished)
                return m.as_object();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    FAIL("the stats of " << model << " never showed " << finished << " finished requests");
    return {};
}

std::int64_t screened_after(const test::server_process& s, const std::string& model,
                            std::int64_t finished) {
    return stats_after(s, model, finished).at("greedy_screened_tokens").as_int64();
}

std::string chat(const std::string& model, const std::string& prompt, const std::string& extra) {
    return R"({"model":")" + model + R"(","max_tokens":24,"temperature":0,"speculative":"off",)" +
           R"("messages":[{"role":"user","content":)" +
           boost::json::serialize(boost::json::value(prompt)) + "}]" + extra + "}";
}

std::string content_of(const test::http_reply& r) {
    REQUIRE_MESSAGE(r.status == 200, r.body);
    return std::string(
        test::parse_object(r.body).at("choices").at(0).at("message").at("content").as_string());
}

std::int64_t completion_tokens(const test::http_reply& r) {
    return test::parse_object(r.body).at("usage").at("completion_tokens").as_int64();
}

/// The tokens a reply's draws chose: its completion tokens and, when the model ended it, the
/// end-of-generation token (drawn like any other, not counted in usage).
std::int64_t drawn(std::int64_t completion_tokens, bool ran_out) {
    return completion_tokens + (ran_out ? 0 : 1);
}

std::string finish_of(const test::http_reply& r) {
    return std::string(
        test::parse_object(r.body).at("choices").at(0).at("finish_reason").as_string());
}

/// What a native stream sent: its token ids as a JSON array, each token event's logprob (absent:
/// +inf, which no logprob is) and the `done` event's finish reason.
struct native_stream {
    std::string tokens;
    std::vector<double> logprobs;
    std::string finish;
};

native_stream read_native_stream(const test::http_reply& r) {
    REQUIRE_MESSAGE(r.status == 200, r.body);
    native_stream out;
    boost::json::array ids;
    for (const auto& [event, data] : test::sse_events(r.body)) {
        const auto t = test::parse_object(data);
        if (event == "token") {
            ids.push_back(t.at("token_id"));
            out.logprobs.push_back(t.contains("logprob") ? t.at("logprob").to_number<double>()
                                                         : HUGE_VAL);
        } else if (event == "done") {
            out.finish = std::string(t.at("finish_reason").as_string());
        }
    }
    out.tokens = boost::json::serialize(ids);
    return out;
}

} // namespace

TEST_CASE("greedy screen: greedy replies that show no logprob come from the screen with the "
          "full rows' text, other requests compute their rows, and the tokens are counted") {
    test::server_process s(screen_flags);
    REQUIRE(test::load_and_wait(s, "fortunes", fortunes_path).at("state") == "ready");
    CHECK(std::string(test::model(s, "tiny").at("engine").as_string()).find("greedy screen") !=
          std::string::npos);

    for (const std::string model : {"tiny", "fortunes"}) {
        CAPTURE(model);
        std::int64_t finished = 0;
        std::int64_t counted = screened_after(s, model, finished);
        CHECK(counted == 0);
        for (const std::string prompt : {"Tell me one.", "Once upon a time, in a small town"}) {
            CAPTURE(prompt);
            // Logprobs shown: every row computed, nothing screened.
            const auto full =
                s.post("/v1/chat/completions", chat(model, prompt, R"(,"logprobs":true)"));
            const auto want = content_of(full);
            const auto lps = test::parse_object(full.body).at("choices").at(0).at("logprobs");
            REQUIRE(lps.at("content").as_array().size() > 0);
            CHECK(lps.at("content").at(0).at("logprob").to_number<double>() < 0.0);
            CHECK(screened_after(s, model, ++finished) == counted);

            // None shown: every token the screen's (speculation off: no verification rows).
            const auto screened = s.post("/v1/chat/completions", chat(model, prompt, ""));
            CHECK(content_of(screened) == want);
            CHECK(completion_tokens(screened) == completion_tokens(full));
            counted += drawn(completion_tokens(screened), finish_of(screened) == "length");
            CHECK(screened_after(s, model, ++finished) == counted);
        }

        // Anthropic Messages never show logprobs; a plain native reply without them neither.
        const auto msgs =
            s.post("/v1/messages", R"({"model":")" + model +
                                       R"(","max_tokens":16,"temperature":0,"speculative":"off",)"
                                       R"("messages":[{"role":"user","content":"Tell me one."}]})");
        REQUIRE_MESSAGE(msgs.status == 200, msgs.body);
        const auto msgs_o = test::parse_object(msgs.body);
        counted += drawn(msgs_o.at("usage").at("output_tokens").as_int64(),
                         msgs_o.at("stop_reason") == "max_tokens");
        CHECK(screened_after(s, model, ++finished) == counted);
        const std::string native = R"({"model":")" + model +
                                   R"(","prompt":"The cat sat","max_tokens":16,"temperature":0,)"
                                   R"("speculative":"off")";
        const auto plain = s.post("/v1/inference", native + "}");
        REQUIRE_MESSAGE(plain.status == 200, plain.body);
        const auto plain_o = test::parse_object(plain.body);
        counted += drawn(plain_o.at("usage").at("completion_tokens").as_int64(),
                         plain_o.at("finish_reason") == "length");
        CHECK(screened_after(s, model, ++finished) == counted);

        // Need the row: a native stream's events carry each token's logprob; a repetition
        // penalty changes the row before its maximum is taken; a sampled draw reads it all.
        const auto stream = read_native_stream(s.post("/v1/inference/stream", native + "}"));
        for (const double lp : stream.logprobs)
            CHECK(lp < 0.0);
        // The stream computed full rows and still chose the screen's tokens.
        CHECK(stream.tokens == boost::json::serialize(plain_o.at("tokens")));
        CHECK(screened_after(s, model, ++finished) == counted);

        // A native stream that turns the events' logprob off: screened, the same tokens.
        const auto bare = read_native_stream(
            s.post("/v1/inference/stream", native + R"(,"token_logprob":false})"));
        for (const double lp : bare.logprobs)
            CHECK(lp == HUGE_VAL); // no logprob in the event
        CHECK(bare.tokens == boost::json::serialize(plain_o.at("tokens")));
        REQUIRE_FALSE(bare.finish.empty());
        counted +=
            drawn(plain_o.at("usage").at("completion_tokens").as_int64(), bare.finish == "length");
        CHECK(screened_after(s, model, ++finished) == counted);
        for (const std::string extra :
             {R"(,"repetition_penalty":1.3})", R"(,"temperature":0.7,"seed":3})"}) {
            auto body = native + extra;
            if (extra.find("temperature") != std::string::npos)
                body.replace(body.find(R"("temperature":0,)"), 16, "");
            REQUIRE_MESSAGE(s.post("/v1/inference", body).status == 200, body);
            CHECK(screened_after(s, model, ++finished) == counted);
        }
    }
    // The counter in /metrics: both models' tokens (the stats say each one's).
    const auto total = screened_after(s, "tiny", 10) + screened_after(s, "fortunes", 10);
    bool shown = false;
    for (int i = 0; i < 500 && !shown; ++i) {
        shown = s.get("/metrics")
                    .body.find("bitnet_greedy_screened_tokens_total " + std::to_string(total) +
                               "\n") != std::string::npos;
        if (!shown)
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    CHECK_MESSAGE(shown, "no bitnet_greedy_screened_tokens_total " << total);
}

TEST_CASE("greedy screen: steps verifying n-gram drafts take each row from the screen, with the "
          "full rows' text") {
    test::default_model m; // the trained model repeats a repeated sentence: drafts are accepted
    auto& s = m.s;
    test::server_process screened(screen_flags);
    REQUIRE(test::load_and_wait(screened, "fortunes", fortunes_path).at("state") == "ready");
    const std::string ask =
        R"({"model":"fortunes","max_tokens":48,"temperature":0,"speculative":"auto","prompt":)"
        R"("The cat sat on the mat. The cat sat on the mat. The cat sat on the mat. The cat")";
    // The plain server's tokens, and the screened server's with logprobs shown (full rows).
    const auto want = s.post("/v1/inference", ask + "}");
    REQUIRE_MESSAGE(want.status == 200, want.body);
    const auto want_o = test::parse_object(want.body);
    const auto full = screened.post("/v1/inference", ask + R"(,"logprobs":1})");
    REQUIRE_MESSAGE(full.status == 200, full.body);
    CHECK(test::parse_object(full.body).at("tokens") == want_o.at("tokens"));
    const auto before = stats_after(screened, "fortunes", 1);
    CHECK(before.at("greedy_screened_tokens").as_int64() == 0);
    const auto accepted_before = before.at("spec_accepted_tokens").as_int64();
    REQUIRE(accepted_before > 0); // the full-row request verified drafts too

    const auto got = screened.post("/v1/inference", ask + "}");
    REQUIRE_MESSAGE(got.status == 200, got.body);
    const auto got_o = test::parse_object(got.body);
    CHECK(got_o.at("tokens") == want_o.at("tokens"));
    const auto after = stats_after(screened, "fortunes", 2);
    // Drafts were accepted, so some tokens came without a decode step of their own: only with
    // the verification rows screened does every drawn token come from the screen.
    CHECK(after.at("spec_accepted_tokens").as_int64() > accepted_before);
    CHECK(after.at("greedy_screened_tokens").as_int64() >=
          drawn(got_o.at("usage").at("completion_tokens").as_int64(),
                got_o.at("finish_reason") == "length"));
}

TEST_CASE("greedy screen: off by default, where nothing is screened") {
    test::server_process s;
    CHECK(std::string(test::model(s, "tiny").at("engine").as_string()).find("greedy screen") ==
          std::string::npos);
    REQUIRE(s.post("/v1/chat/completions", chat("tiny", "Tell me one.", "")).status == 200);
    CHECK(screened_after(s, "tiny", 1) == 0);
}
