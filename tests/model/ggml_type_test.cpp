#include "model/gguf/ggml_type.hpp"

#include <doctest/doctest.h>

using namespace bitnet::model;

TEST_CASE("tensor_nbytes follows ggml's block rule for the usual types") {
    CHECK(tensor_nbytes(ggml_type::f32, {256, 3, 1, 1}).value() == 256 * 3 * 4);
    CHECK(tensor_nbytes(ggml_type::f16, {2560, 128256, 1, 1}).value() == 656'670'720ull);
    CHECK(tensor_nbytes(ggml_type::bf16, {64, 2, 1, 1}).value() == 64 * 2 * 2);
    // Q8_0: blocks of 32 elements in 34 bytes (f16 scale + 32 int8).
    CHECK(tensor_nbytes(ggml_type::q8_0, {64, 10, 1, 1}).value() == 2 * 34 * 10);
    // Q6_K: super-blocks of 256 elements in 210 bytes.
    CHECK(tensor_nbytes(ggml_type::q6_k, {2560, 4, 1, 1}).value() == 10 * 210 * 4);
    CHECK(tensor_nbytes(ggml_type::f32, {7, 2, 3, 4}).value() == 7 * 2 * 3 * 4 * 4);
}

TEST_CASE("tensor_nbytes refuses rows that are not whole blocks and unknown ids") {
    auto r = tensor_nbytes(ggml_type::q8_0, {33, 1, 1, 1});
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("block size 32") != std::string::npos);
    CHECK_FALSE(tensor_nbytes(static_cast<ggml_type>(5), {32, 1, 1, 1})); // removed Q4_2
    CHECK_FALSE(tensor_nbytes(ggml_type::i8_s, {32, 1, 1, 1}));           // never in files
    CHECK_FALSE(ggml_type_known(37));
    CHECK_FALSE(ggml_type_known(40));
    CHECK(ggml_type_known(36));
}

TEST_CASE("I2_S and TL1 sizes are n/4 plus a 32-byte scale slot") {
    // 2B-4T attn_q: K = M = 2560.
    CHECK(tensor_nbytes(ggml_type::i2_s, {2560, 2560, 1, 1}).value() == 2560ull * 2560 / 4 + 32);
    CHECK(tensor_nbytes(ggml_type::tl1, {256, 384, 1, 1}).value() == 256ull * 384 / 4 + 32);
    CHECK(ternary_scale_offset(ggml_type::i2_s, {2560, 640, 1, 1}).value() == 2560ull * 640 / 4);
    // Sum over one 2B-4T layer's ternary tensors: 17,367,264 bytes (docs/GGUF-FORMAT.md §2.7).
    auto i2s = [](std::uint64_t k, std::uint64_t m) {
        return tensor_nbytes(ggml_type::i2_s, {k, m, 1, 1}).value();
    };
    CHECK(i2s(2560, 2560) * 2 + i2s(2560, 640) * 2 + i2s(2560, 6912) * 2 + i2s(6912, 2560) ==
          17'367'264ull);
}

TEST_CASE("TL2 size follows the fork's three/two-weight formula") {
    // K = 256, M = 256: S = 0 + 256*256/2*4/8 = 16384 -> PAD32 = 16384, + 32.
    CHECK(tensor_nbytes(ggml_type::tl2, {256, 256, 1, 1}).value() == 16384 + 32);
    // K = 384, M = 256: S = 128*256/3*5/8 + 16384 = 32768/3 = 10922 *5 = 54610 /8 = 6826; +16384
    CHECK(tensor_nbytes(ggml_type::tl2, {384, 256, 1, 1}).value() == 23232 + 32);
    CHECK(ternary_scale_offset(ggml_type::tl2, {384, 256, 1, 1}).value() == 23232);
    CHECK_FALSE(tensor_nbytes(ggml_type::tl2, {128, 256, 1, 1}));
}

TEST_CASE("tensor_nbytes reports element counts that overflow") {
    auto r = tensor_nbytes(ggml_type::f32, {1ull << 40, 1ull << 30, 1, 1});
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("overflow") != std::string::npos);
}
