// Speculative decoding on the real binary with its default model (trained, so it continues a
// repeated text the way a real model quotes): the `speculative` field on every inference route
// (auto, off, anything else a 400 naming it), the same text and tokens with drafts as without
// (greedy and seeded; n-gram drafts, and jump-forward drafts under a schema), and the drafts
// counted in /v1/stats and /metrics by source.
#include "server/model_admin.hpp"

#include <chrono>
#include <functional>
#include <string>
#include <thread>

using namespace bitnet;

namespace {

const std::string fortunes_path = test::data_path("../../models/bitnet-fortunes-5m-i2_s.gguf");

/// A /v1/stats figure summed over the server's models.
std::int64_t stat_of(const test::server_process& s, const char* field) {
    const auto o = test::parse_object(s.get("/v1/stats").body);
    std::int64_t sum = 0;
    for (const auto& m : o.at("models").as_array())
        sum += m.as_object().at(field).as_int64();
    return sum;
}

/// Waits (bounded) until `pred` holds: the stats and metrics figures are the batchers' counters
/// as last polled, which may trail a reply by a poll.
bool within_seconds(int seconds, const std::function<bool()>& pred) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (!pred()) {
        if (std::chrono::steady_clock::now() > until)
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return true;
}

/// A prompt that repeats a sentence: the model's continuation repeats it too, so the drafts
/// from the prompt are right often.
const std::string repeated = "The cat sat on the mat. The cat sat on the mat. The cat sat on the "
                             "mat. The cat sat on the mat. The cat";

std::string completion(const std::string& mode, const std::string& sampling) {
    return R"({"model":"fortunes","prompt":")" + repeated + R"(","max_tokens":48)" + sampling +
           (mode.empty() ? "" : R"(,"speculative":")" + mode + "\"") + "}";
}

} // namespace

TEST_CASE("speculative: the same output with drafts as without, greedy and seeded, and the "
          "drafts are counted") {
    test::default_model m;
    auto& s = m.s;
    CHECK(stat_of(s, "spec_draft_tokens") == 0);
    for (const std::string sampling : {R"(,"temperature":0)", R"(,"temperature":0.9,"seed":11)"}) {
        CAPTURE(sampling);
        const auto off = s.post("/v1/inference", completion("off", sampling));
        REQUIRE_MESSAGE(off.status == 200, off.body);
        const auto on = s.post("/v1/inference", completion("auto", sampling));
        REQUIRE_MESSAGE(on.status == 200, on.body);
        const auto a = test::parse_object(off.body), b = test::parse_object(on.body);
        CHECK(a.at("text") == b.at("text"));
        CHECK(a.at("tokens") == b.at("tokens"));
        MESSAGE("drafts on: " << b.at("text"));
        // The server's default (auto) is the same as asking.
        const auto dflt = s.post("/v1/inference", completion("", sampling));
        REQUIRE(dflt.status == 200);
        CHECK(test::parse_object(dflt.body).at("tokens") == a.at("tokens"));
    }
    // Settled: the figures stop changing once the last reply's counters are polled.
    std::int64_t drafted = -1, accepted = -1;
    std::string metrics;
    CHECK(within_seconds(10, [&] {
        const auto d = stat_of(s, "spec_draft_tokens"), a = stat_of(s, "spec_accepted_tokens");
        metrics = s.get("/metrics").body;
        const bool same = d == drafted && a == accepted &&
                          metrics.find("bitnet_spec_draft_tokens_total{source=\"ngram\"} " +
                                       std::to_string(d) + "\n") != std::string::npos &&
                          metrics.find("bitnet_spec_accepted_tokens_total{source=\"ngram\"} " +
                                       std::to_string(a) + "\n") != std::string::npos;
        drafted = d;
        accepted = a;
        return same;
    }));
    MESSAGE("default model, repeated sentence: " << accepted << " of " << drafted
                                                 << " drafts accepted");
    CHECK(accepted > 0);
    CHECK(accepted <= drafted);

    // A server started with speculation off drafts for nobody that does not ask.
    test::server_process quiet({"--speculative", "off"});
    REQUIRE(test::load_and_wait(quiet, "fortunes", fortunes_path).at("state") == "ready");
    REQUIRE(quiet.post("/v1/inference", completion("", R"(,"temperature":0)")).status == 200);
    CHECK(stat_of(quiet, "spec_draft_tokens") == 0);
    REQUIRE(quiet.post("/v1/inference", completion("auto", R"(,"temperature":0)")).status == 200);
    CHECK(within_seconds(10, [&] { return stat_of(quiet, "spec_draft_tokens") > 0; }));
}

TEST_CASE("speculative: jump-forward drafts under a schema, the same output with them as "
          "without, counted by source") {
    test::default_model m;
    auto& s = m.s;
    const std::string format =
        R"("response_format":{"type":"json_schema","json_schema":{"name":"record","schema":)"
        R"({"type":"object","properties":{"customer_identification_number":{"type":"integer",)"
        R"("minimum":0,"maximum":999},"preferred_method_of_contact":{"enum":[)"
        R"("electronic_mail_message","telephone_call_in_the_evening"]}},"required":[)"
        R"("customer_identification_number","preferred_method_of_contact"],)"
        R"("additionalProperties":false}}})";
    auto body = [&](const std::string& mode, const std::string& sampling) {
        return R"({"model":"fortunes","messages":[{"role":"user","content":"A record."}],)"
               R"("max_tokens":120,)" +
               format + sampling + R"(,"speculative":")" + mode + R"("})";
    };
    for (const std::string sampling : {R"(,"temperature":0)", R"(,"temperature":0.9,"seed":5)"}) {
        CAPTURE(sampling);
        const auto off = s.post("/v1/chat/completions", body("off", sampling));
        REQUIRE_MESSAGE(off.status == 200, off.body);
        const auto on = s.post("/v1/chat/completions", body("auto", sampling));
        REQUIRE_MESSAGE(on.status == 200, on.body);
        const auto a = test::parse_object(off.body), b = test::parse_object(on.body);
        CHECK(a.at("choices") == b.at("choices"));
        CHECK(a.at("usage").at("completion_tokens") == b.at("usage").at("completion_tokens"));
        MESSAGE("drafts on: " << b.at("choices").as_array()[0].at("message").at("content"));
    }
    // Settled figures: /v1/stats's grammar share equals the grammar series, the rest the
    // n-gram series.
    std::int64_t gd = -1, ga = -1;
    CHECK(within_seconds(10, [&] {
        const auto d = stat_of(s, "spec_draft_tokens"), a = stat_of(s, "spec_accepted_tokens");
        const auto g = stat_of(s, "spec_grammar_draft_tokens");
        const auto h = stat_of(s, "spec_grammar_accepted_tokens");
        const auto metrics = s.get("/metrics").body;
        auto has = [&](const char* name, const char* source, std::int64_t v) {
            return metrics.find(std::string(name) + "{source=\"" + source + "\"} " +
                                std::to_string(v) + "\n") != std::string::npos;
        };
        const bool same = g == gd && h == ga &&
                          has("bitnet_spec_draft_tokens_total", "grammar", g) &&
                          has("bitnet_spec_accepted_tokens_total", "grammar", h) &&
                          has("bitnet_spec_draft_tokens_total", "ngram", d - g) &&
                          has("bitnet_spec_accepted_tokens_total", "ngram", a - h);
        gd = g;
        ga = h;
        return same;
    }));
    MESSAGE("default model: " << ga << " of " << gd << " schema drafts accepted");
    CHECK(gd > 0);
    CHECK(ga > 0);
    CHECK(ga <= gd);
}

TEST_CASE("speculative: every inference route takes the field, and a bad value is a 400 naming "
          "it") {
    test::server_process s;
    const std::string chat = R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":4,)";
    const std::string msgs = R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":4,)";
    const std::string resp = R"({"input":"hi","max_output_tokens":4,)";
    const std::pair<const char*, std::string> routes[] = {
        {"/v1/inference", R"({"prompt":"hi","max_tokens":4,)"},
        {"/v1/completions", R"({"prompt":"hi","max_tokens":4,)"},
        {"/v1/chat/completions", chat},
        {"/v1/messages", msgs},
        {"/v1/responses", resp},
    };
    for (const auto& [route, head] : routes) {
        CAPTURE(route);
        for (const char* ok : {"auto", "off"})
            CHECK(s.post(route, head + R"("speculative":")" + ok + "\"}").status == 200);
        for (const char* bad : {R"("sometimes")", "true", "1"}) {
            const auto r = s.post(route, head + R"("speculative":)" + bad + "}");
            CHECK(r.status == 400);
            CHECK_MESSAGE(r.body.find("speculative") != std::string::npos, r.body);
        }
    }
    // The config key takes auto or off only.
    const auto bad = test::run_tool("bitnet-server", "--print-config --speculative maybe");
    CHECK(bad.exit_code == 2);
    CHECK_MESSAGE(bad.err.find("speculative") != std::string::npos, bad.err);
}

TEST_CASE("speculative: a draft model's drafts, the same output as without, counted by source, "
          "and one with another vocabulary fails its load naming draft_model") {
    // The draft: the tiny shape again with other weights and the same 512-token vocabulary
    // (--vocab says so explicitly). Random weights rarely agree, so this checks the path and the
    // exactness, not the acceptance (the tiny-file test and bench/RESULTS.md do).
    test::scratch_dir dir;
    const auto draft = dir.file("draft.gguf");
    const auto made =
        test::run_tool("bitnet-model", "make --shape tiny --seed 2 --vocab 512 -o " + draft);
    REQUIRE_MESSAGE(made.exit_code == 0, made.err);
    test::server_process s({"--draft-model", draft});
    const auto models = test::parse_object(s.get("/v1/models/tiny").body);
    MESSAGE(boost::json::serialize(models.at("engine")));
    CHECK(std::string(models.at("engine").as_string()).find("draft model") != std::string::npos);
    auto body = [](const std::string& mode, const std::string& sampling) {
        return R"({"model":"tiny","prompt":"It was the best of times, it was the worst of times",)"
               R"("max_tokens":40)" +
               sampling + R"(,"speculative":")" + mode + R"("})";
    };
    for (const std::string sampling : {R"(,"temperature":0)", R"(,"temperature":0.9,"seed":3)"}) {
        CAPTURE(sampling);
        const auto off = s.post("/v1/inference", body("off", sampling));
        REQUIRE_MESSAGE(off.status == 200, off.body);
        const auto on = s.post("/v1/inference", body("auto", sampling));
        REQUIRE_MESSAGE(on.status == 200, on.body);
        CHECK(test::parse_object(off.body).at("tokens") ==
              test::parse_object(on.body).at("tokens"));
    }
    std::int64_t md = -1, ma = -1;
    CHECK(within_seconds(10, [&] {
        const auto d = stat_of(s, "spec_model_draft_tokens"),
                   a = stat_of(s, "spec_model_accepted_tokens");
        const auto metrics = s.get("/metrics").body;
        const bool same =
            d == md && a == ma &&
            metrics.find("bitnet_spec_draft_tokens_total{source=\"draft_model\"} " +
                         std::to_string(d) + "\n") != std::string::npos &&
            metrics.find("bitnet_spec_accepted_tokens_total{source=\"draft_model\"} " +
                         std::to_string(a) + "\n") != std::string::npos;
        md = d;
        ma = a;
        return same;
    }));
    MESSAGE("random tiny draft model: " << ma << " of " << md << " drafts accepted");
    CHECK(md > 0);
    CHECK(ma <= md);

    // A load naming a draft model of another vocabulary fails, and says why; so does a bad field.
    const auto op = test::load_and_wait(
        s, "mismatch", s.model_path(),
        R"(,"draft_model":)" + boost::json::serialize(boost::json::value(fortunes_path)));
    CHECK(op.at("state").as_string() == "failed");
    const std::string failure(op.at("failure").as_string());
    MESSAGE(failure);
    CHECK(failure.find("vocabulary") != std::string::npos);
    const auto bad =
        s.post("/v1/models/load", test::load_body("x", s.model_path(), R"(,"draft_model":7)"));
    CHECK(bad.status == 400);
    CHECK(bad.body.find("draft_model") != std::string::npos);
    // The same load with a matching draft serves, drafting.
    const auto good = test::load_and_wait(s, "again", s.model_path(),
                                          R"(,"draft_model":)" +
                                              boost::json::serialize(boost::json::value(draft)));
    CHECK(good.at("state").as_string() == "ready");
}

TEST_CASE("speculative: a models entry names its own draft model or none, over the server-wide "
          "draft_model") {
    test::scratch_dir dir;
    const auto main_model = dir.file("main.gguf"), draft = dir.file("draft.gguf");
    for (const auto& [path, seed] : {std::pair{main_model, 1}, std::pair{draft, 2}}) {
        const auto made =
            test::run_tool("bitnet-model", "make --shape tiny --seed " + std::to_string(seed) +
                                               " --vocab 512 -o " + path);
        REQUIRE_MESSAGE(made.exit_code == 0, made.err);
    }
    // Server-wide: the draft. "plain" opts out; "drafted" takes the server's.
    const auto config = dir.file("server.json");
    const auto q = [](const std::string& x) {
        return boost::json::serialize(boost::json::value(x));
    };
    const std::string text =
        R"({"draft_model":)" + q(draft) + R"(,"models":[)" + R"({"alias":"plain","path":)" +
        q(main_model) + R"(,"draft_model":""},{"alias":"drafted","path":)" + q(main_model) + "}]}";
    test::write_file(config, {text.begin(), text.end()});
    test::server_process s({"--config", config}, {.model_flag = false});
    // Ready means the default model (the first) serves; the second may still be loading.
    auto engine_of = [&](const std::string& alias) {
        const auto o = test::parse_object(s.get("/v1/models/" + alias).body);
        const auto* e = o.if_contains("engine");
        return e && e->is_string() ? std::string(e->as_string()) : std::string();
    };
    CHECK(within_seconds(120, [&] { return !engine_of("drafted").empty(); }));
    CHECK(engine_of("drafted").find("draft model") != std::string::npos);
    CHECK(engine_of("plain").find("draft model") == std::string::npos);
    auto model_drafts = [&](const std::string& alias) {
        const auto o = test::parse_object(s.get("/v1/stats").body);
        for (const auto& m : o.at("models").as_array())
            if (m.as_object().at("model").as_string() == alias)
                return m.as_object().at("spec_model_draft_tokens").as_int64();
        return std::int64_t{-1};
    };
    for (const std::string alias : {"plain", "drafted"}) {
        const auto r =
            s.post("/v1/inference", R"({"model":")" + alias +
                                        R"(","prompt":"It was the best of times","max_tokens":24,)"
                                        R"("temperature":0,"speculative":"auto"})");
        REQUIRE_MESSAGE(r.status == 200, r.body);
    }
    CHECK(within_seconds(10, [&] { return model_drafts("drafted") > 0; }));
    CHECK(model_drafts("plain") == 0);
}
