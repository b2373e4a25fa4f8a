// Architectures: bitnet.cpp's files configure correctly; broken hyper-parameters and tensors are
// reported with actionable messages.
#include "model/engine/model_config.hpp"

#include "model/gguf/gguf_writer.hpp"
#include "support/test_data.hpp"

#include <doctest/doctest.h>

using namespace bitnet;
using namespace bitnet::model;

namespace {

bool any_contains(const std::vector<std::string>& list, const std::string& part) {
    for (const auto& s : list)
        if (s.find(part) != std::string::npos)
            return true;
    return false;
}

// Rewrites bitnet.cpp's tiny file with edits to metadata (replace/drop) and tensors (drop/retype).
struct file_edit {
    std::vector<std::pair<std::string, gguf_value>> set = {};
    std::vector<std::string> drop_keys = {};
    std::vector<std::string> drop_tensors = {};
    std::string retype_tensor = {};
    ggml_type new_type = ggml_type::f32;
};

std::vector<std::uint8_t> edited_tiny(const file_edit& e) {
    static const auto original = test::read_file(test::data_path("bitnetcpp/tiny-i2_s.gguf"));
    auto f = gguf_file::parse(original).value();
    gguf_writer w;
    for (const auto& kv : f.metadata()) {
        const std::string key(kv.key);
        if (std::find(e.drop_keys.begin(), e.drop_keys.end(), key) != e.drop_keys.end())
            continue;
        bool replaced = false;
        for (const auto& [k, v] : e.set)
            if (k == key) {
                w.add(key, v);
                replaced = true;
            }
        if (!replaced)
            w.add(key, gguf_value::from_view(kv.value));
    }
    for (const auto& [k, v] : e.set)
        if (!f.find(k))
            w.add(k, v);
    std::vector<std::vector<std::uint8_t>> data;
    for (const auto& t : f.tensors()) {
        const std::string name(t.name);
        if (std::find(e.drop_tensors.begin(), e.drop_tensors.end(), name) != e.drop_tensors.end())
            continue;
        if (name == e.retype_tensor) {
            w.add_tensor(name, e.new_type, t.n_dims, t.ne);
            data.emplace_back(tensor_nbytes(e.new_type, t.ne).value(), 0);
            continue;
        }
        w.add_tensor(name, t.type, t.n_dims, t.ne);
        data.emplace_back(t.data, t.data + t.n_bytes);
    }
    return w.to_bytes(data).value();
}

} // namespace

TEST_CASE("bitnet.cpp's tiny I2_S file configures as bitnet-25 with the README's shape") {
    auto f = gguf_file::open(test::data_path("bitnetcpp/tiny-i2_s.gguf")).value();
    auto c = read_model_config(f);
    REQUIRE(c);
    CHECK(c->arch == architecture::bitnet_b158);
    CHECK(c->arch_name == "bitnet-25");
    CHECK(c->n_embd == 256);
    CHECK(c->n_layer == 4);
    CHECK(c->n_head == 4);
    CHECK(c->n_head_kv == 2);
    CHECK(c->head_dim == 64);
    CHECK(c->n_ff == 512);
    CHECK(c->n_vocab == 8192);
    CHECK(c->n_ctx_train == 4096);
    CHECK(c->rope_base == 500000.0f);
    CHECK(c->rms_eps == doctest::Approx(1e-5));
    CHECK(c->rope == rope_style::neox);
    CHECK(c->activation == ffn_activation::relu_sqr);
    CHECK(c->tied_output);
    auto m = map_model_tensors(f, *c);
    REQUIRE(m);
    REQUIRE(m->layers.size() == 4);
    CHECK(m->layers[3].w_down->ne[0] == 512);
    CHECK(m->layers[0].attn_sub_norm != nullptr);
    CHECK(m->output == nullptr);
    CHECK(verify_model(f).empty());
}

TEST_CASE("bitnet.cpp's TL1/TL2/F32 files configure as the SiLU bitnet architecture") {
    for (const char* name : {"tiny-f32.gguf", "tiny-tl1.gguf", "tiny-tl2.gguf"}) {
        CAPTURE(name);
        auto f = gguf_file::open(test::data_path(std::string("bitnetcpp/tl/") + name)).value();
        auto c = read_model_config(f);
        REQUIRE(c);
        CHECK(c->arch == architecture::bitnet);
        CHECK(c->activation == ffn_activation::silu);
        CHECK(c->n_ff == 384);
        CHECK(c->n_layer == 2);
        CHECK(c->n_vocab == 1000);
        CHECK(verify_model(f).empty());
    }
}

TEST_CASE("hyper-parameter violations are reported with the key and the value") {
    auto bytes = edited_tiny({.set = {{"bitnet-25.attention.head_count_kv", gguf_value::u32(3)}}});
    auto f = gguf_file::parse(bytes).value();
    auto v = verify_model(f);
    CHECK(any_contains(v, "head_count 4 is not a multiple of head_count_kv 3"));
    CHECK_FALSE(read_model_config(f));

    bytes = edited_tiny({.drop_keys = {"bitnet-25.attention.layer_norm_rms_epsilon"}});
    f = gguf_file::parse(bytes).value();
    CHECK(any_contains(verify_model(f),
                       "required key 'bitnet-25.attention.layer_norm_rms_epsilon' is missing"));

    bytes = edited_tiny({.set = {{"bitnet-25.rope.dimension_count", gguf_value::u32(32)}}});
    f = gguf_file::parse(bytes).value();
    CHECK(
        any_contains(verify_model(f), "rope.dimension_count 32 must equal the head dimension 64"));

    bytes = edited_tiny({.set = {{"general.architecture", gguf_value::string("gpt-neox")}}});
    f = gguf_file::parse(bytes).value();
    auto c = read_model_config(f);
    REQUIRE_FALSE(c);
    CHECK(c.error().value() == errc::unsupported);
    CHECK(c.error().message.find("'gpt-neox' is not supported") != std::string::npos);

    bytes = edited_tiny({.set = {{"bitnet-25.embedding_length", gguf_value::string("256")}}});
    f = gguf_file::parse(bytes).value();
    CHECK(any_contains(verify_model(f), "'bitnet-25.embedding_length' holds string"));
}

TEST_CASE("tensor violations name the tensor, its shape or type, and what was expected") {
    auto bytes = edited_tiny({.drop_tensors = {"blk.2.ffn_sub_norm.weight"}});
    auto f = gguf_file::parse(bytes).value();
    auto v = verify_model(f);
    CHECK(any_contains(v, "tensor 'blk.2.ffn_sub_norm.weight' [512] is missing"));
    auto c = read_model_config(f).value();
    CHECK_FALSE(map_model_tensors(f, c));

    bytes = edited_tiny({.retype_tensor = "blk.0.attn_q.weight", .new_type = ggml_type::q8_0});
    f = gguf_file::parse(bytes).value();
    CHECK(any_contains(verify_model(f), "'blk.0.attn_q.weight' has type Q8_0, expected I2_S"));

    bytes = edited_tiny({.retype_tensor = "output_norm.weight", .new_type = ggml_type::q8_0});
    f = gguf_file::parse(bytes).value();
    CHECK(any_contains(verify_model(f), "'output_norm.weight' has type Q8_0, expected F32"));

    // Vocabulary and embedding disagree.
    bytes = edited_tiny({.set = {{"bitnet-25.vocab_size", gguf_value::u32(8000)}}});
    f = gguf_file::parse(bytes).value();
    v = verify_model(f);
    CHECK(any_contains(v, "vocab_size 8000 differs from the 8192 tokens"));
}

TEST_CASE("I2_S projections need K to be a multiple of 128") {
    gguf_writer w;
    w.add("general.architecture", gguf_value::string("bitnet-b1.58"));
    const std::pair<const char*, std::uint32_t> hp[] = {{"context_length", 64},
                                                        {"embedding_length", 64},
                                                        {"block_count", 1},
                                                        {"feed_forward_length", 128},
                                                        {"attention.head_count", 2}};
    for (const auto& [k, val] : hp)
        w.add(std::string("bitnet-b1.58.") + k, gguf_value::u32(val));
    w.add("bitnet-b1.58.attention.layer_norm_rms_epsilon", gguf_value::f32(1e-5f));
    w.add("bitnet-b1.58.vocab_size", gguf_value::u32(16));
    const std::pair<const char*, tensor_shape> ts[] = {
        {"token_embd.weight", {64, 16, 1, 1}},        {"output_norm.weight", {64, 1, 1, 1}},
        {"blk.0.attn_norm.weight", {64, 1, 1, 1}},    {"blk.0.attn_q.weight", {64, 64, 1, 1}},
        {"blk.0.attn_k.weight", {64, 64, 1, 1}},      {"blk.0.attn_v.weight", {64, 64, 1, 1}},
        {"blk.0.attn_output.weight", {64, 64, 1, 1}}, {"blk.0.attn_sub_norm.weight", {64, 1, 1, 1}},
        {"blk.0.ffn_norm.weight", {64, 1, 1, 1}},     {"blk.0.ffn_gate.weight", {64, 128, 1, 1}},
        {"blk.0.ffn_up.weight", {64, 128, 1, 1}},     {"blk.0.ffn_down.weight", {128, 64, 1, 1}},
        {"blk.0.ffn_sub_norm.weight", {128, 1, 1, 1}}};
    std::vector<std::vector<std::uint8_t>> data;
    for (const auto& [name, ne] : ts) {
        const std::string_view n(name);
        const bool is_norm = n.find("norm") != std::string_view::npos;
        const auto type = n == "token_embd.weight" ? ggml_type::f16
                          : is_norm                ? ggml_type::f32
                                                   : ggml_type::i2_s;
        w.add_tensor(name, type, ne[1] == 1 ? 1 : 2, ne);
        data.emplace_back(tensor_nbytes(type, ne).value(), 0);
    }
    auto bytes = w.to_bytes(data).value();
    auto f = gguf_file::parse(bytes).value();
    auto v = verify_model(f);
    CHECK(any_contains(v, "I2_S tensor 'blk.0.attn_q.weight' has K = 64, not a multiple of 128"));
    CHECK(any_contains(v, "I2_S tensor 'blk.0.ffn_gate.weight' has K = 64"));
    CHECK_FALSE(any_contains(v, "ffn_down")); // K = 128 is fine
    CHECK(any_contains(v, "tokenizer metadata 'tokenizer.ggml.model' is missing"));
}
