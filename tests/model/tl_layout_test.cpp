// TL1/TL2 decoding against bitnet.cpp's own files: every TL tensor must equal its F32 twin, wrong
// kernel parameters must not, and shapes without parameters are refused. Also the
// kernel_config.ini parser and the parameter constraints.
#include "model/engine/weights/tl_layout.hpp"

#include "model/engine/weights/ternary_weights.hpp"
#include "model/gguf/gguf_reader.hpp"
#include "support/test_data.hpp"

#include <doctest/doctest.h>

#include <string>
#include <tuple>
#include <vector>

using namespace bitnet;
using namespace bitnet::model;

namespace {

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

gguf_file open_fixture(const std::string& rel) {
    auto f = gguf_file::open(test::data_path(rel));
    REQUIRE_MESSAGE(f, rel);
    return std::move(*f);
}

tl_param_table fixture_params(tl_format f) {
    const std::string rel = f == tl_format::tl1 ? "bitnetcpp/tl/kernel_config_tl1.ini"
                                                : "bitnetcpp/tl/kernel_config_tl2.ini";
    auto t = load_kernel_config_ini(test::data_path(rel), f);
    REQUIRE_MESSAGE(t, rel);
    return std::move(*t);
}

// The tensors of `f` stored as `type` (the 14 projections of the tiny model).
std::vector<const gguf_tensor*> tensors_of(const gguf_file& f, ggml_type type) {
    std::vector<const gguf_tensor*> out;
    for (const auto& t : f.tensors())
        if (t.type == type)
            out.push_back(&t);
    return out;
}

ternary_matrix twin_of(const gguf_file& f32, const gguf_tensor& t) {
    const gguf_tensor* twin = f32.find_tensor(t.name);
    REQUIRE_MESSAGE(twin != nullptr, std::string(t.name));
    auto w = decode_float_ternary(*twin);
    REQUIRE_MESSAGE(w, std::string(t.name));
    return std::move(*w);
}

// Decodes every projection of the TL file and compares it with the F32 twin.
void check_file_matches_twin(const std::string& rel, ggml_type type, tl_format format) {
    const auto f32 = open_fixture("bitnetcpp/tl/tiny-f32.gguf");
    const auto tl = open_fixture(rel);
    const auto params = fixture_params(format);
    const auto tensors = tensors_of(tl, type);
    REQUIRE(tensors.size() == 14);
    for (const auto* t : tensors) {
        CAPTURE(std::string(t->name));
        const ternary_matrix want = twin_of(f32, *t);
        auto got = decode_tl(*t, params);
        REQUIRE(got);
        CHECK(got->rows == want.rows);
        CHECK(got->cols == want.cols);
        CHECK(got->scale == want.scale);
        CHECK(got->scale > 0.0f);
        CHECK(got->values == want.values);
    }
}

// Parameter sets near the right one: each must either be refused or decode to other weights.
std::vector<tl_params> wrong_variants(tl_format f, const tl_params& p) {
    std::vector<tl_params> v{
        {p.bm * 2, p.bk, p.bmm},
        {p.bm / 2, p.bk, p.bmm},
        {p.bm, p.bk * 2, p.bmm},
        {p.bm, p.bk / 2, p.bmm},
    };
    if (f == tl_format::tl1)
        v.push_back({p.bm, p.bk, p.bmm == 64 ? 32u : 64u}); // bm halved or doubled
    return v;
}

void check_wrong_params_fail(const std::string& rel, ggml_type type, tl_format format) {
    const auto f32 = open_fixture("bitnetcpp/tl/tiny-f32.gguf");
    const auto tl = open_fixture(rel);
    const auto params = fixture_params(format);
    for (const auto* t : tensors_of(tl, type)) {
        CAPTURE(std::string(t->name));
        const ternary_matrix want = twin_of(f32, *t);
        const tl_params* right = params.find(format, want.rows, want.cols);
        REQUIRE(right != nullptr);
        int n_decoded = 0;
        for (const auto& p : wrong_variants(format, *right)) {
            tl_param_table one;
            if (!one.add(format, want.rows, want.cols, p))
                continue; // breaks a constraint: cannot even be tried
            CAPTURE(p.bm);
            CAPTURE(p.bk);
            CAPTURE(p.bmm);
            auto got = decode_tl(*t, one);
            if (!got)
                continue;
            ++n_decoded;
            CHECK(got->values != want.values);
        }
        // The test is only meaningful if some valid wrong parameters really decode.
        CHECK(n_decoded >= 1);
    }
}

} // namespace

TEST_CASE("every TL1 tensor of bitnet.cpp's file decodes to exactly its F32 twin") {
    check_file_matches_twin("bitnetcpp/tl/tiny-tl1.gguf", ggml_type::tl1, tl_format::tl1);
}

TEST_CASE("every TL2 tensor of bitnet.cpp's file decodes to exactly its F32 twin") {
    check_file_matches_twin("bitnetcpp/tl/tiny-tl2.gguf", ggml_type::tl2, tl_format::tl2);
}

TEST_CASE("TL1 with wrong kernel parameters does not reproduce the weights") {
    check_wrong_params_fail("bitnetcpp/tl/tiny-tl1.gguf", ggml_type::tl1, tl_format::tl1);
}

TEST_CASE("TL2 with wrong kernel parameters does not reproduce the weights") {
    check_wrong_params_fail("bitnetcpp/tl/tiny-tl2.gguf", ggml_type::tl2, tl_format::tl2);
}

TEST_CASE("TL1 bm halved and BK doubled are valid parameters that scramble the weights") {
    // The two mistakes named in the brief, on the 256x256 attention shape (BM 128, BK 64, bm 64).
    const auto f32 = open_fixture("bitnetcpp/tl/tiny-f32.gguf");
    const auto tl = open_fixture("bitnetcpp/tl/tiny-tl1.gguf");
    const gguf_tensor* t = tl.find_tensor("blk.0.attn_q.weight");
    REQUIRE(t != nullptr);
    const ternary_matrix want = twin_of(f32, *t);
    for (const tl_params p : {tl_params{128, 64, 32}, tl_params{128, 128, 64}}) {
        tl_param_table one;
        REQUIRE(one.add(tl_format::tl1, 256, 256, p));
        auto got = decode_tl(*t, one);
        REQUIRE(got);
        std::size_t same = 0;
        for (std::size_t i = 0; i < want.values.size(); ++i)
            same += got->values[i] == want.values[i];
        CHECK(same < want.values.size() * 9 / 10);
    }
}

TEST_CASE("TL files read without kernel parameters are refused naming tensor, shape and format") {
    for (const auto& [rel, type, name] :
         {std::tuple{"bitnetcpp/tl/tiny-tl1.gguf", ggml_type::tl1, "TL1"},
          std::tuple{"bitnetcpp/tl/tiny-tl2.gguf", ggml_type::tl2, "TL2"}}) {
        const auto tl = open_fixture(rel);
        const tl_param_table empty;
        for (const tl_param_table* table : {&empty, &tl_param_table::builtin()}) {
            const gguf_tensor* t = tl.find_tensor("blk.1.ffn_down.weight");
            REQUIRE(t != nullptr);
            auto r = decode_tl(*t, *table);
            REQUIRE_FALSE(r);
            CHECK(r.error().value() == errc::unsupported_shape);
            const std::string& msg = r.error().message;
            CAPTURE(msg);
            CHECK(contains(msg, "blk.1.ffn_down.weight"));
            CHECK(contains(msg, "256×384"));
            CHECK(contains(msg, name));
            CHECK(contains(msg, "kernel_config.ini"));
        }
    }
}

TEST_CASE("TL → ternary → I2_S → ternary equals the F32 twin") {
    const auto f32 = open_fixture("bitnetcpp/tl/tiny-f32.gguf");
    for (const auto& [rel, type, format] :
         {std::tuple{"bitnetcpp/tl/tiny-tl1.gguf", ggml_type::tl1, tl_format::tl1},
          std::tuple{"bitnetcpp/tl/tiny-tl2.gguf", ggml_type::tl2, tl_format::tl2}}) {
        const auto tl = open_fixture(rel);
        const auto params = fixture_params(format);
        for (const auto* t : tensors_of(tl, type)) {
            CAPTURE(std::string(t->name));
            auto w = decode_tl(*t, params);
            REQUIRE(w);
            auto bytes = encode_i2s(*w);
            REQUIRE(bytes);
            gguf_tensor i2s;
            i2s.name = t->name;
            i2s.type = ggml_type::i2_s;
            i2s.n_dims = 2;
            i2s.ne = t->ne;
            i2s.n_bytes = bytes->size();
            i2s.data = bytes->data();
            CHECK(bytes->size() == tensor_nbytes(ggml_type::i2_s, t->ne).value());
            auto back = decode_i2s(i2s);
            REQUIRE(back);
            const ternary_matrix want = twin_of(f32, *t);
            CHECK(back->scale == want.scale);
            CHECK(back->values == want.values);
        }
    }
}

TEST_CASE("kernel_config.ini: bitnet.cpp's files parse to the documented parameters") {
    const auto tl1 = fixture_params(tl_format::tl1);
    const auto tl2 = fixture_params(tl_format::tl2);
    CHECK(tl1.entries().size() == 3);
    CHECK(tl2.entries().size() == 3);
    // README table: 256x256, 384x256 and 256x384 (M x K).
    CHECK(*tl1.find(tl_format::tl1, 256, 256) == tl_params{128, 64, 64});
    CHECK(*tl1.find(tl_format::tl1, 384, 256) == tl_params{128, 128, 32});
    CHECK(*tl1.find(tl_format::tl1, 256, 384) == tl_params{256, 128, 32});
    CHECK(*tl2.find(tl_format::tl2, 256, 256) == tl_params{128, 96, 32});
    CHECK(*tl2.find(tl_format::tl2, 384, 256) == tl_params{128, 192, 32});
    CHECK(*tl2.find(tl_format::tl2, 256, 384) == tl_params{256, 96, 32});
    // The file names no format: entries belong to the one the caller gave.
    CHECK(tl1.find(tl_format::tl2, 256, 256) == nullptr);
}

TEST_CASE("kernel_config.ini: comments, colons, upper-case keys and CRLF are accepted") {
    auto t = parse_kernel_config_ini("# generated\r\n[Kernels_0]\r\nM = 256\r\nK: 256\r\n"
                                     "; note\r\nBM=128\r\nbk = 64\r\nbmm = 64\r\n",
                                     tl_format::tl1);
    REQUIRE(t);
    CHECK(*t->find(tl_format::tl1, 256, 256) == tl_params{128, 64, 64});
}

TEST_CASE("kernel_config.ini: malformed files are refused with the line or section") {
    const auto err = [](std::string_view text, tl_format f = tl_format::tl1) {
        auto r = parse_kernel_config_ini(text, f);
        REQUIRE_FALSE(r);
        return r.error();
    };
    SUBCASE("missing key") {
        auto e = err("[Kernels_0]\nm = 256\nk = 256\nbm = 128\nbk = 64\n");
        CHECK(e.value() == errc::bad_format);
        CHECK(contains(e.message, "Kernels_0"));
        CHECK(contains(e.message, "'bmm'"));
    }
    SUBCASE("non-number") {
        auto e = err("[Kernels_0]\nm = 256\nk = 25x6\nbm = 128\nbk = 64\nbmm = 64\n");
        CHECK(e.value() == errc::bad_format);
        CHECK(contains(e.message, "line 3"));
        CHECK(contains(e.message, "25x6"));
    }
    SUBCASE("negative number") {
        CHECK(err("[Kernels_0]\nm = -256\n").value() == errc::bad_format);
    }
    SUBCASE("empty value") {
        CHECK(err("[Kernels_0]\nm =\n").value() == errc::bad_format);
    }
    SUBCASE("duplicate shape") {
        auto e = err("[Kernels_0]\nm=256\nk=256\nbm=128\nbk=64\nbmm=64\n"
                     "[Kernels_1]\nm=256\nk=256\nbm=128\nbk=64\nbmm=64\n");
        CHECK(e.value() == errc::invalid_argument);
        CHECK(contains(e.message, "Kernels_1"));
        CHECK(contains(e.message, "256×256"));
    }
    SUBCASE("repeated key") {
        CHECK(contains(err("[Kernels_0]\nm=256\nm=512\n").message, "repeated"));
    }
    SUBCASE("unknown key") {
        CHECK(contains(err("[Kernels_0]\nbn=256\n").message, "unknown key 'bn'"));
    }
    SUBCASE("key before any section") {
        CHECK(err("m = 256\n").value() == errc::bad_format);
    }
    SUBCASE("line without '='") {
        CHECK(contains(err("[Kernels_0]\nm 256\n").message, "line 2"));
    }
    SUBCASE("no sections") {
        CHECK(err("# nothing\n").value() == errc::bad_format);
    }
    SUBCASE("constraint violation names the rule") {
        // TL1 bm must be 32 or 64.
        auto e = err("[Kernels_0]\nm=256\nk=256\nbm=128\nbk=64\nbmm=16\n");
        CHECK(e.value() == errc::unsupported_shape);
        CHECK(contains(e.message, "bm ∈ {32, 64}"));
        // TL2 BK must be a multiple of 24, not only of 6.
        e = err("[Kernels_0]\nm=256\nk=256\nbm=128\nbk=30\nbmm=32\n", tl_format::tl2);
        CHECK(contains(e.message, "BK % 24 == 0"));
    }
    SUBCASE("missing file") {
        auto r =
            load_kernel_config_ini(test::data_path("bitnetcpp/tl/no-such.ini"), tl_format::tl1);
        REQUIRE_FALSE(r);
        CHECK(r.error().value() == errc::io_error);
    }
}

TEST_CASE("TL parameter constraints are enforced") {
    const auto bad = [](tl_format f, std::uint32_t m, std::uint32_t k, tl_params p,
                        const std::string& rule) {
        auto r = validate_tl_params(f, m, k, p);
        REQUIRE_FALSE(r);
        CHECK(r.error().value() == errc::unsupported_shape);
        CAPTURE(r.error().message);
        CHECK(contains(r.error().message, rule));
    };
    CHECK(validate_tl_params(tl_format::tl1, 256, 256, {128, 64, 64}));
    bad(tl_format::tl1, 256, 256, {96, 64, 32}, "M % BM == 0");
    bad(tl_format::tl1, 256, 256, {128, 96, 32}, "K % BK == 0");
    bad(tl_format::tl1, 192, 256, {96, 64, 64}, "BM % bm == 0");
    bad(tl_format::tl1, 256, 256, {128, 64, 128}, "bm ∈ {32, 64}");
    bad(tl_format::tl1, 256, 256, {128, 4, 32}, "BK % by == 0");
    bad(tl_format::tl1, 256, 256, {0, 64, 32}, "BM, BK, bm > 0");
    CHECK(validate_tl_params(tl_format::tl2, 256, 384, {256, 96, 32}));
    bad(tl_format::tl2, 256, 256, {128, 96, 64}, "bm == 32");
    bad(tl_format::tl2, 256, 256, {96, 96, 32}, "M % BM == 0");
    bad(tl_format::tl2, 240, 256, {240, 96, 32}, "BM % 32 == 0");
    bad(tl_format::tl2, 256, 256, {128, 90, 32}, "BK % 24 == 0");
    bad(tl_format::tl2, 256, 256, {128, 240, 32}, "(K % BK) % 32 == 0");
}

TEST_CASE("the built-in table holds the published models' TL1 and TL2 parameters") {
    const auto& t = tl_param_table::builtin();
    // 3 shapes (large) + 3 (3B) + 4 (Llama3-8B), each for TL1 and TL2; add() validated every one.
    CHECK(t.entries().size() == 20);
    CHECK(*t.find(tl_format::tl1, 1536, 1536) == tl_params{128, 64, 64});
    CHECK(*t.find(tl_format::tl2, 1536, 1536) == tl_params{128, 192, 32});
    CHECK(*t.find(tl_format::tl1, 3200, 8640) == tl_params{160, 64, 32});
    CHECK(*t.find(tl_format::tl2, 8640, 3200) == tl_params{320, 96, 32});
    CHECK(*t.find(tl_format::tl1, 4096, 14336) == tl_params{128, 64, 64});
    CHECK(*t.find(tl_format::tl2, 1024, 4096) == tl_params{256, 96, 32});
    for (const auto& e : t.entries())
        CHECK(validate_tl_params(e.format, e.m, e.k, e.params));
    // 2B-4T shapes are not there (bitnet.cpp generates none for them).
    CHECK(t.find(tl_format::tl2, 2560, 2560) == nullptr);
}

TEST_CASE("tl_param_table merge keeps equal entries and refuses conflicts") {
    tl_param_table a = tl_param_table::builtin();
    auto ini = fixture_params(tl_format::tl1);
    REQUIRE(a.merge(ini));
    CHECK(a.entries().size() == 23);
    REQUIRE(a.merge(ini)); // same entries again: nothing new
    CHECK(a.entries().size() == 23);
    tl_param_table other;
    REQUIRE(other.add(tl_format::tl1, 256, 256, {256, 64, 64}));
    auto r = a.merge(other);
    REQUIRE_FALSE(r);
    CHECK(contains(r.error().message, "conflict"));
    CHECK(a.entries().size() == 23);
}
