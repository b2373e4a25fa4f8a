// The cost of structured output: aggregate decode tok/s of N concurrent streams on one engine,
// constrained by a JSON Schema (the executor's path: cached mask, masked logits row, sampler,
// matcher advance) against the same streams unconstrained, in interleaved runs (a, b, a, b...)
// with medians and their ratio. A stream that ends (EOG, or --max-tokens) starts again at once
// with its prompt, in both arms, so every step decodes N rows. Sampling at temperature 1.
#include "model/constrain/token_constraint.hpp"
#include "model/engine/engine.hpp"
#include "model/sampling/sampler.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <optional>
#include <vector>

using namespace bitnet;

namespace {

const char* default_schema = R"({"type":"object","properties":{"items":{"type":"array",
"items":{"type":"object","properties":{"name":{"type":"string","maxLength":24},
"n":{"type":"integer","minimum":0,"maximum":1000},"ok":{"type":"boolean"}},
"required":["name","n"],"additionalProperties":false}}},"required":["items"],
"additionalProperties":false})";

struct stream {
    std::uint64_t seq = 0;
    std::vector<std::int32_t> next; ///< tokens to feed in the next step
    std::uint32_t pos = 0;
    std::uint32_t generated = 0;
    std::optional<model::sampler> smp;
    std::optional<model::constrain::token_constraint> con;
};

/// CPU seconds of the whole process (every engine thread): steadier than wall time on a shared
/// machine.
double cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct run_figures {
    double tok_per_s = 0;
    double tok_per_cpu_s = 0;
    std::uint64_t tokens = 0;
    std::uint64_t restarts = 0;
    double mask_us_per_token = 0;
};

run_figures run(model::engine& eng, const std::vector<std::int32_t>& prompt, int n_streams,
                int steps, std::uint32_t max_tokens,
                const std::shared_ptr<const model::constrain::compiled_constraint>& schema,
                std::uint64_t seed) {
    const auto n_vocab = eng.config().n_vocab;
    const auto& tok = eng.vocab();
    std::vector<stream> ss(static_cast<std::size_t>(n_streams));
    std::uint64_t next_seq = 1;
    auto restart = [&](stream& s) {
        if (s.seq)
            eng.release(s.seq);
        s.seq = next_seq++;
        s.next = prompt;
        s.pos = 0;
        s.generated = 0;
        model::sampling_params p;
        p.temperature = 1.0f;
        p.seed = seed + s.seq;
        s.smp.emplace(model::sampler::create(p).value());
        if (schema)
            s.con.emplace(schema);
    };
    for (auto& s : ss)
        restart(s);
    std::vector<float> masked;
    run_figures f;
    double mask_s = 0;
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpu_seconds();
    for (int step = 0; step < steps; ++step) {
        std::vector<model::seq_chunk> chunks;
        for (auto& s : ss)
            chunks.push_back({s.seq, s.next, s.pos, true});
        auto out = eng.step(chunks).value();
        for (std::size_t k = 0; k < ss.size(); ++k) {
            auto& s = ss[k];
            s.pos += static_cast<std::uint32_t>(s.next.size());
            std::span<const float> row = out.row(out.rows_for_chunk[k], n_vocab);
            const auto m0 = std::chrono::steady_clock::now();
            if (s.con) {
                if (!model::constrain::apply_mask(**s.con->allowed(), row, masked)) {
                    restart(s);
                    ++f.restarts;
                    continue;
                }
                row = masked;
            }
            const auto t = s.smp->sample(row).value().token;
            if (s.con)
                (void)s.con->accept(t);
            mask_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - m0).count();
            ++f.tokens;
            ++s.generated;
            if (tok.is_eog(t) || s.generated >= max_tokens) {
                restart(s);
                ++f.restarts;
            } else {
                s.next.assign(1, t);
            }
        }
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    f.tok_per_s = static_cast<double>(f.tokens) / secs;
    f.tok_per_cpu_s = static_cast<double>(f.tokens) / (cpu_seconds() - c0);
    f.mask_us_per_token = mask_s * 1e6 / static_cast<double>(f.tokens);
    for (auto& s : ss)
        eng.release(s.seq);
    return f;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app("bench_constrained: the cost of JSON Schema constrained decoding");
    std::string model_path = "models/bitnet-fortunes-5m-i2_s.gguf";
    std::string schema = default_schema;
    int threads = 2, streams = 32, steps = 200, pairs = 5;
    std::uint32_t max_tokens = 128;
    std::string arm = "both";
    app.add_option("-m,--model", model_path, "GGUF model");
    app.add_option("--threads", threads, "engine threads");
    app.add_option("--streams", streams, "concurrent streams (rows per decode step)");
    app.add_option("--steps", steps, "decode steps per run");
    app.add_option("--pairs", pairs, "interleaved (unconstrained, constrained) run pairs");
    app.add_option("--max-tokens", max_tokens, "a stream restarts after this many tokens");
    app.add_option("--schema", schema, "JSON Schema text (default: a list of records)");
    app.add_option("--arm", arm,
                   "both (interleaved pairs), free or constrained (one arm only: for callgrind, "
                   "whose instruction counts do not depend on the machine's load)")
        ->check(CLI::IsMember({"both", "free", "constrained"}));
    CLI11_PARSE(app, argc, argv);

    model::engine_options opt;
    opt.model_path = model_path;
    opt.n_threads = threads;
    opt.kv_budget_bytes = 512ull << 20;
    auto eng = model::engine::load(opt);
    if (!eng) {
        std::fprintf(stderr, "%s\n", eng.error().to_string().c_str());
        return 1;
    }
    const auto& tok = (*eng)->vocab();
    auto prompt = tok.encode("A list of records:", {.add_bos = tok.add_bos()}).value();
    auto compiled = model::constrain::schema_cache::shared().get(schema, tok);
    if (!compiled) {
        std::fprintf(stderr, "schema: %s\n", compiled.error().message.c_str());
        return 1;
    }
    // One warm-up run of each arm (page faults, the mask cache's first fills are part of the
    // constrained arm's cost and are measured again in every run: the cache persists, as in the
    // server, where it is per schema).
    if (arm != "both") {
        // One arm, no warm-up: run it with --steps 0 and --steps N under callgrind; the
        // difference is the instructions of N steps.
        const auto f =
            run(**eng, prompt, streams, steps, max_tokens, arm == "free" ? nullptr : *compiled, 0);
        std::printf("%s: %llu tokens, %llu restarts\n", arm.c_str(),
                    static_cast<unsigned long long>(f.tokens),
                    static_cast<unsigned long long>(f.restarts));
        return 0;
    }
    (void)run(**eng, prompt, streams, 20, max_tokens, nullptr, 99);
    (void)run(**eng, prompt, streams, 20, max_tokens, *compiled, 99);
    std::vector<double> free_tps, con_tps, mask_us, free_cpu, con_cpu;
    std::uint64_t masks_before = (*compiled)->masks_computed();
    for (int p = 0; p < pairs; ++p) {
        const auto a = run(**eng, prompt, streams, steps, max_tokens, nullptr, 1000 * p);
        const auto b = run(**eng, prompt, streams, steps, max_tokens, *compiled, 1000 * p);
        free_tps.push_back(a.tok_per_s);
        con_tps.push_back(b.tok_per_s);
        mask_us.push_back(b.mask_us_per_token);
        free_cpu.push_back(a.tok_per_cpu_s);
        con_cpu.push_back(b.tok_per_cpu_s);
        std::printf("pair %d: unconstrained %.1f tok/s %.1f tok/cpu-s (%llu restarts), constrained "
                    "%.1f tok/s %.1f tok/cpu-s (%llu restarts, mask+sample %.2f us/token)\n",
                    p, a.tok_per_s, a.tok_per_cpu_s, static_cast<unsigned long long>(a.restarts),
                    b.tok_per_s, b.tok_per_cpu_s, static_cast<unsigned long long>(b.restarts),
                    b.mask_us_per_token);
    }
    const double mf = median(free_tps), mc = median(con_tps);
    const double cf = median(free_cpu), cc = median(con_cpu);
    std::printf("median per CPU second: unconstrained %.1f, constrained %.1f tok/cpu-s, ratio "
                "%.3f (cost %.1f %%)\n",
                cf, cc, cc / cf, (1.0 - cc / cf) * 100.0);
    std::printf(
        "median unconstrained %.1f tok/s, constrained %.1f tok/s, ratio %.3f (cost %.1f %%), "
        "mask+sample %.2f us/token, masks computed in the measured runs %llu\n",
        mf, mc, mc / mf, (1.0 - mc / mf) * 100.0, median(mask_us),
        static_cast<unsigned long long>((*compiled)->masks_computed() - masks_before));
    return 0;
}
