// End-to-end engine figures for bench/RESULTS.md (issue: CPU inference engine, Performance):
//   - single-stream decode tokens/s, with this run's measured read bandwidth and the fraction of
//     the roofline (weight + logits bytes read per token ÷ bandwidth);
//   - aggregate decode tokens/s with N sequences decoding together in one step;
//   - prefill tokens/s for one long prompt;
//   - peak RSS;
//   - with --workload NxPxT, the server's workload driven directly (N sequences, P-token prompts,
//     T greedy tokens each through model::sampler, prefill chunked within max_batch_tokens after
//     the decodes, as the batcher plans): the baseline of the server's overhead figure
//     (bench/loadgen.mjs runs the same through HTTP).
//   - this machine's ceilings measured in the same run (read bandwidth, int8 MAC peak of the best
//     instruction, fp32 FMA peak: ceilings.hpp) and every figure as a fraction of its ceiling;
//   - with --json FILE, all of it as one JSON object (described in bench/README.md);
//   - with --device cuda:N (or sim:N), the CUDA engine's decode, batched decode and prefill
//     figures instead (model::load_engine_on), its bytes per decode token over the device's
//     theoretical bandwidth, and no CPU ceilings; one skip line when the device cannot load.
// Each figure is the median of --repeats runs. Usage:
//   bench_engine -m MODEL [--threads 2] [--decode 32] [--batch 8,32,64] [--prefill 512]
//                [--kv-tokens 4096] [--repeats 5] [--workload 64x16x100 [--workload-only]]
//                [--json FILE] [--device cpu|cuda:N|sim:N]
#include "bench_timing.hpp"
#include "ceilings.hpp"
#include "engine_figures.hpp"
#include "kernels/cpu_features.hpp"
#include "kernels/cuda/ops.hpp"
#include "kernels/parallel.hpp"
#include "model/engine/cuda/cuda_engine.hpp"
#include "model/engine/engine.hpp"
#include "model/engine/model_config.hpp"
#include "model/engine/placement/engine_placement.hpp"
#include "model/gguf/gguf_reader.hpp"
#include "model/sampling/sampler.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <sys/resource.h>

namespace {

using namespace bitnet;
using bench::clock_type;
using bench::median;
using bench::seconds_since;

/// Streaming read bandwidth (GB/s) over a buffer larger than any cache, n_threads readers.
double read_bandwidth(int n_threads) {
    const std::size_t n = (1ull << 30) / sizeof(std::uint64_t);
    std::vector<std::uint64_t> buf(n, 1);
    std::vector<double> runs;
    for (int r = 0; r < 5; ++r) {
        std::atomic<std::uint64_t> total{0};
        const auto t0 = clock_type::now();
        kernels::parallel_ranges(n, 4096, n_threads, [&](std::size_t b, std::size_t e) {
            std::uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            for (std::size_t i = b; i + 4 <= e; i += 4) {
                s0 += buf[i];
                s1 += buf[i + 1];
                s2 += buf[i + 2];
                s3 += buf[i + 3];
            }
            total.fetch_add(s0 + s1 + s2 + s3, std::memory_order_relaxed);
        });
        runs.push_back(static_cast<double>(n * sizeof(std::uint64_t)) / seconds_since(t0) / 1e9);
        if (total != n)
            std::fprintf(stderr, "bandwidth check sum wrong\n");
    }
    return median(runs);
}

std::vector<std::int32_t> random_tokens(std::size_t n, std::uint32_t n_vocab, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<std::int32_t> t(n);
    for (auto& v : t)
        v = static_cast<std::int32_t>(rng() % n_vocab);
    return t;
}

/// N sequences with a short prompt each, then `steps` decode steps of all N together.
/// Returns decode tokens/s (all sequences).
/// With `greedy_only` the decode chunks ask for their greedy token alone (the screen's rows, when
/// the engine keeps one: --greedy-screen). An engine that samples on its device (the CUDA
/// engine) draws the greedy tokens there, as the server has it do: only token ids come back.
double decode_tokens_per_s(model::engine& e, std::size_t n_seq, std::size_t steps,
                           bool greedy_only = false) {
    const bool on_device = e.samples_on_device() && !greedy_only;
    std::vector<model::device_sample> samples(on_device ? n_seq : 0);
    for (std::size_t s = 0; s < samples.size(); ++s) {
        samples[s].chunk = s;
        samples[s].params.temperature = 0.0f;
    }
    const std::uint32_t n_vocab = e.config().n_vocab;
    std::vector<model::seq_chunk> batch;
    for (std::size_t s = 0; s < n_seq; ++s)
        batch.push_back({s + 1, random_tokens(8, n_vocab, s), 0, true});
    // Prefill in steps that fit the token budget.
    for (std::size_t s = 0; s < n_seq; s += 32) {
        std::span<const model::seq_chunk> part(batch.data() + s,
                                               std::min<std::size_t>(32, n_seq - s));
        if (!e.step(part)) {
            std::fprintf(stderr, "prefill failed\n");
            std::exit(1);
        }
    }
    std::vector<std::int32_t> next(n_seq, 1);
    for (auto& c : batch) {
        c.pos0 = 8;
        c.tokens = {1};
        c.greedy_only = greedy_only;
    }
    const auto t0 = clock_type::now();
    for (std::size_t i = 0; i < steps; ++i) {
        auto out = on_device ? e.step_sampled(batch, samples) : e.step(batch);
        if (!out) {
            std::fprintf(stderr, "decode failed: %s\n", out.error().to_string().c_str());
            std::exit(1);
        }
        for (std::size_t s = 0; s < n_seq; ++s) {
            if (on_device) {
                batch[s].tokens = {out->sampled[s].token};
            } else {
                const auto row = out->row(s, n_vocab);
                batch[s].tokens = {static_cast<std::int32_t>(
                    std::max_element(row.begin(), row.end()) - row.begin())};
            }
            batch[s].pos0 += 1;
        }
    }
    const double dt = seconds_since(t0);
    for (const auto& c : batch)
        e.release(c.seq);
    return static_cast<double>(n_seq * steps) / dt;
}

/// The CUDA engine's launches per decode step (the fused plan; on a device one graph replays it)
/// at 1 and `most` sequences, and the memory it holds on each side. Nothing for other engines.
void print_cuda_launches(model::engine& e, std::size_t most) {
    const auto* ce = dynamic_cast<const model::cuda_engine*>(&e);
    if (ce == nullptr)
        return;
    for (std::size_t n : {std::size_t{1}, most}) {
        decode_tokens_per_s(e, n, 2);
        const auto& st = ce->last_step();
        std::printf("launches per decode step, %zu sequence(s): %llu kernels in %llu graph "
                    "launch(es) (%s, %u rows)\n",
                    n, static_cast<unsigned long long>(st.kernels),
                    static_cast<unsigned long long>(st.graphs),
                    st.replayed ? "a recorded plan replayed" : "launched one by one", st.rows);
    }
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    std::printf("device memory allocated at load: %.1f MiB; host: embedding %.1f MiB, peak RSS "
                "%.1f MiB\n",
                static_cast<double>(ce->device_bytes()) / 1048576.0,
                static_cast<double>(ce->host_bytes()) / 1048576.0,
                static_cast<double>(ru.ru_maxrss) / 1024.0);
}

double prefill_tokens_per_s(model::engine& e, std::size_t n_tokens) {
    model::seq_chunk c{999, random_tokens(n_tokens, e.config().n_vocab, 7), 0, true};
    const auto t0 = clock_type::now();
    if (!e.step(std::span<const model::seq_chunk>(&c, 1))) {
        std::fprintf(stderr, "prefill failed\n");
        std::exit(1);
    }
    const double dt = seconds_since(t0);
    e.release(999);
    return static_cast<double>(n_tokens) / dt;
}

/// The server's workload without the server: `n_seq` sequences of `prompt`-token prompts, `gen`
/// greedy tokens each (model::sampler, as the executor samples), all admitted at once; every step
/// takes one decode token per running sequence first, then prefill chunks up to `budget` tokens.
/// Process CPU seconds (user + system, all threads).
double cpu_seconds() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/// Returns {generated tokens / wall seconds, wall seconds, CPU milliseconds per token}.
std::tuple<double, double, double> workload(model::engine& e, std::size_t n_seq, std::size_t prompt,
                                            std::size_t gen, std::uint32_t budget) {
    struct seq {
        std::vector<std::int32_t> tokens; ///< prompt + generated
        std::uint32_t cached = 0;
        std::size_t generated = 0;
        bool done = false;
    };
    model::sampling_params greedy;
    greedy.temperature = 0.0f;
    auto smp = model::sampler::create(greedy).value();
    const std::uint32_t n_vocab = e.config().n_vocab;
    std::vector<seq> seqs(n_seq);
    for (std::size_t s = 0; s < n_seq; ++s)
        seqs[s].tokens = random_tokens(prompt, n_vocab, 1000 + s);
    std::size_t left = n_seq, total = 0;
    const double cpu0 = cpu_seconds();
    const auto t0 = clock_type::now();
    while (left > 0) {
        std::vector<model::seq_chunk> batch;
        std::vector<std::size_t> owner;
        std::uint32_t room = budget;
        for (int pass = 0; pass < 2; ++pass)
            for (std::size_t s = 0; s < n_seq && room > 0; ++s) {
                auto& q = seqs[s];
                const auto pending = static_cast<std::uint32_t>(q.tokens.size()) - q.cached;
                if (q.done || pending == 0 || (pass == 0) != (pending == 1 && q.cached > 0))
                    continue;
                const auto n = std::min(pending, room);
                batch.push_back({s + 1,
                                 std::vector<std::int32_t>(q.tokens.begin() + q.cached,
                                                           q.tokens.begin() + q.cached + n),
                                 q.cached, n == pending});
                owner.push_back(s);
                room -= n;
            }
        auto out = e.step(batch);
        if (!out) {
            std::fprintf(stderr, "workload step failed: %s\n", out.error().to_string().c_str());
            std::exit(1);
        }
        for (std::size_t i = 0; i < batch.size(); ++i) {
            auto& q = seqs[owner[i]];
            q.cached += static_cast<std::uint32_t>(batch[i].tokens.size());
            if (!batch[i].want_logits)
                continue;
            auto t = smp.sample(out->row(out->rows_for_chunk[i], n_vocab), q.tokens).value();
            q.tokens.push_back(t.token);
            ++total;
            if (++q.generated == gen) {
                q.done = true;
                --left;
                e.release(owner[i] + 1);
            }
        }
    }
    const double wall = seconds_since(t0);
    const double cpu_ms = (cpu_seconds() - cpu0) * 1e3 / static_cast<double>(total);
    return {static_cast<double>(total) / wall, wall, cpu_ms};
}

} // namespace

namespace {

/// The command line of bench_engine.
struct bench_args {
    std::string model_path;
    int threads = 2;
    std::size_t decode_steps = 32;
    std::vector<std::size_t> batches{8, 32, 64};
    std::size_t prefill = 512;
    std::uint32_t kv_tokens = 4096;
    int repeats = 5;
    bool q8_logits = false;
    bool greedy_screen = false;
    std::string workload_spec;
    bool workload_only = false;
    std::string json_path;
    std::string device = "cpu";
};

void add_options(CLI::App& app, bench_args& a) {
    app.add_option("-m,--model", a.model_path)->required();
    app.add_option("--threads", a.threads);
    app.add_option("--decode", a.decode_steps, "decode steps per measurement");
    app.add_option("--batch", a.batches, "sequence counts for aggregate decode")->delimiter(',');
    app.add_option("--prefill", a.prefill, "prompt length for the prefill figure");
    app.add_option("--kv-tokens", a.kv_tokens, "KV budget in tokens (all sequences)");
    app.add_option("--repeats", a.repeats);
    app.add_flag("--q8-logits", a.q8_logits, "the opt-in Q8_0 block logits");
    app.add_flag("--greedy-screen", a.greedy_screen,
                 "keep the exact greedy screen and also time single-stream decode with greedy-only "
                 "chunks, alternating with plain ones");
    app.add_option("--workload", a.workload_spec, "NxPxT: N sequences, P-token prompts, T tokens");
    app.add_flag("--workload-only", a.workload_only, "only the --workload figure");
    app.add_option("--json", a.json_path,
                   "write every figure, ceiling and fraction to FILE as JSON");
    app.add_option("--device", a.device, "cpu, cuda:N or sim:N (the CUDA engine)");
}

/// The model's shape from its header: the KV budget in bytes and the MACs a token costs.
bool read_shape(const bench_args& a, model::engine_options& opt, figures& fig) {
    // KV bytes per token: K and V, every layer, F16.
    auto file = model::gguf_file::open(a.model_path);
    auto c = file ? model::read_model_config(*file) : result<model::model_config>(file.error());
    if (!c) {
        std::fprintf(stderr, "%s\n", c.error().to_string().c_str());
        return false;
    }
    opt.kv_budget_bytes = std::uint64_t{a.kv_tokens} * 2 * c->n_layer * c->n_embd_kv() * 2;
    const double embd = static_cast<double>(c->n_vocab) * c->n_embd;
    fig.logits_macs_per_token = embd;
    fig.ternary_macs_per_token = static_cast<double>(model::parameter_count(*c)) - embd;
    return true;
}

/// --workload NxPxT: whole generations through model::step and the sampler. An exit code when
/// the spec is malformed, else nothing.
std::optional<int> run_workload(model::engine& e, const bench_args& a,
                                std::uint32_t max_batch_tokens) {
    std::size_t n = 0, p = 0, t = 0;
    if (std::sscanf(a.workload_spec.c_str(), "%zux%zux%zu", &n, &p, &t) != 3 || n == 0 || p == 0 ||
        t == 0) {
        std::fprintf(stderr, "--workload wants NxPxT, e.g. 64x16x100\n");
        return 2;
    }
    workload(e, 1, p, 4, max_batch_tokens); // warm-up: page in the weights
    std::vector<double> tps, walls, cpus;
    for (int r = 0; r < a.repeats; ++r) {
        auto [x, w, c] = workload(e, n, p, t, max_batch_tokens);
        tps.push_back(x);
        walls.push_back(w);
        cpus.push_back(c);
        std::printf("workload %zux%zux%zu run %d: %.2f tokens/s, wall %.3f s, %.3f CPU ms per "
                    "token\n",
                    n, p, t, r, x, w, c);
    }
    std::printf("workload %zux%zux%zu direct (model::step + sampler): median %.2f tokens/s "
                "(min %.2f, max %.2f), median wall %.3f s, median %.3f CPU ms per token\n",
                n, p, t, median(tps), *std::min_element(tps.begin(), tps.end()),
                *std::max_element(tps.begin(), tps.end()), median(walls), median(cpus));
    return std::nullopt;
}

/// The same engine, plain and greedy-only decode alternating (order swapped each round).
void compare_greedy_screen(model::engine& e, const bench_args& a) {
    std::vector<double> plain, screened, ratio;
    for (int r = 0; r < a.repeats; ++r) {
        double x = 0, y = 0;
        if (r % 2 == 0) {
            x = decode_tokens_per_s(e, 1, a.decode_steps);
            y = decode_tokens_per_s(e, 1, a.decode_steps, true);
        } else {
            y = decode_tokens_per_s(e, 1, a.decode_steps, true);
            x = decode_tokens_per_s(e, 1, a.decode_steps);
        }
        plain.push_back(x);
        screened.push_back(y);
        ratio.push_back(y / x);
    }
    std::printf("single-stream decode, greedy-only chunks (screen): %.2f tokens/s against %.2f "
                "plain in the same rounds, ratio median %.3f (min %.3f, max %.3f)\n",
                median(screened), median(plain), median(ratio),
                *std::min_element(ratio.begin(), ratio.end()),
                *std::max_element(ratio.begin(), ratio.end()));
}

/// Single-stream decode, aggregate decode at each --batch, and prefill, into `fig`.
void measure_speeds(model::engine& e, const bench_args& a, figures& fig) {
    std::vector<double> single;
    decode_tokens_per_s(e, 1, 4); // warm-up: page in the weights
    for (int r = 0; r < a.repeats; ++r)
        single.push_back(decode_tokens_per_s(e, 1, a.decode_steps));
    const double tps1 = median(single);
    fig.single_tps = tps1;
    std::printf("single-stream decode: %.2f tokens/s (min %.2f, max %.2f)\n", tps1,
                *std::min_element(single.begin(), single.end()),
                *std::max_element(single.begin(), single.end()));
    if (a.greedy_screen)
        compare_greedy_screen(e, a);
    for (std::size_t n : a.batches) {
        std::vector<double> agg;
        for (int r = 0; r < std::max(1, a.repeats / 2); ++r)
            agg.push_back(decode_tokens_per_s(e, n, std::max<std::size_t>(8, a.decode_steps / 2)));
        std::printf("aggregate decode, %zu sequences: %.2f tokens/s (%.2fx single-stream)\n", n,
                    median(agg), median(agg) / tps1);
        fig.aggregate.emplace_back(n, median(agg));
    }
    if (a.prefill > 0) {
        std::vector<double> pf;
        for (int r = 0; r < std::max(1, a.repeats / 2); ++r)
            pf.push_back(prefill_tokens_per_s(e, a.prefill));
        std::printf("prefill, %zu-token prompt: %.2f tokens/s\n", a.prefill, median(pf));
        fig.prefill_tokens = a.prefill;
        fig.prefill_tps = median(pf);
    }
}

/// A device's figures: the bytes a decode token reads against the device's own bandwidth (the
/// CPU's ceilings say nothing of a device).
void report_device_roofline(const model::engine& e, const model::placement& where, double tps1) {
    const double bytes = static_cast<double>(e.bytes_per_decode_token());
    const auto report = kernels::cuda::enumerate_devices();
    double gbs = 0.0;
    for (const auto& d : report.devices)
        if (where.kind == "cuda" && d.index == where.index)
            gbs = d.bandwidth_gbs;
    std::printf("bytes read per decode token: %.1f MB", bytes / 1e6);
    if (gbs > 0)
        std::printf("; device bandwidth %.0f GB/s (theoretical), roofline %.1f tokens/s, "
                    "single-stream fraction %.2f",
                    gbs, gbs * 1e9 / bytes, tps1 * bytes / (gbs * 1e9));
    std::printf("\n");
}

/// The CPU's figures: peak RSS, the read bandwidth and the int8/FMA peaks, and each speed as a
/// fraction of the ceiling they make.
void report_cpu_ceilings(const model::engine& e, const bench_args& a, figures& fig) {
    const double bytes_per_token = static_cast<double>(e.bytes_per_decode_token());
    // Peak RSS before the bandwidth probe allocates its own gigabyte.
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    std::printf("peak RSS: %.1f MiB (KV budget %u tokens)\n",
                static_cast<double>(ru.ru_maxrss) / 1024.0, a.kv_tokens);
    fig.peak_rss_mib = static_cast<double>(ru.ru_maxrss) / 1024.0;
    const double bw = read_bandwidth(a.threads);
    fig.bandwidth_gbs = bw;
    fig.bytes_per_token = bytes_per_token;
    std::printf("read bandwidth (%d threads, streaming 1 GiB): %.2f GB/s\n", a.threads, bw);
    std::printf("bytes read per decode token: %.1f MB; roofline %.2f tokens/s; single-stream "
                "fraction of roofline %.2f\n",
                bytes_per_token / 1e6, bw * 1e9 / bytes_per_token,
                fig.single_tps * bytes_per_token / (bw * 1e9));
    fig.int8 = bench::int8_mac_peak(a.threads);
    fig.fp32 = bench::fp32_fma_peak(a.threads);
    const auto c = ceilings_of(fig);
    std::printf("int8 MAC peak (%s, %d threads): %.1f GMAC/s; ternary MACs per token %.3g: "
                "prefill ceiling %.1f tokens/s\n",
                fig.int8.instruction.c_str(), a.threads, fig.int8.per_s / 1e9,
                fig.ternary_macs_per_token, c.prefill_int8);
    std::printf("fp32 FMA peak (%s, %d threads): %.1f GFLOP/s; aggregate-decode ceiling (ternary "
                "at the int8 peak + logits at the %s peak) %.1f tokens/s\n",
                fig.fp32.instruction.c_str(), a.threads, fig.fp32.per_s / 1e9,
                a.q8_logits ? "int8" : "FMA", c.aggregate);
    if (fig.prefill_tps > 0)
        std::printf("prefill fraction of the int8 ceiling: %.2f\n",
                    fig.prefill_tps / c.prefill_int8);
    for (const auto& [n, tps] : fig.aggregate)
        std::printf("aggregate decode, %zu sequences: fraction of its ceiling %.2f\n", n,
                    tps / c.aggregate);
}

/// Without the device there is nothing to measure: one line, and success.
bool cuda_device_missing(const model::placement& where) {
    if (where.kind != "cuda")
        return false;
    const auto report = kernels::cuda::enumerate_devices();
    if (std::any_of(report.devices.begin(), report.devices.end(),
                    [&](const auto& d) { return d.index == where.index; }))
        return false;
    std::printf("skipped: no CUDA device %s (%s)\n", where.name().c_str(),
                report.error.empty() ? "not enumerated" : report.error.c_str());
    return true;
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"bench_engine: decode, batched decode and prefill speed of one model"};
    bench_args a;
    add_options(app, a);
    CLI11_PARSE(app, argc, argv);
    const auto where = model::parse_placement(a.device);
    if (!where) {
        std::fprintf(stderr, "%s\n", where.error().to_string().c_str());
        return 2;
    }
    figures fig;
    fig.model = a.model_path;
    fig.threads = a.threads;
    model::engine_options opt;
    opt.model_path = a.model_path;
    opt.n_threads = a.threads;
    opt.q8_logits = a.q8_logits;
    opt.greedy_screen = a.greedy_screen;
    fig.q8_logits = a.q8_logits;
    opt.max_batch_tokens = static_cast<std::uint32_t>(std::max<std::size_t>(a.prefill, 512));
    if (!read_shape(a, opt, fig))
        return 1;
    const auto t_load = clock_type::now();
    if (cuda_device_missing(*where))
        return 0;
    auto loaded = model::load_engine_on(opt, *where);
    if (!loaded) {
        std::fprintf(stderr, "%s\n", loaded.error().to_string().c_str());
        return 1;
    }
    model::engine& e = **loaded;
    fig.engine = e.describe();
    fig.kernels = e.kernel_choices();
    std::printf("model: %s\nengine: %s\nload: %.2f s\n", a.model_path.c_str(), e.describe().c_str(),
                seconds_since(t_load));
    if (!a.workload_spec.empty()) {
        if (const auto rc = run_workload(e, a, opt.max_batch_tokens))
            return *rc;
        if (a.workload_only)
            return 0;
    }
    measure_speeds(e, a, fig);
    print_cuda_launches(
        e, a.batches.empty() ? 1 : *std::max_element(a.batches.begin(), a.batches.end()));
    if (where->kind != "cpu") {
        report_device_roofline(e, *where, fig.single_tps);
        return 0;
    }
    report_cpu_ceilings(e, a, fig);
    if (!a.json_path.empty())
        write_json(a.json_path, fig);
    return 0;
}
