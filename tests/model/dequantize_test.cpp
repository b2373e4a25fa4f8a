// Row dequantizers on hand-built blocks whose values follow from the ggml block definitions, and
// the F16 conversions on special values and rounding ties.
#include "model/gguf/dequantize.hpp"

#include "model/gguf/f16.hpp"

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

using namespace bitnet;
using namespace bitnet::model;

namespace {

void put_u16(std::vector<std::uint8_t>& b, std::size_t at, std::uint16_t v) {
    std::memcpy(b.data() + at, &v, 2);
}

std::vector<float> dequant(ggml_type type, const std::vector<std::uint8_t>& bytes,
                           std::uint32_t n) {
    REQUIRE(row_bytes(type, n).value() == bytes.size());
    std::vector<float> out(n, -12345.0f);
    REQUIRE(dequantize_row(type, bytes.data(), out.data(), n));
    return out;
}

// Q6_K super-block (ggml block_q6_K): ql[128] at 0, qh[64] at 128, scales int8[16] at 192,
// f16 d at 208. Element i = 128n + 32j + l (j = 0..3, l = 0..31) has its low 4 bits in
// ql[64n + l + 32(j%2)] (low nibble for j < 2, high for j >= 2), its high 2 bits in
// qh[32n + l] at bit 2j, and the scale scales[i/16]; value = d * scale * (q6 - 32).
std::vector<std::uint8_t> pack_q6_k(const std::vector<int>& q, const std::vector<int>& scales,
                                    std::uint16_t d) {
    std::vector<std::uint8_t> b(210, 0);
    for (std::size_t i = 0; i < 256; ++i) {
        const auto u = static_cast<unsigned>(q[i] + 32);
        const std::size_t n = i / 128, j = (i % 128) / 32, l = i % 32;
        const std::size_t ql = 64 * n + l + 32 * (j % 2);
        b[ql] |= static_cast<std::uint8_t>(j < 2 ? (u & 15) : (u & 15) << 4);
        b[128 + 32 * n + l] |= static_cast<std::uint8_t>((u >> 4) << (2 * j));
    }
    for (std::size_t s = 0; s < 16; ++s)
        b[192 + s] = static_cast<std::uint8_t>(static_cast<std::int8_t>(scales[s]));
    put_u16(b, 208, d);
    return b;
}

} // namespace

TEST_CASE("F16 to F32 is exact on normals, subnormals, zeros, infinities and NaN") {
    CHECK(f16_to_f32(0x3c00) == 1.0f);
    CHECK(f16_to_f32(0xc000) == -2.0f);
    CHECK(f16_to_f32(0x3555) == 0.333251953125f);
    CHECK(f16_to_f32(0x7bff) == 65504.0f);              // largest finite
    CHECK(f16_to_f32(0x0400) == std::ldexp(1.0f, -14)); // smallest normal
    CHECK(f16_to_f32(0x0001) == std::ldexp(1.0f, -24)); // smallest subnormal
    CHECK(f16_to_f32(0x03ff) == std::ldexp(1023.0f, -24));
    CHECK(f16_to_f32(0x8001) == -std::ldexp(1.0f, -24));
    CHECK(std::bit_cast<std::uint32_t>(f16_to_f32(0x0000)) == 0u);
    CHECK(std::bit_cast<std::uint32_t>(f16_to_f32(0x8000)) == 0x80000000u); // -0 keeps its sign
    CHECK(f16_to_f32(0x7c00) == std::numeric_limits<float>::infinity());
    CHECK(f16_to_f32(0xfc00) == -std::numeric_limits<float>::infinity());
    CHECK(std::isnan(f16_to_f32(0x7e00)));
    CHECK(std::isnan(f16_to_f32(0x7c01))); // signalling NaN stays NaN
    CHECK(std::isnan(f16_to_f32(0xfe00)));
}

TEST_CASE("F32 to F16 rounds to nearest even, saturates to inf and keeps NaN") {
    CHECK(f32_to_f16(1.0f) == 0x3c00);
    CHECK(f32_to_f16(-2.0f) == 0xc000);
    CHECK(f32_to_f16(65504.0f) == 0x7bff);
    CHECK(f32_to_f16(65519.0f) == 0x7bff); // below the midpoint to 65536
    CHECK(f32_to_f16(65520.0f) == 0x7c00); // tie: 0x7bff is odd, rounds up to inf
    CHECK(f32_to_f16(1e6f) == 0x7c00);
    CHECK(f32_to_f16(-1e6f) == 0xfc00);
    CHECK(f32_to_f16(std::numeric_limits<float>::infinity()) == 0x7c00);
    const std::uint16_t nan = f32_to_f16(std::numeric_limits<float>::quiet_NaN());
    CHECK((nan & 0x7c00) == 0x7c00);
    CHECK((nan & 0x03ff) != 0);
    // Signalling NaN whose payload lives only in the low bits must not become inf.
    CHECK((f32_to_f16(std::bit_cast<float>(0x7f800001u)) & 0x03ff) != 0);
    // Ties between two f16 neighbours of 1: 1 + 2^-11 goes down to 1 (even), 1 + 3·2^-11 goes up.
    CHECK(f32_to_f16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);
    CHECK(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);
    CHECK(f32_to_f16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)) == 0x3c01);
    // Subnormal results: 2^-25 is half the smallest subnormal (tie to 0), 3·2^-25 ties to 2.
    CHECK(f32_to_f16(std::ldexp(1.0f, -25)) == 0x0000);
    CHECK(f32_to_f16(std::ldexp(1.0f, -25) * 1.0001f) == 0x0001);
    CHECK(f32_to_f16(3 * std::ldexp(1.0f, -25)) == 0x0002);
    CHECK(f32_to_f16(5 * std::ldexp(1.0f, -25)) == 0x0002);
    CHECK(f32_to_f16(-std::ldexp(1.0f, -24)) == 0x8001);
    CHECK(f32_to_f16(std::ldexp(1.0f, -30)) == 0x0000);
    CHECK(f32_to_f16(-std::ldexp(1.0f, -30)) == 0x8000);
    CHECK(f32_to_f16(std::numeric_limits<float>::denorm_min()) == 0x0000);
    // Largest subnormal rounding up into the smallest normal.
    CHECK(f32_to_f16(std::ldexp(1023.5f, -24)) == 0x0400);
    CHECK(f32_to_f16(-0.0f) == 0x8000);
}

TEST_CASE("every finite F16 value survives F16 -> F32 -> F16") {
    for (std::uint32_t h = 0; h < 0x10000; ++h) {
        const auto v = static_cast<std::uint16_t>(h);
        if ((v & 0x7c00) == 0x7c00 && (v & 0x03ff) != 0)
            continue; // NaN: checked above
        REQUIRE(f32_to_f16(f16_to_f32(v)) == v);
    }
}

TEST_CASE("F32, F16 and BF16 rows dequantize exactly") {
    const std::vector<float> f{1.5f, -0.0f, 3e38f};
    std::vector<std::uint8_t> fb(12);
    std::memcpy(fb.data(), f.data(), 12);
    CHECK(dequant(ggml_type::f32, fb, 3) == f);

    std::vector<std::uint8_t> hb(6);
    put_u16(hb, 0, 0x3c00);
    put_u16(hb, 2, 0x0001);
    put_u16(hb, 4, 0xfc00);
    const auto h = dequant(ggml_type::f16, hb, 3);
    CHECK(h[0] == 1.0f);
    CHECK(h[1] == std::ldexp(1.0f, -24));
    CHECK(h[2] == -std::numeric_limits<float>::infinity());

    std::vector<std::uint8_t> bb(4);
    put_u16(bb, 0, 0x3fc0); // 1.5 = 0x3fc00000
    put_u16(bb, 2, 0xc2f7); // -123.5 = 0xc2f70000
    const auto b = dequant(ggml_type::bf16, bb, 2);
    CHECK(b[0] == 1.5f);
    CHECK(b[1] == -123.5f);
}

TEST_CASE("Q8_0 blocks are f16 d then 32 int8, value q·d") {
    std::vector<std::uint8_t> b(2 * 34, 0);
    put_u16(b, 0, 0x3400); // d = 0.25
    for (int j = 0; j < 32; ++j)
        b[2 + j] = static_cast<std::uint8_t>(static_cast<std::int8_t>(j - 16));
    put_u16(b, 34, 0xc000); // d = -2
    b[36] = 127;
    b[37] = 0x80; // -128
    b[38] = 0xff; // -1
    const auto y = dequant(ggml_type::q8_0, b, 64);
    for (int j = 0; j < 32; ++j)
        CHECK(y[j] == static_cast<float>(j - 16) * 0.25f);
    CHECK(y[32] == -254.0f);
    CHECK(y[33] == 256.0f);
    CHECK(y[34] == 2.0f);
    for (int j = 35; j < 64; ++j)
        CHECK(y[j] == 0.0f);
}

TEST_CASE("Q4_0 blocks: low nibbles are elements 0..15, high 16..31, value (nibble-8)·d") {
    std::vector<std::uint8_t> b(2 * 18, 0);
    put_u16(b, 0, 0x3800); // d = 0.5
    for (int j = 0; j < 16; ++j)
        b[2 + j] = static_cast<std::uint8_t>(j | (15 - j) << 4);
    put_u16(b, 18, 0x4200); // d = 3
    for (int j = 0; j < 16; ++j)
        b[20 + j] = 0x80; // low nibble 0 -> -8, high nibble 8 -> 0
    const auto y = dequant(ggml_type::q4_0, b, 64);
    for (int j = 0; j < 16; ++j) {
        CHECK(y[j] == static_cast<float>(j - 8) * 0.5f);
        CHECK(y[16 + j] == static_cast<float>(7 - j) * 0.5f);
        CHECK(y[32 + j] == -24.0f);
        CHECK(y[48 + j] == 0.0f);
    }
}

TEST_CASE("Q6_K: hand-set bytes give the values of ggml's block definition") {
    std::vector<std::uint8_t> b(210, 0);
    b[0] = 0x21;             // ql[0]
    b[32] = 0x7f;            // ql[32]
    b[64] = 0x03;            // ql[64]: first element of the second 128-half
    b[128] = 0xe4;           // qh[0] = 0b11'10'01'00
    b[192 + 0] = 3;          // scales[0]: elements 0..15
    b[192 + 2] = 0xff;       // scales[2] = -1: elements 32..47
    b[192 + 4] = 2;          // scales[4]: elements 64..79
    b[192 + 6] = 1;          // scales[6]: elements 96..111
    b[192 + 8] = 5;          // scales[8]: elements 128..143
    put_u16(b, 208, 0x3c00); // d = 1
    const auto y = dequant(ggml_type::q6_k, b, 256);
    // Element 0: low nibble of ql[0] (1) | qh[0] bits 0-1 (0) << 4 = 1; 1 - 32 = -31; × 3.
    CHECK(y[0] == -93.0f);
    // Element 32: low nibble of ql[32] (15) | bits 2-3 (1) << 4 = 31; -1 × -1.
    CHECK(y[32] == 1.0f);
    // Element 64: high nibble of ql[0] (2) | bits 4-5 (2) << 4 = 34; 2 × 2.
    CHECK(y[64] == 4.0f);
    // Element 96: high nibble of ql[32] (7) | bits 6-7 (3) << 4 = 55; 23 × 1.
    CHECK(y[96] == 23.0f);
    // Element 128: low nibble of ql[64] (3); -29 × 5.
    CHECK(y[128] == -145.0f);
    for (int i = 1; i < 16; ++i) {
        CHECK(y[i] == -96.0f);        // q = -32 with scale 3
        CHECK(y[32 + i] == 32.0f);    // scale -1
        CHECK(y[64 + i] == -64.0f);   // scale 2
        CHECK(y[96 + i] == -32.0f);   // scale 1
        CHECK(y[128 + i] == -160.0f); // scale 5
    }
    CHECK(y[16] == 0.0f); // scales[1] = 0
    CHECK(y[255] == 0.0f);
}

TEST_CASE("Q6_K: every element follows d·scale[i/16]·(q-32) over two super-blocks") {
    std::vector<std::uint8_t> bytes;
    std::vector<float> want;
    for (int blk = 0; blk < 2; ++blk) {
        std::vector<int> q(256), sc(16);
        for (int i = 0; i < 256; ++i)
            q[i] = (i * 37 + blk * 11) % 64 - 32;
        for (int s = 0; s < 16; ++s)
            sc[s] = (s * 29 + blk * 7) % 256 - 128;
        const std::uint16_t d = blk == 0 ? 0x2e66 : 0xb800; // ≈0.1 and -0.5
        const auto b = pack_q6_k(q, sc, d);
        bytes.insert(bytes.end(), b.begin(), b.end());
        const float df = f16_to_f32(d);
        for (int i = 0; i < 256; ++i)
            want.push_back(df * static_cast<float>(sc[i / 16]) * static_cast<float>(q[i]));
    }
    const auto y = dequant(ggml_type::q6_k, bytes, 512);
    for (int i = 0; i < 512; ++i) {
        CAPTURE(i);
        CHECK(y[i] == want[i]);
    }
}

TEST_CASE("row_bytes and dequantize_row refuse other types and ragged rows") {
    CHECK(row_bytes(ggml_type::f32, 7).value() == 28);
    CHECK(row_bytes(ggml_type::bf16, 7).value() == 14);
    CHECK(row_bytes(ggml_type::q8_0, 64).value() == 68);
    CHECK(row_bytes(ggml_type::q4_0, 32).value() == 18);
    CHECK(row_bytes(ggml_type::q6_k, 512).value() == 420);
    CHECK(row_bytes(ggml_type::q8_0, 48).error().value() == errc::unsupported_shape);
    CHECK(row_bytes(ggml_type::q6_k, 128).error().value() == errc::unsupported_shape);
    CHECK(row_bytes(ggml_type::i2_s, 128).error().value() == errc::unsupported);
    CHECK(row_bytes(ggml_type::q4_k, 256).error().value() == errc::unsupported);
    float out[32] = {};
    const std::uint8_t in[34] = {};
    CHECK_FALSE(dequantize_row(ggml_type::q5_0, in, out, 32));
    CHECK_FALSE(can_dequantize(ggml_type::tl2));
    CHECK(can_dequantize(ggml_type::q6_k));
}
