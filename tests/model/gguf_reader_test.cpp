// GGUF reader: round trips through the writer, bitnet.cpp's own file, and one test per class of
// malformed input (each must be refused with a message naming what and where).
#include "model/gguf/gguf_reader.hpp"

#include "model/gguf/gguf_writer.hpp"
#include "support/test_data.hpp"

#include <doctest/doctest.h>

#include <cstring>

using namespace bitnet;
using namespace bitnet::model;

namespace {

// A hand-rolled GGUF image builder, independent of gguf_writer, so malformed files can be made.
struct raw_gguf {
    std::vector<std::uint8_t> b;
    template <class T>
    raw_gguf& le(T v) {
        const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
        b.insert(b.end(), p, p + sizeof v);
        return *this;
    }
    raw_gguf& str(std::string_view s) {
        le<std::uint64_t>(s.size());
        b.insert(b.end(), s.begin(), s.end());
        return *this;
    }
    raw_gguf& header(std::uint64_t n_tensors, std::uint64_t n_kv, std::uint32_t version = 3) {
        b.insert(b.end(), {'G', 'G', 'U', 'F'});
        return le<std::uint32_t>(version).le<std::uint64_t>(n_tensors).le<std::uint64_t>(n_kv);
    }
    raw_gguf& kv_u32(std::string_view k, std::uint32_t v) {
        return str(k).le<std::uint32_t>(4).le(v);
    }
    raw_gguf& tensor(std::string_view name, std::uint64_t ne0, std::uint32_t type,
                     std::uint64_t off) {
        return str(name).le<std::uint32_t>(1).le(ne0).le(type).le(off);
    }
    raw_gguf& pad(std::size_t a) {
        b.resize((b.size() + a - 1) / a * a, 0);
        return *this;
    }
    raw_gguf& zeros(std::size_t n) {
        b.resize(b.size() + n, 0);
        return *this;
    }
};

std::string parse_error(const std::vector<std::uint8_t>& bytes) {
    auto r = gguf_file::parse(bytes);
    REQUIRE_FALSE(r);
    return r.error().message;
}

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

std::vector<std::uint8_t> iota_bytes(std::size_t n, std::uint8_t seed) {
    std::vector<std::uint8_t> v(n);
    for (std::size_t i = 0; i < n; ++i)
        v[i] = static_cast<std::uint8_t>(seed + i * 7);
    return v;
}

} // namespace

TEST_CASE("the writer's output reads back with every metadata type and tensor") {
    gguf_writer w;
    w.set_alignment(64);
    w.add("general.architecture", gguf_value::string("bitnet-b1.58"));
    w.add("a.u32", gguf_value::u32(4000000000u));
    w.add("a.i32", gguf_value::i32(-7));
    w.add("a.u64", gguf_value::u64(1ull << 40));
    w.add("a.f32", gguf_value::f32(1e-5f));
    w.add("a.bool", gguf_value::boolean(true));
    w.add("a.strings", gguf_value::strings({"<s>", "", "Ġhello", "\xe2\x96\x81x"}));
    w.add("a.f32s", gguf_value::f32s({0.5f, -1.25f}));
    w.add("a.i32s", gguf_value::i32s({1, -2, 3}));
    gguf_value u8s;
    u8s.type = gguf_value_type::array;
    u8s.array_type = gguf_value_type::u8;
    u8s.array_uints = {1, 255};
    w.add("a.u8s", u8s);
    w.add_tensor("w.f32", ggml_type::f32, 2, {3, 2, 1, 1});
    w.add_tensor("w.i2s", ggml_type::i2_s, 2, {128, 4, 1, 1});
    w.add_tensor("w.f16", ggml_type::f16, 1, {5, 1, 1, 1});
    const auto d0 = iota_bytes(24, 1), d1 = iota_bytes(128 * 4 / 4 + 32, 2), d2 = iota_bytes(10, 3);
    auto bytes = w.to_bytes({d0, d1, d2});
    REQUIRE(bytes);

    auto f = gguf_file::parse(*bytes);
    REQUIRE_MESSAGE(f, (f ? "" : f.error().to_string()));
    CHECK(f->version() == 3);
    CHECK(f->alignment() == 64);
    CHECK(f->data_offset() % 64 == 0);
    CHECK(f->get_string("general.architecture").value() == "bitnet-b1.58");
    CHECK(f->get_uint("a.u32").value() == 4000000000u);
    CHECK(f->get_int("a.i32").value() == -7);
    CHECK_FALSE(f->get_uint("a.i32")); // negative
    CHECK(f->get_uint("a.u64").value() == (1ull << 40));
    CHECK(f->get_float("a.f32").value() == doctest::Approx(1e-5).epsilon(1e-7));
    CHECK(f->get_bool("a.bool").value());
    CHECK(f->get_string_array("a.strings").value() ==
          std::vector<std::string_view>{"<s>", "", "Ġhello", "\xe2\x96\x81x"});
    CHECK(f->get_float_array("a.f32s").value() == std::vector<float>{0.5f, -1.25f});
    CHECK(f->get_int_array("a.i32s").value() == std::vector<std::int64_t>{1, -2, 3});
    CHECK(f->get_int_array("a.u8s").value() == std::vector<std::int64_t>{1, 255});
    CHECK(f->get_string("nope").error().value() == errc::not_found);
    CHECK(f->get_string("a.u32").error().value() == errc::bad_format);

    REQUIRE(f->tensors().size() == 3);
    const auto* t = f->find_tensor("w.i2s");
    REQUIRE(t != nullptr);
    CHECK(t->type == ggml_type::i2_s);
    CHECK(t->ne[0] == 128);
    CHECK(t->ne[1] == 4);
    CHECK(t->n_bytes == d1.size());
    CHECK(t->offset % 64 == 0);
    CHECK(std::vector<std::uint8_t>(t->data, t->data + t->n_bytes) == d1);
    CHECK(std::memcmp(f->find_tensor("w.f16")->data, d2.data(), d2.size()) == 0);
}

TEST_CASE("copying a file's metadata and tensors through the writer reproduces it byte for byte") {
    // bitnet.cpp's own file: the writer must lay out exactly what bitnet.cpp wrote.
    const auto original = test::read_file(test::data_path("bitnetcpp/tiny-i2_s.gguf"));
    REQUIRE(original.size() == 5'049'728);
    auto f = gguf_file::parse(original);
    REQUIRE_MESSAGE(f, (f ? "" : f.error().to_string()));
    gguf_writer w;
    w.set_alignment(f->alignment());
    std::vector<std::vector<std::uint8_t>> data;
    for (const auto& kv : f->metadata())
        if (kv.key != "general.alignment")
            w.add(std::string(kv.key), gguf_value::from_view(kv.value));
    for (const auto& t : f->tensors()) {
        w.add_tensor(std::string(t.name), t.type, t.n_dims, t.ne);
        data.emplace_back(t.data, t.data + t.n_bytes);
    }
    auto copy = w.to_bytes(data);
    REQUIRE(copy);
    CHECK(copy->size() == original.size());
    CHECK(*copy == original);
}

TEST_CASE("bitnet.cpp's tiny I2_S file opens with its tensors and tokenizer metadata") {
    auto f = gguf_file::open(test::data_path("bitnetcpp/tiny-i2_s.gguf"));
    REQUIRE_MESSAGE(f, (f ? "" : f.error().to_string()));
    CHECK(f->get_string("general.architecture").value() == "bitnet-25");
    CHECK(f->get_string("tokenizer.ggml.model").value() == "gpt2");
    CHECK(f->get_string_array("tokenizer.ggml.tokens").value().size() == 8192);
    CHECK(f->find("tokenizer.ggml.pre") == nullptr);
    CHECK(f->tensors().size() == 4 * 11 + 2); // 7 projections + 4 norms per layer
    int n_i2s = 0;
    for (const auto& t : f->tensors())
        n_i2s += t.type == ggml_type::i2_s;
    CHECK(n_i2s == 28);
    const auto* emb = f->find_tensor("token_embd.weight");
    REQUIRE(emb);
    CHECK(emb->type == ggml_type::f16);
    CHECK(emb->ne[0] == 256);
    CHECK(emb->ne[1] == 8192);
}

TEST_CASE("TL1 and TL2 files written by bitnet.cpp open with the fork's size rules") {
    for (const char* name : {"tiny-tl1.gguf", "tiny-tl2.gguf", "tiny-f32.gguf"}) {
        CAPTURE(name);
        auto f = gguf_file::open(test::data_path(std::string("bitnetcpp/tl/") + name));
        REQUIRE_MESSAGE(f, (f ? "" : f.error().to_string()));
        CHECK(f->get_string("general.architecture").value() == "bitnet");
        CHECK(f->tensors().size() == 24);
    }
}

TEST_CASE("malformed: bad magic, unsupported version, short header") {
    auto bytes = raw_gguf().header(0, 0).b;
    bytes[0] = 'X';
    CHECK(contains(parse_error(bytes), "bad magic at offset 0"));
    CHECK(contains(parse_error(raw_gguf().header(0, 0, 1).b), "unsupported GGUF version 1"));
    CHECK(gguf_file::parse(raw_gguf().header(0, 0, 2).b));
    CHECK(
        contains(parse_error({'G', 'G', 'U', 'F', 3, 0}), "shorter than the 24-byte GGUF header"));
}

TEST_CASE("malformed: truncated inside metadata and inside tensor data") {
    auto full = raw_gguf().header(1, 1).kv_u32("k", 1).tensor("t", 8, 0, 0).pad(32).zeros(32).b;
    REQUIRE(gguf_file::parse(full));
    for (std::size_t cut = 24; cut < full.size(); ++cut) {
        CAPTURE(cut);
        auto r = gguf_file::parse(std::span(full.data(), cut));
        CHECK_FALSE(r);
    }
    auto msg = parse_error(std::vector<std::uint8_t>(full.begin(), full.begin() + 30));
    CHECK(contains(msg, "truncated"));
    CHECK(contains(msg, "offset 24"));
    msg = parse_error(std::vector<std::uint8_t>(full.begin(), full.end() - 1));
    CHECK(contains(msg, "tensor 't'"));
    CHECK(contains(msg, "outside the data section"));
}

TEST_CASE("malformed: string and array lengths beyond the file") {
    auto s = raw_gguf().header(0, 1).str("k").le<std::uint32_t>(8).le<std::uint64_t>(1ull << 20).b;
    auto msg = parse_error(s);
    CHECK(contains(msg, "key 'k'"));
    CHECK(contains(msg, "remain"));
    auto a = raw_gguf()
                 .header(0, 1)
                 .str("arr")
                 .le<std::uint32_t>(9)
                 .le<std::uint32_t>(4)
                 .le<std::uint64_t>(1000)
                 .zeros(16)
                 .b;
    msg = parse_error(a);
    CHECK(contains(msg, "array of key 'arr'"));
    auto sa = raw_gguf()
                  .header(0, 1)
                  .str("sarr")
                  .le<std::uint32_t>(9)
                  .le<std::uint32_t>(8)
                  .le<std::uint64_t>(1ull << 24)
                  .zeros(16)
                  .b;
    CHECK(contains(parse_error(sa), "more than the file can hold"));
    auto key = raw_gguf().header(0, 1).le<std::uint64_t>(~0ull).b;
    CHECK(contains(parse_error(key), "metadata key at offset 24"));
}

TEST_CASE("malformed: absurd counts are refused before any allocation") {
    CHECK(contains(parse_error(raw_gguf().header(1ull << 62, 0).b), "tensor count"));
    CHECK(contains(parse_error(raw_gguf().header(0, 1ull << 62).b), "metadata count"));
    auto big_array = raw_gguf()
                         .header(0, 1)
                         .str("a")
                         .le<std::uint32_t>(9)
                         .le<std::uint32_t>(0)
                         .le<std::uint64_t>(1ull << 60)
                         .b;
    CHECK(contains(parse_error(big_array), "above the limit"));
}

TEST_CASE("malformed: unknown value types, nested arrays, bad bools") {
    CHECK(contains(parse_error(raw_gguf().header(0, 1).str("k").le<std::uint32_t>(13).b),
                   "unknown value type 13 for key 'k'"));
    CHECK(contains(parse_error(raw_gguf()
                                   .header(0, 1)
                                   .str("k")
                                   .le<std::uint32_t>(9)
                                   .le<std::uint32_t>(9)
                                   .le<std::uint64_t>(0)
                                   .b),
                   "nested arrays"));
    CHECK(contains(
        parse_error(raw_gguf().header(0, 1).str("k").le<std::uint32_t>(7).le<std::uint8_t>(2).b),
        "neither 0 nor 1"));
}

TEST_CASE("malformed: unknown tensor type ids name the tensor") {
    auto bytes =
        raw_gguf().header(1, 0).tensor("blk.0.attn_q.weight", 8, 37, 0).pad(32).zeros(32).b;
    auto msg = parse_error(bytes);
    CHECK(contains(msg, "blk.0.attn_q.weight"));
    CHECK(contains(msg, "unknown ggml type id 37"));
    bytes = raw_gguf().header(1, 0).tensor("x", 8, 99, 0).pad(32).zeros(32).b;
    CHECK(contains(parse_error(bytes), "type id 99"));
}

TEST_CASE("malformed: offsets outside the data section, misaligned and overlapping tensors") {
    auto outside = raw_gguf().header(1, 0).tensor("t", 8, 0, 1ull << 40).pad(32).zeros(32).b;
    CHECK(contains(parse_error(outside), "outside the data section"));
    auto misaligned = raw_gguf().header(1, 0).tensor("t", 8, 0, 4).pad(32).zeros(64).b;
    auto msg = parse_error(misaligned);
    CHECK(contains(msg, "not a multiple of the alignment 32"));
    CHECK(contains(msg, "tensor 't'"));
    auto overlap =
        raw_gguf().header(2, 0).tensor("a", 16, 0, 0).tensor("b", 8, 0, 32).pad(32).zeros(128).b;
    msg = parse_error(overlap);
    CHECK(contains(msg, "'a'"));
    CHECK(contains(msg, "'b'"));
    CHECK(contains(msg, "overlap"));
    auto bad_align = raw_gguf().header(0, 1).kv_u32("general.alignment", 24).b;
    CHECK(contains(parse_error(bad_align), "not a power of two"));
}

TEST_CASE("malformed: duplicate keys, duplicate tensor names, bad dimensions") {
    auto dup_key = raw_gguf().header(0, 2).kv_u32("k", 1).kv_u32("k", 2).b;
    CHECK(contains(parse_error(dup_key), "duplicate metadata key 'k'"));
    auto dup_t =
        raw_gguf().header(2, 0).tensor("t", 8, 0, 0).tensor("t", 8, 0, 32).pad(32).zeros(64).b;
    CHECK(contains(parse_error(dup_t), "duplicate tensor 't'"));
    auto dims = raw_gguf().header(1, 0).str("t").le<std::uint32_t>(5).b;
    CHECK(contains(parse_error(dims), "5 dimensions"));
    auto zero = raw_gguf().header(1, 0).tensor("t", 0, 0, 0).pad(32).b;
    CHECK(contains(parse_error(zero), "dimension 0 = 0"));
}

TEST_CASE("open reports a missing file with its path") {
    auto r = gguf_file::open("does-not-exist.gguf");
    REQUIRE_FALSE(r);
    CHECK(r.error().value() == errc::io_error);
    CHECK(contains(r.error().message, "does-not-exist.gguf"));
}

TEST_CASE("the writer refuses inconsistent input") {
    gguf_writer w;
    w.add("k", gguf_value::u32(1));
    w.add("k", gguf_value::u32(2));
    CHECK_FALSE(w.to_bytes({}));
    gguf_writer w2;
    w2.add_tensor("t", ggml_type::f32, 1, {4, 1, 1, 1});
    CHECK_FALSE(w2.to_bytes({{1, 2, 3}})); // 3 bytes for a 16-byte tensor
    gguf_writer w3;
    w3.add_tensor("t", ggml_type::f32, 1, {4, 1, 1, 1});
    CHECK_FALSE(w3.to_bytes({})); // declared but never written
}
