// The CUDA engine behind the real server: bitnet-server with `--devices sim:0` runs its model on
// the CUDA engine over the simulated grid (every CUDA kernel body run on the host), through the
// same executor, batcher and HTTP path a GPU placement takes. Its logits are the CPU engine's bits
// (tests/engine/cuda_engine_sim_test.cpp), so a server on the CPU and one on sim:0 must give the
// same tokens, greedy and seeded-sampled alike.
#include "server/model_admin.hpp"
#include "server/server_process.hpp"

#include <cstring>

using namespace bitnet;

namespace {

std::string sampled(const std::string& prompt) {
    return R"({"model":"tiny","prompt":)" + boost::json::serialize(boost::json::value(prompt)) +
           R"(,"max_tokens":10,"temperature":0.8,"top_p":0.9,"seed":7,"n":2})";
}

std::string texts(const test::server_process& s, const std::string& body) {
    auto r = s.post("/v1/completions", body);
    REQUIRE_MESSAGE(r.status == 200, r.body);
    const auto o = test::parse_object(r.body);
    std::string out;
    for (const auto& c : o.at("choices").as_array())
        out += std::string(c.as_object().at("text").as_string()) + "\x1f";
    return out;
}

} // namespace

TEST_CASE("--devices sim:0 serves through the CUDA engine and answers as the CPU does") {
    test::server_process cpu({"--devices", "cpu"});
    test::server_process sim({"--devices", "sim:0"});
    const auto m = test::model(sim, "tiny");
    CHECK(m.at("device").as_string() == "sim:0");
    CHECK(m.at("device_fallbacks").as_int64() == 0);
    CHECK(test::model(cpu, "tiny").at("device").as_string() == "cpu");
    // /health names the engine serving it: the CUDA engine on the simulated grid.
    const auto health = test::parse_object(sim.get("/health").body);
    std::string engine;
    for (const auto& e : health.at("components").at("executors").as_array())
        if (e.at("model").as_string() == "tiny")
            engine = e.at("engine").as_string();
    CHECK_MESSAGE(engine.find("simulated grid") != std::string::npos, engine);

    for (const std::string prompt : {"Hello", "Once upon a time", "1 2 3 4 5 6 7 8 9"}) {
        CAPTURE(prompt);
        CHECK(test::generate(sim, "tiny", prompt).first ==
              test::generate(cpu, "tiny", prompt).first);
        CHECK(texts(sim, sampled(prompt)) == texts(cpu, sampled(prompt)));
    }
    // Streamed, too: the same events' text.
    const std::string body =
        R"({"model":"tiny","prompt":"Hello","max_tokens":8,"temperature":0,"stream":true})";
    auto a = sim.post("/v1/completions", body);
    auto b = cpu.post("/v1/completions", body);
    REQUIRE(a.status == 200);
    REQUIRE(b.status == 200);
    const auto text_of = [](const std::string& sse) {
        std::string out;
        for (std::size_t at = 0; (at = sse.find("\"text\":\"", at)) != std::string::npos;) {
            at += 8;
            out += sse.substr(at, sse.find('"', at) - at) + "|";
        }
        return out;
    };
    CHECK(!text_of(a.body).empty());
    CHECK(text_of(a.body) == text_of(b.body));

    // The native stream's token ids and logprobs, seeded sampling with top-k and a repetition
    // penalty: on sim:0 the CUDA engine's device sampler draws them (the executor hands it the
    // sequence's draw), on the CPU model::sampler does; the same tokens, the same logprobs.
    const std::string native =
        R"({"model":"tiny","prompt":"Once upon a time","max_tokens":12,"temperature":0.9,)"
        R"("top_k":40,"repetition_penalty":1.3,"seed":11,"stream":true})";
    const auto ids_and_logprobs = [](const std::string& sse) {
        std::string out;
        for (const char* key : {"\"token_id\":", "\"logprob\":"})
            for (std::size_t at = 0; (at = sse.find(key, at)) != std::string::npos;) {
                at += std::strlen(key);
                out += sse.substr(at, sse.find_first_of(",}", at) - at) + "|";
            }
        return out;
    };
    auto c = sim.post("/v1/inference/stream", native);
    auto d = cpu.post("/v1/inference/stream", native);
    REQUIRE(c.status == 200);
    REQUIRE(d.status == 200);
    CHECK(c.body.find("\"logprob\":") != std::string::npos); // the comparison has logprobs
    CHECK(ids_and_logprobs(c.body) == ids_and_logprobs(d.body));
}
