// bitnet-server as a process, over a real model (`bitnet-model make --shape tiny --seed 1`):
// native and OpenAI routes, SSE, greedy determinism, batch invariance of concurrent requests,
// tokenize/detokenize, the drain on SIGTERM, --print-config.
#include "server/server_process.hpp"

#include <atomic>
#include <mutex>
#include <set>
#include <string>

using namespace bitnet;

namespace {

using test::sse_data;

std::string greedy(const std::string& prompt, int max_tokens) {
    return R"({"prompt":)" + boost::json::serialize(boost::json::value(prompt)) +
           R"(,"max_tokens":)" + std::to_string(max_tokens) + R"(,"temperature":0})";
}

std::vector<std::int64_t> ids_of(const boost::json::array& a) {
    std::vector<std::int64_t> out;
    for (const auto& v : a)
        out.push_back(v.as_int64());
    return out;
}

} // namespace

TEST_CASE("native completion on a real model: greedy is deterministic, usage adds up") {
    test::server_process s;
    auto a = s.post("/v1/inference", greedy("Hello, world", 12));
    REQUIRE_MESSAGE(a.status == 200, a.body);
    auto o = test::parse_object(a.body);
    CHECK(o.at("model").as_string() == "tiny");
    const auto tokens = ids_of(o.at("tokens").as_array());
    const auto& usage = o.at("usage").as_object();
    CHECK(usage.at("completion_tokens").as_int64() == static_cast<std::int64_t>(tokens.size()));
    CHECK(usage.at("prompt_tokens").as_int64() > 0);
    CHECK(usage.at("total_tokens").as_int64() ==
          usage.at("prompt_tokens").as_int64() + usage.at("completion_tokens").as_int64());
    const auto reason = std::string(o.at("finish_reason").as_string());
    CHECK((reason == "length" ? tokens.size() == 12 : reason == "eos"));
    auto b = test::parse_object(s.post("/v1/inference", greedy("Hello, world", 12)).body);
    CHECK(ids_of(b.at("tokens").as_array()) == tokens);
    CHECK(b.at("text") == o.at("text"));

    // The same prompt as token ids gives the same generation.
    auto t = test::parse_object(
        s.post("/v1/tokenize", R"({"text":"Hello, world","add_bos":true})").body);
    auto by_ids = s.post("/v1/inference", R"({"prompt":)" + boost::json::serialize(t.at("tokens")) +
                                              R"(,"max_tokens":12,"temperature":0})");
    REQUIRE(by_ids.status == 200);
    CHECK(ids_of(test::parse_object(by_ids.body).at("tokens").as_array()) == tokens);

    // Sampling parameters are accepted and a seed makes the draw repeatable.
    const std::string sampled = R"({"prompt":"Hello","max_tokens":10,"temperature":1.3,"top_k":50,
        "top_p":0.9,"min_p":0.01,"repetition_penalty":1.1,"seed":11})";
    auto s1 = test::parse_object(s.post("/v1/inference", sampled).body);
    auto s2 = test::parse_object(s.post("/v1/inference", sampled).body);
    CHECK(s1.at("tokens") == s2.at("tokens"));

    // Every metric family of the contract is exported by the running server
    // (tests/data/contract/http-api-metrics.md).
    const auto m = s.get("/metrics").body;
    for (const char* name : {"bitnet_requests_total",
                             "bitnet_request_duration_seconds",
                             "bitnet_time_to_first_token_seconds",
                             "bitnet_inter_token_latency_seconds",
                             "bitnet_queue_time_seconds",
                             "bitnet_prompt_tokens_total",
                             "bitnet_generated_tokens_total",
                             "bitnet_requests_running",
                             "bitnet_requests_waiting",
                             "bitnet_batch_size",
                             "bitnet_step_duration_seconds",
                             "bitnet_kv_cache_usage_ratio",
                             "bitnet_admission_rejections_total",
                             "bitnet_model_info",
                             "bitnet_model_swaps_total",
                             "bitnet_build_info",
                             "vllm:num_requests_running",
                             "vllm:num_requests_waiting",
                             "vllm:kv_cache_usage_perc",
                             "vllm:time_to_first_token_seconds",
                             "vllm:e2e_request_latency_seconds"})
        CHECK_MESSAGE(m.find(std::string("\n") + name) != std::string::npos, name);
    // The version id of a model loaded without one is its file's SHA-256 prefix.
    const auto info = test::parse_object(s.get("/v1/models/tiny").body);
    const std::string version(info.at("version").as_string());
    CHECK(version.size() == 12);
    CHECK(info.at("file_sha256").as_string().subview().substr(0, 12) == version);
    CHECK(o.at("model_version").as_string() == version);
    // The kernel family of every op, as the engine chose it at load.
    const auto& kernels = info.at("kernels").as_array();
    REQUIRE(kernels.size() == 5);
    std::set<std::string> ops;
    for (const auto& k : kernels) {
        const auto& ko = k.as_object();
        ops.insert(std::string(ko.at("op").as_string()));
        const std::string family(ko.at("family").as_string());
        CHECK((family == "avx2" || family == "avx512_vnni" || family == "scalar"));
        const std::string source(ko.at("source").as_string());
        CHECK(
            (source == "measured" || source == "only family" || source == "pinned by BITNET_ISA"));
        if (source == "measured")
            CHECK(ko.at("timings_ns").as_object().contains(family));
    }
    CHECK(ops == std::set<std::string>{"ternary_gemv", "ternary_batched", "ternary_prefill",
                                       "logits_gemv", "logits_batched"});
    CHECK(m.find(R"(bitnet_model_info{alias="tiny",device="cpu",format="i2_s",version=")" +
                 version + R"("} 1)") != std::string::npos);
}

TEST_CASE("SSE stream on a real model: the same tokens and text as the plain reply") {
    test::server_process s;
    auto plain = test::parse_object(s.post("/v1/inference", greedy("Once upon", 10)).body);
    auto st = s.post("/v1/inference/stream", greedy("Once upon", 10));
    REQUIRE(st.status == 200);
    CHECK(st.content_type == "text/event-stream");
    std::vector<std::int64_t> tokens;
    std::string text;
    std::optional<boost::json::object> done;
    std::size_t at = 0;
    while ((at = st.body.find("event: ", at)) != std::string::npos) {
        const auto nl = st.body.find('\n', at);
        const auto ev = st.body.substr(at + 7, nl - at - 7);
        const auto data_end = st.body.find("\n\n", nl);
        auto data = test::parse_object(st.body.substr(nl + 7, data_end - nl - 7));
        if (ev == "token") {
            if (!data.at("token_id").is_null())
                tokens.push_back(data.at("token_id").as_int64());
            text += data.at("text").as_string();
        } else if (ev == "done") {
            done = data;
        }
        at = data_end;
    }
    REQUIRE(done);
    CHECK(done->at("finish_reason") == plain.at("finish_reason"));
    CHECK(tokens == ids_of(plain.at("tokens").as_array()));
    CHECK(text == plain.at("text").as_string());
}

TEST_CASE("OpenAI chat on a real model: plain and streamed agree, usage chunk, [DONE]") {
    test::server_process s;
    const std::string req = R"({"model":"tiny","messages":[{"role":"system","content":"Be brief."},
        {"role":"user","content":"Hi there"}],"max_tokens":8,"temperature":0)";
    auto plain = s.post("/v1/chat/completions", req + "}");
    REQUIRE_MESSAGE(plain.status == 200, plain.body);
    auto o = test::parse_object(plain.body);
    CHECK(o.at("object").as_string() == "chat.completion");
    const auto& choice = o.at("choices").as_array()[0].as_object();
    CHECK(choice.at("message").as_object().at("role").as_string() == "assistant");
    const std::string content(choice.at("message").as_object().at("content").as_string());

    auto st = s.post("/v1/chat/completions",
                     req + R"(,"stream":true,"stream_options":{"include_usage":true}})");
    REQUIRE(st.status == 200);
    const auto chunks = test::sse_data(st.body);
    REQUIRE(chunks.size() >= 4);
    CHECK(chunks.back() == "[DONE]");
    std::string streamed;
    std::string finish;
    for (std::size_t i = 0; i + 2 < chunks.size(); ++i) {
        auto c = test::parse_object(chunks[i]);
        CHECK(c.at("object").as_string() == "chat.completion.chunk");
        const auto& ch = c.at("choices").as_array()[0].as_object();
        if (const auto* d = ch.at("delta").as_object().if_contains("content"))
            streamed += d->as_string();
        if (!ch.at("finish_reason").is_null())
            finish = ch.at("finish_reason").as_string();
    }
    CHECK(streamed == content);
    CHECK(finish == choice.at("finish_reason").as_string());
    auto usage = test::parse_object(chunks[chunks.size() - 2]);
    CHECK(usage.at("choices").as_array().empty());
    // The same usage, except that the repeat took its prompt's whole blocks from the cache.
    CHECK(test::usage_without_cache(usage.at("usage")) == test::usage_without_cache(o.at("usage")));
    CHECK(test::cached_tokens(o.at("usage")) == 0);
    CHECK(test::cached_tokens(usage.at("usage")) > 0);

    // Chat logprobs: one entry per generated token, each with its alternatives.
    auto lp = test::parse_object(
        s.post("/v1/chat/completions", req + R"(,"logprobs":true,"top_logprobs":3})").body);
    const auto& entries = lp.at("choices")
                              .as_array()[0]
                              .as_object()
                              .at("logprobs")
                              .as_object()
                              .at("content")
                              .as_array();
    CHECK(static_cast<std::int64_t>(entries.size()) ==
          lp.at("usage").as_object().at("completion_tokens").as_int64());
    CHECK(entries[0].as_object().at("top_logprobs").as_array().size() == 3);

    // OpenAI completions (plain) on the same model.
    auto c = s.post("/v1/completions", R"({"prompt":"Hello","max_tokens":4,"temperature":0})");
    REQUIRE(c.status == 200);
    CHECK(test::parse_object(c.body).at("object").as_string() == "text_completion");
}

TEST_CASE("concurrent greedy requests get the same text as each alone (batch invariance)") {
    test::server_process s({"--max-seqs", "8"});
    const std::vector<std::string> prompts{
        "The cat", "A long time ago in a galaxy", "1 2 3 4", "Bonjour",
        "zzz",     "Tokens and more tokens",      "x",       "Hello, world"};
    std::vector<boost::json::value> alone;
    for (const auto& p : prompts) {
        auto r = s.post("/v1/inference", greedy(p, 16));
        REQUIRE(r.status == 200);
        alone.push_back(test::parse_object(r.body).at("tokens"));
    }
    std::vector<boost::json::value> together(prompts.size());
    std::vector<std::thread> clients;
    for (std::size_t i = 0; i < prompts.size(); ++i)
        clients.emplace_back([&, i] {
            auto r = s.post("/v1/inference", greedy(prompts[i], 16));
            if (r.status == 200)
                together[i] = test::parse_object(r.body).at("tokens");
        });
    for (auto& t : clients)
        t.join();
    for (std::size_t i = 0; i < prompts.size(); ++i) {
        CAPTURE(prompts[i]);
        CHECK(together[i] == alone[i]);
    }
    // They really shared steps: the batch-size histogram saw steps with several sequences.
    const auto m = s.get("/metrics").body;
    auto value_of = [&m](const std::string& series) {
        const auto at = m.find(series + " ");
        REQUIRE_MESSAGE(at != std::string::npos, series);
        return std::stod(m.substr(at + series.size() + 1));
    };
    CHECK(value_of("bitnet_batch_size_bucket{le=\"1\"}") < value_of("bitnet_batch_size_count"));
}

TEST_CASE("tokenize and detokenize round-trip text through the model's tokenizer") {
    test::server_process s;
    const std::string text = "h\xC3\xA9llo w\xC3\xB6rld, 123 \xE2\x82\xAC!";
    auto t = s.post("/v1/tokenize",
                    R"({"text":)" + boost::json::serialize(boost::json::value(text)) + "}");
    REQUIRE(t.status == 200);
    const auto tokens = test::parse_object(t.body).at("tokens");
    CHECK(tokens.as_array().size() >= 5);
    auto d = s.post("/v1/detokenize", R"({"tokens":)" + boost::json::serialize(tokens) + "}");
    REQUIRE(d.status == 200);
    CHECK(test::parse_object(d.body).at("text").as_string() == text);

    auto bad = s.post("/v1/detokenize", R"({"tokens":[100000]})");
    CHECK(bad.status == 400);
    CHECK(test::parse_object(bad.body).at("error").as_object().at("param").as_string() == "tokens");
    auto unknown = s.post("/v1/tokenize", R"({"text":"x","model":"nope"})");
    CHECK(unknown.status == 404);
}

TEST_CASE("SIGTERM drains: a running stream completes, then the process exits 0") {
    test::server_process s;
    test::http_reply stream;
    std::thread client([&] { stream = s.post("/v1/inference/stream", greedy("Drain me", 200)); });
    // Wait until the request is running (bounded), then ask the server to stop.
    for (int i = 0; i < 400; ++i) {
        auto st = s.get("/v1/stats").body;
        if (st.find("\"running\":1") != std::string::npos)
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    CHECK(s.signal_and_wait(SIGTERM) == 0);
    client.join();
    CHECK(stream.status == 200);
    CHECK(stream.body.find("event: done") != std::string::npos);
    CHECK(s.log().find("draining") != std::string::npos);
    // The request log line of the drained stream.
    CHECK(s.log().find("/v1/inference/stream stream 200 model=tiny finish=") != std::string::npos);
}

TEST_CASE("--print-config prints the effective configuration and exits 0") {
    auto r = test::run_tool("bitnet-server", "--model a=/m/a.gguf --port 9123 --print-config");
    REQUIRE(r.exit_code == 0);
    auto o = test::parse_object(r.out);
    CHECK(o.at("port").as_int64() == 9123);
    CHECK(o.at("models").as_array()[0].as_object().at("alias").as_string() == "a");
    auto bad = test::run_tool("bitnet-server", "--port 70000");
    CHECK(bad.exit_code == 2);
    CHECK(bad.err.find("port") != std::string::npos);
}

TEST_CASE("--q8-logits 1 serves with Q8_0 block logits, says so, and still generates") {
    test::server_process s({"--q8-logits", "1"});
    const auto info = test::parse_object(s.get("/v1/models/tiny").body);
    CHECK(std::string(info.at("engine").as_string()).find("logits Q8_0") != std::string::npos);
    auto a = s.post("/v1/inference", greedy("Hello, world", 8));
    REQUIRE_MESSAGE(a.status == 200, a.body);
    CHECK(test::parse_object(a.body).at("usage").as_object().at("completion_tokens").as_int64() >
          0);
    // Off by default.
    test::server_process plain;
    const auto f16 = test::parse_object(plain.get("/v1/models/tiny").body);
    CHECK(std::string(f16.at("engine").as_string()).find("logits F16") != std::string::npos);
}
