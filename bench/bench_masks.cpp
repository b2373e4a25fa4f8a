// The cost of one token mask computed cold: the walk of the vocabulary's trie from a matcher
// state, which a structured-output step pays for every state the mask cache does not hold yet
// (the mask worker's work, and what a deferred sample waits for). For each schema, a seeded walk
// of allowed tokens; at each of its states the mask is computed --repeat times, uncached and
// within the server's budget; per schema the median time of a mask, and the masks' total.
//
//   bench_masks [--tokenizer llama3|default] [--states 40] [--repeat 3] [--seed 1]
//
// llama3: the real Llama-3 tokenizer (128,256 tokens) from tests/data; default: the shipped
// model's 4,096-token vocabulary (models/).
#include "llama3_tokenizer.hpp"
#include "model/constrain/token_constraint.hpp"
#include "model/engine/engine.hpp"
#include "model/tokenizer/tokenizer.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace bitnet;
namespace mc = bitnet::model::constrain;

namespace {

struct schema_case {
    const char* name;
    std::string text;
};

std::vector<schema_case> cases() {
    std::string strings32 = R"({"anyOf":[)";
    for (int i = 0; i < 32; ++i)
        strings32 += (i ? "," : "") + std::string(R"({"type":"string","minLength":)") +
                     std::to_string(2000 * i) + R"(,"maxLength":)" +
                     std::to_string(2000 * i + 1000) + "}";
    strings32 += "]}";
    return {
        {"format hostname", R"({"type":"string","format":"hostname"})"},
        {"format email", R"({"type":"string","format":"email"})"},
        {"format date-time", R"({"type":"string","format":"date-time"})"},
        {"records (object, array, string, integer)",
         R"({"type":"object","properties":{"items":{"type":"array","items":{"type":"object",
         "properties":{"name":{"type":"string","maxLength":24},"n":{"type":"integer",
         "minimum":0,"maximum":1000},"ok":{"type":"boolean"}},"required":["name","n"],
         "additionalProperties":false}}},"required":["items"],"additionalProperties":false})"},
        {"anyOf of 32 gapped strings (32 configurations)", strings32},
    };
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"cold token-mask cost per schema"};
    std::string which = "llama3";
    std::string model_path = std::string(BITNET_BENCH_MODELS_DIR) + "/bitnet-fortunes-5m-i2_s.gguf";
    int states = 40;
    int repeat = 3;
    std::uint64_t seed = 1;
    app.add_option("--tokenizer", which, "llama3 (tests/data) or default (the shipped model's)");
    app.add_option("--states", states, "states of the walk to time per schema");
    app.add_option("--repeat", repeat, "cold computations per state");
    app.add_option("--seed", seed, "the walk's seed");
    CLI11_PARSE(app, argc, argv);

    std::unique_ptr<model::engine> eng;
    const model::tokenizer* tok = nullptr;
    if (which == "llama3") {
        tok = &bench::llama3_tokenizer();
    } else {
        model::engine_options opt;
        opt.model_path = model_path;
        opt.n_threads = 1;
        auto e = model::engine::load(opt);
        if (!e) {
            std::fprintf(stderr, "%s\n", e.error().to_string().c_str());
            return 1;
        }
        eng = std::move(*e);
        tok = &eng->vocab();
    }
    std::printf("# bench_masks: %s tokenizer (%d tokens), %d states per schema, %d cold masks "
                "each, seed %llu\n",
                which.c_str(), tok->n_vocab(), states, repeat,
                static_cast<unsigned long long>(seed));
    std::printf("| schema | states | median ms per mask | total ms |\n|---|---|---|---|\n");
    using clock = std::chrono::steady_clock;
    for (const auto& sc : cases()) {
        auto c = mc::schema_cache::shared().get(sc.text, *tok);
        if (!c) {
            std::fprintf(stderr, "%s: %s\n", sc.name, c.error().message.c_str());
            return 1;
        }
        mc::token_constraint tc(*c);
        std::mt19937_64 rng(seed);
        std::vector<double> ms;
        double total = 0.0;
        for (int s = 0; s < states; ++s) {
            for (int r = 0; r < repeat; ++r) {
                const auto t0 = clock::now();
                auto m = (*c)->mask_within_budget(tc.state(), nullptr);
                const double took =
                    std::chrono::duration<double, std::milli>(clock::now() - t0).count();
                if (!m) {
                    std::fprintf(stderr, "%s: %s\n", sc.name, m.error().message.c_str());
                    return 1;
                }
                ms.push_back(took);
                total += took;
            }
            // The next state: a random allowed token that is not an end of generation (the
            // walk goes on inside the value as long as it can).
            auto mask = tc.allowed();
            if (!mask)
                break;
            std::vector<std::int32_t> ids;
            for (std::int32_t id = 0; id < tok->n_vocab(); ++id)
                if (mc::mask_has(**mask, id) && !tok->is_eog(id))
                    ids.push_back(id);
            if (ids.empty() || !tc.accept(ids[rng() % ids.size()]))
                break;
        }
        std::printf("| %s | %zu | %.3f | %.1f |\n", sc.name,
                    ms.size() / static_cast<std::size_t>(repeat), median(ms), total);
    }
    return 0;
}
