// The CUDA engine beside the CPU engine on the same model: loading it on the simulated grid, and
// stepping both with the same batch while comparing every logits row they return.
#pragma once

#include "engine_fixture.hpp"
#include "model/engine/cuda/cuda_engine.hpp"
#include "model/engine/placement/engine_placement.hpp"

#include <algorithm>
#include <cmath>

namespace bitnet::test {

/// The CUDA engine on the simulated grid, through the "sim:0" placement, or with lowered buffer
/// caps when `caps` is given.
inline std::unique_ptr<model::engine>
load_sim_engine(const std::string& path, std::uint64_t kv_bytes = 64ull << 20,
                const model::cuda_buffer_caps* caps = nullptr) {
    model::engine_options opt;
    opt.model_path = path;
    opt.kv_budget_bytes = kv_bytes;
    auto e = caps != nullptr
                 ? model::load_cuda_engine(opt, kernels::cuda::make_simulated_ops(), *caps)
                 : model::load_engine_on(opt, model::placement{"sim", 0});
    REQUIRE_MESSAGE(e, (e ? std::string() : e.error().to_string()));
    return std::move(*e);
}

// The bound on |cpu logit - cuda logit|. Every CUDA kernel's contract is the CPU kernel's bits
// (kernels/cuda/kernel_args.hpp, each checked bit for bit on the simulated grid by its own test),
// and the engine calls them on the same inputs in the same order, so the logits are the same
// bits: any difference at all means a kernel or the engine's plumbing (a stride, an offset, a
// block table) departs from the CPU, and that is what these tests exist to catch.
inline constexpr double logit_tolerance = 0.0;

// On a real GPU one thing departs from the simulation: the device's expf in attention's softmax
// is within 2 ulps of glibc's, not equal to it (kernels/cuda/kv_attention.cuh), and a one-ulp
// change of an attention output can move an int8 code of the next projection's input, which
// moves logits by up to about one code's weight. The bound a device must meet is therefore loose
// (absolute, on logits of magnitude ~10 on the tiny models); rows whose CPU top-1/top-2 margin is
// below it are near ties, counted instead of compared. A first GPU run records the real figures
// (the test prints them).
inline constexpr double device_logit_tolerance = 1.0;

/// What the comparisons saw: rows compared, the largest |cpu - cuda| of any logit, and the
/// smallest top-1/top-2 margin of the CPU's rows (how close a tie came).
struct twin_record {
    std::size_t rows = 0;
    double max_diff = 0.0;
    double min_margin = 1e30;
    std::size_t near_ties = 0; ///< rows whose top-1 was not compared (margin <= tie_margin)
};

/// Runs `batch` on both engines; requires the same rows, the same top-1 in every row, and adds
/// the differences to `rec`. Returns the CPU's output (for the next tokens).
/// `tie_margin`: rows whose CPU top-1/top-2 margin is at most this skip the top-1 check (0 on the
/// simulated grid, where every row is compared).
inline model::step_output step_twins(model::engine& cpu, model::engine& cuda,
                                     const std::vector<model::seq_chunk>& batch, twin_record& rec,
                                     double tie_margin = 0.0) {
    auto a = cpu.step(batch);
    REQUIRE_MESSAGE(a, (a ? std::string() : a.error().to_string()));
    auto b = cuda.step(batch);
    REQUIRE_MESSAGE(b, (b ? std::string() : b.error().to_string()));
    REQUIRE(a->rows_for_chunk == b->rows_for_chunk);
    REQUIRE(a->first_row_for_chunk == b->first_row_for_chunk);
    REQUIRE(a->logits.size() == b->logits.size());
    const std::uint32_t n_vocab = cpu.config().n_vocab;
    for (std::size_t r = 0; r * n_vocab < a->logits.size(); ++r) {
        const auto ra = a->row(r, n_vocab);
        const auto rb = b->row(r, n_vocab);
        CAPTURE(r);
        for (std::size_t i = 0; i < n_vocab; ++i)
            rec.max_diff = std::max(rec.max_diff, std::fabs(double{ra[i]} - double{rb[i]}));
        std::vector<float> sorted(ra.begin(), ra.end());
        std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
        const double margin = double{sorted[0]} - double{sorted[1]};
        rec.min_margin = std::min(rec.min_margin, margin);
        if (margin > tie_margin || tie_margin == 0.0)
            CHECK(argmax(ra) == argmax(rb));
        else
            ++rec.near_ties;
        ++rec.rows;
    }
    CHECK(cpu.kv_blocks_free() == cuda.kv_blocks_free());
    return std::move(*a);
}

/// The CPU's greedy tokens after `prompt`, then both engines fed prompt + those tokens one step
/// at a time (teacher forcing): the same top-1 at every step, every logit compared.
inline twin_record teacher_forced(model::engine& cpu, model::engine& cuda,
                                  const std::vector<std::int32_t>& prompt, std::size_t n_gen,
                                  double tie_margin = 0.0) {
    const std::vector<std::int32_t> generated = greedy_alone(cpu, 1, prompt, n_gen);
    twin_record rec;
    model::seq_chunk c{7, prompt, 0, true};
    for (std::size_t i = 0; i <= generated.size(); ++i) {
        CAPTURE(i);
        const auto out = step_twins(cpu, cuda, {c}, rec, tie_margin);
        if (i < generated.size()) // the CPU's own greedy choice, as when it generated alone
            CHECK(argmax(out.row(0, cpu.config().n_vocab)) == generated[i]);
        c.pos0 += static_cast<std::uint32_t>(c.tokens.size());
        if (i < generated.size())
            c.tokens = {generated[i]};
    }
    cpu.release(7);
    cuda.release(7);
    CHECK(cuda.kv_blocks_free() == cuda.kv_blocks_total());
    return rec;
}

} // namespace bitnet::test
