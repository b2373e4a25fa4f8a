// The test-only reference forward pass: its building blocks on hand-made inputs, then the whole
// model against bitnet.cpp's own logits and greedy tokens on the tiny I2_S fixture
// (docs/GGUF-FORMAT.md §3.6).
#include "support/reference_forward.hpp"

#include "support/f16_round.hpp"
#include "support/greedy_reference.hpp"
#include "support/test_data.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace bitnet;
using namespace bitnet::test;

TEST_CASE("reference: f16 rounding is IEEE round-to-nearest-even") {
    // Every finite half survives a round trip through float.
    for (std::uint32_t h = 0; h < 0x10000; ++h) {
        if ((h & 0x7c00u) == 0x7c00u)
            continue;
        REQUIRE(f32_to_f16_bits(f16_bits_to_f32(static_cast<std::uint16_t>(h))) == h);
    }
    CHECK(to_f16_round(1.0f + 0x1.0p-11f) == 1.0f);                 // tie -> even (down)
    CHECK(to_f16_round(1.0f + 3 * 0x1.0p-11f) == 1.0f + 0x1.0p-9f); // tie -> even (up)
    CHECK(to_f16_round(1.0f + 0x1.8p-11f) == 1.0f + 0x1.0p-10f);    // above the tie
    CHECK(to_f16_round(65519.0f) == 65504.0f);
    CHECK(std::isinf(to_f16_round(65520.0f)));
    CHECK(to_f16_round(0x1.0p-24f) == 0x1.0p-24f); // smallest subnormal
    CHECK(to_f16_round(0x1.0p-25f) == 0.0f);       // tie with 0 -> 0
    CHECK(to_f16_round(0x1.8p-25f) == 0x1.0p-24f);
#ifdef __FLT16_MAX__
    // Against the compiler's own conversion on a spread of values.
    std::uint32_t state = 12345;
    for (int i = 0; i < 200000; ++i) {
        state = state * 1664525u + 1013904223u;
        const std::uint32_t bits = (state & 0x807fffffu) | ((100u + (state >> 24) % 50u) << 23);
        float f = 0.0f;
        std::memcpy(&f, &bits, sizeof f);
        REQUIRE(to_f16_round(f) == static_cast<float>(static_cast<_Float16>(f)));
    }
#endif
}

TEST_CASE("reference: I2_S decoding follows the 128-code / 32-byte block layout") {
    // Two rows of K = 128: codes chosen so that every (byte, shift) slot is distinct.
    const std::uint32_t K = 128, M = 2;
    std::vector<int> codes(K * M);
    for (std::uint32_t i = 0; i < K * M; ++i)
        codes[i] = static_cast<int>((i * 7 + i / 32) % 3); // 0, 1, 2 = -1, 0, +1
    std::vector<std::uint8_t> bytes(K * M / 4 + 32, 0);
    for (std::uint32_t b = 0; b < K * M / 128; ++b)
        for (std::uint32_t p = 0; p < 32; ++p)
            bytes[32 * b + p] =
                static_cast<std::uint8_t>(codes[128 * b + p] << 6 | codes[128 * b + 32 + p] << 4 |
                                          codes[128 * b + 64 + p] << 2 | codes[128 * b + 96 + p]);
    const float scale = 0.375f;
    std::memcpy(bytes.data() + K * M / 4, &scale, sizeof scale);

    model::gguf_tensor t;
    t.name = "test";
    t.type = model::ggml_type::i2_s;
    t.n_dims = 2;
    t.ne = {K, M, 1, 1};
    t.n_bytes = bytes.size();
    t.data = bytes.data();
    auto w = reference_decode_i2s(t);
    REQUIRE(w);
    REQUIRE(w->size() == K * M);
    for (std::uint32_t i = 0; i < K * M; ++i)
        REQUIRE((*w)[i] == scale * static_cast<float>(codes[i] - 1));

    t.ne = {100, 2, 1, 1}; // not whole blocks
    CHECK_FALSE(reference_decode_i2s(t));
}

TEST_CASE("reference: int8 activation quantisation rounds half to even and clamps") {
    float s = 0.0f;
    // max |x| = 127 -> s = 1: codes are the nearest-even integers.
    auto q = reference_quantize_i8(std::vector<float>{127.0f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f}, s);
    CHECK(s == 1.0f);
    CHECK(q == std::vector<std::int8_t>{127, 0, 2, 2, 0, -2});
    // The 1e-5 floor: an all-zero row does not divide by zero.
    q = reference_quantize_i8(std::vector<float>{0.0f, 0.0f}, s);
    CHECK(s == doctest::Approx(127.0 / 1e-5));
    CHECK(q == std::vector<std::int8_t>{0, 0});

    reference_linear w;
    w.n_in = 4;
    w.n_out = 2;
    w.w = {0.5f, -0.5f, 0.0f, 0.5f, 0.0f, 0.0f, -0.5f, -0.5f};
    // x quantises to {127, 64, -32, 0} with s = 127/127 -> y = (Σ t·q) / s · 0.5.
    const auto y = reference_bitlinear(w, std::vector<float>{127.0f, 64.0f, -32.0f, 0.0f});
    CHECK(w.w_scale == 0.5f);
    CHECK(y[0] == (127.0f - 64.0f) * 0.5f);
    CHECK(y[1] == 32.0f * 0.5f);
}

TEST_CASE("reference: RMSNorm matches the closed form") {
    const std::vector<float> x{1.0f, -2.0f, 3.0f, 0.5f};
    const std::vector<float> g{1.0f, 2.0f, 0.5f, -1.0f};
    const auto y = reference_rmsnorm(x, g, 1e-5f);
    const double rms = std::sqrt((1 + 4 + 9 + 0.25) / 4.0 + 1e-5);
    for (std::size_t i = 0; i < x.size(); ++i)
        CHECK(y[i] == doctest::Approx(x[i] / rms * g[i]).epsilon(1e-6));
}

TEST_CASE("reference: matches bitnet.cpp on tiny-i2_s (first logits, teacher-forced greedy)") {
    auto f = model::gguf_file::open(data_path("bitnetcpp/tiny-i2_s.gguf"));
    REQUIRE(f);
    auto loaded = load_reference_model(*f);
    REQUIRE(loaded);
    reference_model& m = *loaded;
    CHECK(m.arch == reference_arch::bitnet_b158);
    CHECK(m.n_vocab == 8192);
    CHECK(m.n_embd == 256);
    CHECK(m.n_layer == 4);
    CHECK(m.n_head == 4);
    CHECK(m.n_head_kv == 2);
    CHECK(m.head_dim == 64);
    CHECK(m.n_ff == 512);
    CHECK(m.rope_base == 500000.0f);

    const greedy_reference ref = load_greedy_reference();
    const std::vector<std::int32_t>& prompt = ref.prompt;
    const std::vector<std::int32_t>& greedy = ref.greedy;
    const std::vector<double>& first = ref.first_logits;
    const std::vector<double>& margins = ref.margins;

    reference_state st;
    std::vector<float> logits = reference_step(m, st, prompt, 0);
    REQUIRE(logits.size() == m.n_vocab);
    double first_diff = 0.0;
    for (std::size_t i = 0; i < first.size(); ++i)
        first_diff = std::max(first_diff, std::fabs(logits[i] - first[i]));
    MESSAGE("first logits (ids 0..7) max |diff| vs bitnet.cpp: " << first_diff);
    CHECK(first_diff < 2e-3);

    // Teacher-forced: feed bitnet.cpp's tokens, compare our argmax at every step.
    int n_match = 0;
    double max_margin_diff_30 = 0.0;
    for (std::size_t i = 0; i < greedy.size(); ++i) {
        const auto [top, margin] = argmax_margin(logits);
        if (top == greedy[i]) {
            ++n_match;
            if (i < 30)
                max_margin_diff_30 = std::max(max_margin_diff_30, std::fabs(margin - margins[i]));
        } else {
            MESSAGE("step " << i << ": ours " << top << ", bitnet.cpp " << greedy[i]
                            << " (its margin " << margins[i] << ")");
        }
        if (margins[i] >= 0.15)
            CHECK_MESSAGE(top == greedy[i], "step " << i << " with margin " << margins[i]);
        if (i + 1 < greedy.size())
            logits = reference_step(m, st, std::vector<std::int32_t>{greedy[i]},
                                    static_cast<int>(prompt.size() + i));
    }
    MESSAGE("teacher-forced argmax matches bitnet.cpp at " << n_match << " of 64 steps; max "
                                                           << "margin diff (first 30, matching) "
                                                           << max_margin_diff_30);
    CHECK(n_match >= 62);
    // bitnet.cpp's own margins, not just its argmax: margins agree to ~1e-3 over the
    // first ~30 steps when every rounding point of docs/GGUF-FORMAT.md §3.6 is right (one wrong
    // point gives ~0.2).
    CHECK(max_margin_diff_30 < 0.02);
    CHECK(st.n_past == prompt.size() + 63);
}

TEST_CASE("reference: a prompt step equals the same tokens fed one at a time up to rounding") {
    // Same model, two schedules: both must agree on the argmax path for a short prompt, and the
    // state lengths must add up (this catches a causal-mask or K/V-append bug).
    auto f = model::gguf_file::open(data_path("bitnetcpp/tiny-i2_s.gguf"));
    REQUIRE(f);
    auto m = load_reference_model(*f).value();
    const std::vector<std::int32_t> prompt{7936, 4125, 7552, 111, 343};
    reference_state whole, single;
    const auto a = reference_step(m, whole, prompt, 0);
    std::vector<float> b;
    for (std::size_t i = 0; i < prompt.size(); ++i)
        b = reference_step(m, single, std::span<const std::int32_t>(&prompt[i], 1),
                           static_cast<int>(i));
    CHECK(whole.n_past == single.n_past);
    double max_diff = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i)
        max_diff = std::max(max_diff, static_cast<double>(std::fabs(a[i] - b[i])));
    // Decode steps round attention probabilities to F16, prompt steps do not: close, not equal.
    CHECK(max_diff < 0.5);
    CHECK_THROWS(reference_step(m, whole, prompt, 0)); // pos0 must continue the sequence
}

TEST_CASE("reference: the `bitnet` architecture (SiLU, F32 weights) runs on the TL twin file") {
    auto f = model::gguf_file::open(data_path("bitnetcpp/tl/tiny-f32.gguf"));
    REQUIRE(f);
    auto m = load_reference_model(*f);
    REQUIRE(m);
    CHECK(m->arch == reference_arch::bitnet);
    reference_state st;
    const auto logits = reference_step(*m, st, std::vector<std::int32_t>{1, 2, 3}, 0);
    REQUIRE(logits.size() == m->n_vocab);
    for (float v : logits)
        REQUIRE(std::isfinite(v));
    const auto next = reference_step(*m, st, std::vector<std::int32_t>{4}, 3);
    CHECK(next != logits);
}
