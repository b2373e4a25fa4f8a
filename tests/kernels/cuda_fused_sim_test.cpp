// The fused CUDA kernels of issue 53 on the simulated grid (cuda_kernel_checks_fused.hpp): the
// split-K ternary GEMM with stacked segments and the residual add against the CPU's product on
// random ragged shapes, norm_quantize, rope_kv and embed against their unfused twins; and a
// launch plan run one by one equals the same launches made directly.
#include "cuda_kernel_checks_fused.hpp"
#include "kernels/cuda/launch_plan.hpp"

#include <doctest/doctest.h>

using namespace bitnet;
namespace kc = bitnet::kernels::cuda;

TEST_CASE("cuda_sim split-K ternary GEMM with segments and accumulate equals the CPU's "
          "product bit for bit") {
    const auto o = kc::make_simulated_ops();
    test::cuda::check_stacked_gemm_table(*o);
}

TEST_CASE("cuda_sim split-K: the split shapes the engine meets split, and never past K") {
    // 2B-4T's fused Q/K/V (3840 rows) and ffn_down (K 6912) at 16 tokens: 60 and 40 tiles,
    // far fewer than the blocks a large GPU runs at once.
    CHECK(kc::ternary_splits_for(3840, 2560, 16) > 1);
    CHECK(kc::ternary_splits_for(2560, 6912, 16) > 1);
    // One 128-column chunk cannot be split; the GEMV's token counts never are; a prefill
    // fills the device with tiles alone.
    CHECK(kc::ternary_splits_for(64, 128, 16) == 1);
    CHECK(kc::ternary_splits_for(3840, 2560, 8) == 1);
    CHECK(kc::ternary_splits_for(3840, 2560, 512) == 1);
    // Every split walks at least min_split_chunks chunks.
    for (std::uint32_t cols = 128; cols <= 8192; cols += 128)
        CHECK(kc::ternary_splits_for(64, cols, 9) * 2 <= std::max(2u, cols / 128));
}

TEST_CASE("cuda_sim norm_quantize equals rms_norm + quantize (and the ReLU² gate before "
          "them) bit for bit") {
    const auto o = kc::make_simulated_ops();
    test::cuda::check_norm_quantize_table(*o);
}

TEST_CASE("cuda_sim rope_kv equals rope on q and k, then kv_append, bit for bit") {
    const auto o = kc::make_simulated_ops();
    test::cuda::check_rope_kv_table(*o);
}

TEST_CASE("cuda_sim embed gathers the F16 rows exactly") {
    const auto o = kc::make_simulated_ops();
    test::cuda::check_embed(*o);
}

TEST_CASE("cuda_sim a launch plan runs its launches in order, and replays them the same") {
    const auto o = kc::make_simulated_ops();
    test::device_vector<float> x(*o, std::vector<float>{1.0f, 2.0f, 3.0f});
    test::device_vector<float> d(*o, std::vector<float>{10.0f, 20.0f, 30.0f});
    test::device_vector<float> u(*o, std::vector<float>{2.0f, 2.0f, 2.0f});
    kc::launch_plan plan;
    kc::add_args add;
    add.x = x.get();
    add.d = d.get();
    add.n = 3;
    kc::relu_sqr_gate_args gate;
    gate.g = x.get();
    gate.u = u.get();
    gate.z = x.get();
    gate.n = 3;
    plan.add(add);  // x = 11, 22, 33
    plan.add(gate); // x = 242, 968, 2178 (the order matters: gate first would give 12, ...)
    CHECK(plan.size() == 2);
    const std::uint64_t before = o->kernels_launched();
    o->run_plan(plan);
    CHECK(x.download() == std::vector<float>{242.0f, 968.0f, 2178.0f});
    CHECK(o->kernels_launched() - before == 2);
    // A replay reads the buffers as they are now.
    o->upload(x.get(), std::vector<float>{0.0f, -50.0f, 1.0f}.data(), 3 * sizeof(float));
    o->replay_plan(plan);
    CHECK(x.download() == std::vector<float>{200.0f, 0.0f, 1922.0f});
    CHECK(o->kernels_launched() - before == 4);
    CHECK(o->graphs_launched() == 0); // the simulated grid replays launch by launch
}

TEST_CASE("cuda_sim paged_attention splits long contexts' scores over blocks") {
    // Two kernels (scores, then the rest) once the scratch's context passes 128 positions:
    // check_paged_attention_table's cases with contexts of 130 and 1000 take that path, and
    // are compared with the CPU bit for bit there.
    const auto o = kc::make_simulated_ops();
    kc::paged_attention_args a;
    test::device_vector<float> q(*o, 64);
    test::device_vector<float> out(*o, 64);
    test::device_vector<std::uint16_t> pool(*o, 64 * 16 * 2);
    test::device_vector<std::uint64_t> tiles(*o, std::vector<std::uint64_t>{0, 64 * 16});
    test::device_vector<std::uint32_t> table(*o, 1);
    test::device_vector<std::uint32_t> ctx(*o, std::vector<std::uint32_t>{3});
    test::device_vector<float> scratch(*o, 4 * 1000);
    a.q = q.get();
    a.ldq = 64;
    a.out = out.get();
    a.ldo = 64;
    a.n_rows = 1;
    a.n_head = 4;
    a.n_kv_head = 1;
    a.head_dim = 16;
    a.scale = 0.25f;
    a.block_tokens = 16;
    a.pool = pool.get();
    a.k_tiles = tiles.get();
    a.v_tiles = tiles.get() + 1;
    a.table = table.get();
    a.n_ctx = ctx.get();
    a.scratch = scratch.get();
    for (const auto& [max_ctx, kernels] :
         std::vector<std::pair<std::uint32_t, std::uint64_t>>{{128, 1}, {129, 2}, {1000, 2}}) {
        CAPTURE(max_ctx);
        a.max_ctx = max_ctx;
        const std::uint64_t before = o->kernels_launched();
        o->run(a);
        CHECK(o->kernels_launched() - before == kernels);
    }
}
