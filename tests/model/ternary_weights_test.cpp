// I2_S decode/encode against bitnet.cpp's own file and the layout formula of docs/GGUF-FORMAT.md
// §2.2, and the F32/F16 ternary-twin reader.
#include "model/engine/weights/ternary_weights.hpp"

#include "model/gguf/f16.hpp"
#include "model/gguf/gguf_reader.hpp"
#include "support/test_data.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <limits>
#include <string>
#include <vector>

using namespace bitnet;
using namespace bitnet::model;

namespace {

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

// A tensor view over caller-owned bytes. ne = [K, M].
gguf_tensor make_tensor(const char* name, ggml_type type, std::uint64_t k, std::uint64_t m,
                        const std::vector<std::uint8_t>& bytes) {
    gguf_tensor t;
    t.name = name;
    t.type = type;
    t.n_dims = 2;
    t.ne = {k, m, 1, 1};
    t.n_bytes = bytes.size();
    t.data = bytes.data();
    return t;
}

template <class T>
std::vector<std::uint8_t> to_bytes(const std::vector<T>& v) {
    std::vector<std::uint8_t> out(v.size() * sizeof(T));
    std::memcpy(out.data(), v.data(), out.size());
    return out;
}

// A deterministic ternary pattern with all three values in every block position.
ternary_matrix pattern(std::uint32_t rows, std::uint32_t cols, float scale) {
    ternary_matrix w{rows, cols, scale, {}};
    w.values.resize(static_cast<std::size_t>(rows) * cols);
    std::uint32_t s = 12345;
    for (auto& v : w.values) {
        s = s * 1103515245u + 12345u;
        v = static_cast<std::int8_t>(static_cast<int>((s >> 16) % 3) - 1);
    }
    return w;
}

} // namespace

TEST_CASE("decode_i2s and encode_i2s reproduce bitnet.cpp's I2_S tensors byte for byte") {
    auto f = gguf_file::open(test::data_path("bitnetcpp/tiny-i2_s.gguf"));
    REQUIRE(f);
    int n_checked = 0;
    for (const auto& t : f->tensors()) {
        if (t.type != ggml_type::i2_s)
            continue;
        CAPTURE(std::string(t.name));
        auto w = decode_i2s(t);
        REQUIRE(w);
        CHECK(w->cols == t.ne[0]);
        CHECK(w->rows == t.ne[1]);
        CHECK(w->scale == 0.0625f); // the fixture's absmean scale, a power of two
        int n_minus = 0, n_zero = 0, n_plus = 0;
        for (auto v : w->values) {
            n_minus += v == -1;
            n_zero += v == 0;
            n_plus += v == 1;
        }
        CHECK(static_cast<std::size_t>(n_minus + n_zero + n_plus) == w->values.size());
        CHECK(n_minus > 0);
        CHECK(n_zero > 0);
        CHECK(n_plus > 0);

        auto bytes = encode_i2s(*w);
        REQUIRE(bytes);
        const std::uint64_t packed = t.n_elements() / 4;
        REQUIRE(bytes->size() == t.n_bytes);
        // Packed codes and the scale are bitnet.cpp's; the other 28 tail bytes in the file are
        // stale work-buffer contents (not zero), which we write as zeros.
        CHECK(std::memcmp(bytes->data(), t.data, packed + 4) == 0);
        bool file_tail_zero = true, our_tail_zero = true;
        for (std::uint64_t i = packed + 4; i < t.n_bytes; ++i) {
            file_tail_zero = file_tail_zero && t.data[i] == 0;
            our_tail_zero = our_tail_zero && (*bytes)[i] == 0;
        }
        CHECK(our_tail_zero);
        CHECK_FALSE(file_tail_zero);
        ++n_checked;
    }
    CHECK(n_checked == 28);
}

TEST_CASE("encode_i2s follows the 128-code / 32-byte block formula of the spec") {
    const ternary_matrix w = pattern(3, 256, 0.5f);
    auto bytes = encode_i2s(w);
    REQUIRE(bytes);
    REQUIRE(bytes->size() == 3 * 256 / 4 + 32);
    // byte[32b+p] = c[128b+p]<<6 | c[128b+32+p]<<4 | c[128b+64+p]<<2 | c[128b+96+p], c = v + 1.
    const auto c = [&](std::size_t i) { return static_cast<unsigned>(w.values[i] + 1); };
    for (std::size_t b = 0; b < w.values.size() / 128; ++b)
        for (std::size_t p = 0; p < 32; ++p) {
            const unsigned want = c(128 * b + p) << 6 | c(128 * b + 32 + p) << 4 |
                                  c(128 * b + 64 + p) << 2 | c(128 * b + 96 + p);
            CHECK((*bytes)[32 * b + p] == want);
        }
    float scale = 0;
    std::memcpy(&scale, bytes->data() + 3 * 256 / 4, 4);
    CHECK(scale == 0.5f);
    for (std::size_t i = 3 * 256 / 4 + 4; i < bytes->size(); ++i)
        CHECK((*bytes)[i] == 0);

    auto back = decode_i2s(make_tensor("w", ggml_type::i2_s, 256, 3, *bytes));
    REQUIRE(back);
    CHECK(back->values == w.values);
    CHECK(back->scale == 0.5f);
}

TEST_CASE("decode_i2s reads the unused code 3 as zero") {
    std::vector<std::uint8_t> bytes(128 / 4 + 32, 0xff); // every code 3
    bytes[0] = 0x9b; // codes 2, 1, 2, 3 -> +1 at 0, 0 at 32, +1 at 64, 0 at 96
    const float scale = 2.0f;
    std::memcpy(bytes.data() + 32, &scale, 4);
    auto w = decode_i2s(make_tensor("w", ggml_type::i2_s, 128, 1, bytes));
    REQUIRE(w);
    CHECK(w->values[0] == 1);
    CHECK(w->values[32] == 0);
    CHECK(w->values[64] == 1);
    CHECK(w->values[96] == 0);
    int n_nonzero = 0;
    for (auto v : w->values)
        n_nonzero += v != 0;
    CHECK(n_nonzero == 2);
    CHECK(w->scale == 2.0f);
}

TEST_CASE("I2_S refuses shapes its layout does not cover") {
    SUBCASE("encode with K not a multiple of 128") {
        auto r = encode_i2s(pattern(128, 192, 1.0f));
        REQUIRE_FALSE(r);
        CHECK(r.error().value() == errc::unsupported_shape);
        CHECK(contains(r.error().message, "K = 192"));
    }
    SUBCASE("encode with a value outside -1..1") {
        auto w = pattern(1, 128, 1.0f);
        w.values[5] = 2;
        auto r = encode_i2s(w);
        REQUIRE_FALSE(r);
        CHECK(r.error().value() == errc::invalid_argument);
    }
    SUBCASE("decode with a partial block") {
        std::vector<std::uint8_t> bytes(64 / 4 + 32, 0);
        auto r = decode_i2s(make_tensor("w", ggml_type::i2_s, 64, 1, bytes));
        REQUIRE_FALSE(r);
        CHECK(r.error().value() == errc::unsupported_shape);
    }
    SUBCASE("decode of a tensor too short for its scale") {
        std::vector<std::uint8_t> bytes(128 / 4, 0);
        auto r = decode_i2s(make_tensor("w", ggml_type::i2_s, 128, 1, bytes));
        REQUIRE_FALSE(r);
        CHECK(r.error().value() == errc::bad_format);
    }
    SUBCASE("decode of another type") {
        std::vector<std::uint8_t> bytes(128 * 4, 0);
        CHECK_FALSE(decode_i2s(make_tensor("w", ggml_type::f32, 128, 1, bytes)));
    }
}

TEST_CASE("decode_float_ternary reads bitnet.cpp's F32 twin weights") {
    auto f = gguf_file::open(test::data_path("bitnetcpp/tl/tiny-f32.gguf"));
    REQUIRE(f);
    const gguf_tensor* t = f->find_tensor("blk.0.ffn_down.weight");
    REQUIRE(t != nullptr);
    auto w = decode_float_ternary(*t);
    REQUIRE(w);
    CHECK(w->rows == 256);
    CHECK(w->cols == 384);
    float first = 0;
    std::memcpy(&first, t->data, 4);
    CHECK(first == w->scale * w->values[0]);
    // Not ternary: the F32 token embedding.
    auto e = decode_float_ternary(*f->find_tensor("token_embd.weight"));
    REQUIRE_FALSE(e);
    CHECK(e.error().value() == errc::unsupported);
    CHECK(contains(e.error().message, "token_embd.weight"));
}

TEST_CASE("decode_float_ternary accepts exact ternary F32/F16 and names the first offender") {
    SUBCASE("F32 exact") {
        const std::vector<float> v{0.25f, -0.25f, 0.0f, -0.0f, 0.25f, 0.0f};
        const auto bytes = to_bytes(v);
        auto w = decode_float_ternary(make_tensor("w.f32", ggml_type::f32, 3, 2, bytes));
        REQUIRE(w);
        CHECK(w->scale == 0.25f);
        CHECK(w->values == std::vector<std::int8_t>{1, -1, 0, 0, 1, 0});
    }
    SUBCASE("F16 exact") {
        const std::vector<std::uint16_t> v{f32_to_f16(-0.5f), f32_to_f16(0.0f), f32_to_f16(0.5f),
                                           f32_to_f16(0.5f)};
        const auto bytes = to_bytes(v);
        auto w = decode_float_ternary(make_tensor("w.f16", ggml_type::f16, 2, 2, bytes));
        REQUIRE(w);
        CHECK(w->scale == 0.5f);
        CHECK(w->values == std::vector<std::int8_t>{-1, 0, 1, 1});
    }
    SUBCASE("all zero") {
        const std::vector<float> v(4, 0.0f);
        const auto bytes = to_bytes(v);
        auto w = decode_float_ternary(make_tensor("w", ggml_type::f32, 2, 2, bytes));
        REQUIRE(w);
        CHECK(w->scale == 0.0f);
    }
    SUBCASE("a value between 0 and the scale") {
        const std::vector<float> v{1.0f, 0.0f, -1.0f, 0.0f, 0.5f, 1.0f};
        const auto bytes = to_bytes(v);
        auto r =
            decode_float_ternary(make_tensor("blk.3.attn_q.weight", ggml_type::f32, 3, 2, bytes));
        REQUIRE_FALSE(r);
        CHECK(r.error().value() == errc::unsupported);
        const std::string& msg = r.error().message;
        CAPTURE(msg);
        CHECK(contains(msg, "blk.3.attn_q.weight"));
        CHECK(contains(msg, "element 4"));
        CHECK(contains(msg, "0.5"));
    }
    SUBCASE("NaN") {
        const std::vector<float> v{1.0f, std::numeric_limits<float>::quiet_NaN()};
        const auto bytes = to_bytes(v);
        auto r = decode_float_ternary(make_tensor("w", ggml_type::f32, 2, 1, bytes));
        REQUIRE_FALSE(r);
        CHECK(contains(r.error().message, "element 1"));
    }
    SUBCASE("not a float type") {
        std::vector<std::uint8_t> bytes(128 / 4 + 32, 0);
        auto r = decode_float_ternary(make_tensor("w", ggml_type::i2_s, 128, 1, bytes));
        REQUIRE_FALSE(r);
        CHECK(r.error().value() == errc::unsupported);
    }
}
