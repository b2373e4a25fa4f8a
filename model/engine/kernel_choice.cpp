#include "model/engine/kernel_choice.hpp"

#include "kernels/f16.hpp"
#include "kernels/f16_matmul.hpp"
#include "kernels/greedy_screen.hpp"
#include "kernels/q8_matmul.hpp"
#include "kernels/ternary_matmul.hpp"
#include "model/engine/model_config.hpp"
#include "model/engine/model_weights.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <optional>
#include <random>

namespace bitnet::model {
namespace {

using kernels::isa;

constexpr std::array<isa, 2> simd_families{isa::avx2, isa::avx512_vnni};

// Token counts the ops are timed at: a typical batched-decode step (the default max_batch_seqs)
// and a prompt chunk large enough to be compute-bound, both capped by the engine's step size.
constexpr std::uint32_t batched_tokens = 32;
constexpr std::uint32_t prefill_tokens = 128;
constexpr std::uint32_t logits_batched_rows = 8;
// The logits are timed on their first rows only: enough to leave the caches (16 MB of F16 at
// n_embd 2048), a few milliseconds whatever the vocabulary.
constexpr std::size_t logits_rows_timed = 4096;

double seconds_of(const std::function<void()>& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<float> random_rows(std::size_t n, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v)
        x = d(rng);
    return v;
}

struct ternary_probe {
    const model_weights& w;
    int n_threads;
    kernels::quantized_acts acts;
    std::vector<float> y;

    // The op's matrices of layer 0: q (square, n_embd) and gate (the widest) for one token; gate
    // alone for the batched shapes, where it dominates.
    double run(kernel_op op, std::uint32_t tokens, isa family) {
        const layer_weights& L = w.layers.front();
        std::vector<const kernels::packed_ternary*> mats{&L.w_gate.w};
        if (op == kernel_op::ternary_gemv)
            mats.insert(mats.begin(), &L.wq.w);
        return seconds_of([&] {
            for (const kernels::packed_ternary* m : mats) {
                acts_for(tokens, m->cols);
                y.resize(std::size_t{tokens} * m->rows);
                kernels::ternary_matmul(*m, acts, y.data(), m->rows, n_threads, family);
            }
        });
    }

    void acts_for(std::uint32_t tokens, std::uint32_t k) {
        if (acts.n_rows == tokens && acts.k == k)
            return;
        const auto x = random_rows(std::size_t{tokens} * k, 7);
        kernels::quantize_activations(x.data(), tokens, k, k, acts);
    }
};

struct logits_probe {
    const model_weights& w;
    std::size_t n_embd;
    std::size_t rows;
    int n_threads;
    std::vector<float> x;
    std::vector<float> y;
    kernels::q8_0_acts q8;

    // The product the engine runs: F16, or Q8_0 with the activations' quantization included
    // (the engine quantizes them in every logits step).
    double run(std::uint32_t n_rows, isa family) {
        if (x.size() != n_rows * n_embd)
            x = random_rows(n_rows * n_embd, 11);
        y.resize(n_rows * rows);
        return seconds_of([&] {
            if (w.logits_q8) {
                kernels::q8_0_matmul(first_rows(*w.logits_q8), quantized(n_rows), y.data(), rows,
                                     n_threads, family);
                return;
            }
            kernels::f16_matmul(w.logits_f16, rows, n_embd, x.data(), n_rows, n_embd, y.data(),
                                rows, n_threads, family);
        });
    }

    const kernels::q8_0_acts& quantized(std::uint32_t n_rows) {
        kernels::quantize_q8_0(x.data(), n_rows, n_embd, n_embd, q8);
        return q8;
    }

    // The matrix with only its first `rows` rows: a view sharing the stored bytes would need the
    // kernel to take row bounds, so the probe times whole matrices of `rows` rows instead.
    const kernels::packed_q8_0& first_rows(const kernels::packed_q8_0& m) {
        if (!head || head->rows != rows) {
            head = kernels::packed_q8_0{};
            head->rows = static_cast<std::uint32_t>(rows);
            head->cols = m.cols;
            head->family = m.family;
            head->values = kernels::aligned_buffer(rows * m.cols);
            std::memcpy(head->values.data(), m.values.data(), rows * m.cols);
            head->scales = kernels::aligned_buffer(rows * (m.cols / kernels::q8_0_block) * 2);
            std::memcpy(head->scales.data(), m.scales.data(), head->scales.size());
        }
        return *head;
    }
    std::optional<kernels::packed_q8_0> head;
};

} // namespace

std::string_view kernel_op_name(kernel_op op) noexcept {
    switch (op) {
    case kernel_op::ternary_gemv:
        return "ternary_gemv";
    case kernel_op::ternary_batched:
        return "ternary_batched";
    case kernel_op::ternary_prefill:
        return "ternary_prefill";
    case kernel_op::logits_gemv:
        return "logits_gemv";
    case kernel_op::logits_batched:
        return "logits_batched";
    }
    return "unknown";
}

timed_choice pick_fastest(kernel_op op, std::span<const isa> candidates, std::uint32_t tokens,
                          const timed_run& run, int repeats) {
    timed_choice out;
    kernel_choice& c = out.report;
    c.op = std::string(kernel_op_name(op));
    if (candidates.empty())
        return out;
    out.family = candidates.front();
    c.family = std::string(kernels::isa_name(out.family));
    if (candidates.size() == 1) {
        c.source = "only family";
        return out;
    }
    std::vector<double> best(candidates.size(), std::numeric_limits<double>::infinity());
    for (isa f : candidates)
        (void)run(f); // warm-up: first touch of buffers, thread pool start
    for (int r = 0; r < std::max(repeats, 1); ++r)
        for (std::size_t i = 0; i < candidates.size(); ++i)
            best[i] = std::min(best[i], run(candidates[i]));
    const auto win =
        static_cast<std::size_t>(std::min_element(best.begin(), best.end()) - best.begin());
    out.family = candidates[win];
    c.family = std::string(kernels::isa_name(out.family));
    c.source = "measured";
    c.tokens = tokens;
    for (std::size_t i = 0; i < candidates.size(); ++i)
        c.timings.push_back({std::string(kernels::isa_name(candidates[i])), best[i] * 1e6});
    return out;
}

kernel_plan kernel_plan::uniform(isa family, std::string_view source) {
    kernel_plan p;
    for (std::size_t i = 0; i < n_kernel_ops; ++i) {
        kernel_choice c;
        c.op = std::string(kernel_op_name(static_cast<kernel_op>(i)));
        c.family = std::string(kernels::isa_name(family));
        c.source = std::string(source);
        p.set(static_cast<kernel_op>(i), family, std::move(c));
    }
    return p;
}

void kernel_plan::set(kernel_op op, isa family, kernel_choice why) {
    family_[static_cast<std::size_t>(op)] = family;
    auto it = std::find_if(report_.begin(), report_.end(),
                           [&](const kernel_choice& c) { return c.op == why.op; });
    if (it != report_.end())
        *it = std::move(why);
    else
        report_.push_back(std::move(why));
}

isa kernel_plan::ternary_for(std::size_t n_tokens) const noexcept {
    if (n_tokens <= 1)
        return family(kernel_op::ternary_gemv);
    return family(n_tokens < prefill_from_tokens ? kernel_op::ternary_batched
                                                 : kernel_op::ternary_prefill);
}

isa kernel_plan::logits_for(std::size_t n_rows) const noexcept {
    return family(n_rows <= 1 ? kernel_op::logits_gemv : kernel_op::logits_batched);
}

std::string kernel_plan::summary() const {
    std::string s;
    for (const kernel_choice& c : report_) {
        if (!s.empty())
            s += ", ";
        s += c.op + " " + c.family + " (" + c.source + ")";
    }
    return s;
}

kernel_plan choose_kernels(const model_weights& w, const model_config& c, int n_threads,
                           std::uint32_t max_batch_tokens) {
    const isa packed = w.layers.empty() ? kernels::best_isa() : w.layers.front().wq.w.family;
    if (kernels::isa_pinned())
        return kernel_plan::uniform(packed, "pinned by BITNET_ISA");
    if (w.layers.empty())
        return kernel_plan::uniform(packed, "only family");

    std::vector<isa> ternary_candidates;
    for (isa f : simd_families)
        if (kernels::ternary_runs_on(w.layers.front().wq.w, f))
            ternary_candidates.push_back(f);
    if (ternary_candidates.empty())
        ternary_candidates.push_back(packed);
    kernel_plan plan;
    ternary_probe tp{w, n_threads, {}, {}};
    const auto cap = [&](std::uint32_t n) { return std::max(1u, std::min(n, max_batch_tokens)); };
    const std::array<std::pair<kernel_op, std::uint32_t>, 3> ternary_ops{
        {{kernel_op::ternary_gemv, 1u},
         {kernel_op::ternary_batched, cap(batched_tokens)},
         {kernel_op::ternary_prefill, cap(prefill_tokens)}}};
    for (const auto& [op, tokens] : ternary_ops) {
        auto choice = pick_fastest(op, ternary_candidates, tokens,
                                   [&](isa f) { return tp.run(op, tokens, f); });
        plan.set(op, choice.family, std::move(choice.report));
    }

    // The logits: every family of the F16 product, and of the Q8_0 one, reads the same layout.
    std::vector<isa> logits_candidates;
    if (w.logits_f16 != nullptr || w.logits_q8) {
        for (isa f : simd_families)
            if (kernels::isa_supported(f))
                logits_candidates.push_back(f);
    }
    if (logits_candidates.empty())
        logits_candidates.push_back(packed);
    logits_probe lp{w,         c.n_embd,    std::min<std::size_t>(c.n_vocab, logits_rows_timed),
                    n_threads, {},          {},
                    {},        std::nullopt};
    const std::array<std::pair<kernel_op, std::uint32_t>, 2> logits_ops{
        {{kernel_op::logits_gemv, 1u}, {kernel_op::logits_batched, logits_batched_rows}}};
    for (const auto& [op, rows] : logits_ops) {
        auto choice =
            pick_fastest(op, logits_candidates, rows, [&](isa f) { return lp.run(rows, f); });
        plan.set(op, choice.family, std::move(choice.report));
    }
    return plan;
}

screen_rows_choice choose_screen_rows(const model_weights& w, const model_config& c, int n_threads,
                                      const kernel_plan& plan) {
    screen_rows_choice out;
    if (!w.logits_screen || w.logits_f16 == nullptr)
        return out;
    const std::size_t n_embd = c.n_embd;
    const std::size_t n_vocab = c.n_vocab;
    for (std::uint32_t rows = 1; rows <= 16; rows *= 2) {
        const auto x = random_rows(rows * n_embd, 13 + rows);
        std::vector<float> y(rows * n_vocab);
        std::vector<kernels::screened_token> tokens(rows);
        const isa family = plan.logits_for(rows);
        const auto full = [&] {
            kernels::f16_matmul(w.logits_f16, n_vocab, n_embd, x.data(), rows, n_embd, y.data(),
                                n_vocab, n_threads, family);
        };
        const auto screened = [&] {
            kernels::screened_argmax(*w.logits_screen, w.logits_f16, x.data(), rows, n_embd,
                                     tokens.data(), n_threads, family);
        };
        full(); // warm: pages, threads
        screened();
        double best_full = std::numeric_limits<double>::infinity(), best_screen = best_full;
        for (int r = 0; r < 3; ++r) {
            best_full = std::min(best_full, seconds_of(full));
            best_screen = std::min(best_screen, seconds_of(screened));
        }
        out.timings += (out.timings.empty() ? "" : " ") + std::to_string(rows) + ":" +
                       std::to_string(static_cast<long>(best_screen * 1e6)) + "/" +
                       std::to_string(static_cast<long>(best_full * 1e6)) + "us";
        if (best_screen >= best_full)
            break;
        out.max_rows = rows;
    }
    return out;
}

} // namespace bitnet::model
