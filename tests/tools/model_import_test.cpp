// bitnet-model import: absmean ternarization as training does it, and a small float export turned
// into an I2_S GGUF whose every tensor is checked against the floats it came from.
#include "tools/model_import.hpp"

#include "model/engine/model_config.hpp"
#include "model/gguf/f16.hpp"
#include "model/gguf/gguf_reader.hpp"
#include "model/tokenizer/tokenizer.hpp"
#include "support/run_process.hpp"

#include <boost/json.hpp>
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>

using namespace bitnet;
namespace json = boost::json;

namespace {

// A byte-level BPE tokenizer.json without merges: 256 byte tokens (GPT-2 map) + BOS + EOS.
std::string tiny_tokenizer_json() {
    json::object vocab;
    std::uint32_t next = 256;
    for (std::uint32_t b = 0; b < 256; ++b) {
        const bool self = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
        const std::uint32_t cp = self ? b : next++;
        std::string s;
        if (cp < 0x80) {
            s.push_back(static_cast<char>(cp));
        } else {
            s.push_back(static_cast<char>(0xc0 | (cp >> 6)));
            s.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
        }
        vocab[s] = b;
    }
    json::array added;
    added.push_back({{"id", 256}, {"content", "<|begin_of_text|>"}, {"special", true}});
    added.push_back({{"id", 257}, {"content", "<|end_of_text|>"}, {"special", true}});
    const char* regex =
        R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
    json::object root{{"added_tokens", added},
                      {"normalizer", nullptr},
                      {"pre_tokenizer",
                       {{"type", "Sequence"},
                        {"pretokenizers", json::array{json::object{{"type", "Split"},
                                                                   {"pattern", {{"Regex", regex}}},
                                                                   {"behavior", "Isolated"}},
                                                      json::object{{"type", "ByteLevel"}}}}}},
                      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array{}}}}};
    return json::serialize(root);
}

struct export_fixture {
    test::scratch_dir dir;
    std::map<std::string, std::vector<float>> tensors;
    json::object manifest;

    // n_embd 128, 1 layer, 2 heads of 64, 1 KV head, n_ff 256, vocab 258.
    export_fixture() {
        std::uint64_t state = 12345;
        auto next = [&state] { // LCG -> uniform [-1, 1)
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            return static_cast<float>(static_cast<double>(state >> 11) * 0x1p-53 * 2.0 - 1.0);
        };
        const std::vector<std::pair<std::string, std::vector<std::uint64_t>>> shapes = {
            {"token_embd", {258, 128}},     {"output_norm", {128}},
            {"blk.0.attn_norm", {128}},     {"blk.0.attn_q", {128, 128}},
            {"blk.0.attn_k", {64, 128}},    {"blk.0.attn_v", {64, 128}},
            {"blk.0.attn_sub_norm", {128}}, {"blk.0.attn_output", {128, 128}},
            {"blk.0.ffn_norm", {128}},      {"blk.0.ffn_gate", {256, 128}},
            {"blk.0.ffn_up", {256, 128}},   {"blk.0.ffn_sub_norm", {256}},
            {"blk.0.ffn_down", {128, 256}},
        };
        json::array list;
        std::uint64_t offset = 0;
        std::ofstream blob(dir.file("weights.f32"), std::ios::binary);
        for (const auto& [name, shape] : shapes) {
            std::size_t n = 1;
            json::array js;
            for (auto d : shape) {
                n *= d;
                js.push_back(d);
            }
            std::vector<float> v(n);
            for (auto& x : v)
                x = next() * 0.05f;
            json::object e{{"name", name}, {"shape", js}, {"offset", offset}};
            if (shape.size() == 2 && name != "token_embd") {
                double s = 0;
                for (float x : v)
                    s += std::fabs(x);
                e["absmean"] = static_cast<float>(s / static_cast<double>(n));
            }
            blob.write(reinterpret_cast<const char*>(v.data()),
                       static_cast<std::streamsize>(n * 4));
            offset += n * 4;
            list.push_back(e);
            tensors[name] = std::move(v);
        }
        manifest = {{"format", "bitnet-serve-float-weights"},
                    {"version", 1},
                    {"architecture", "bitnet-b1.58"},
                    {"name", "import test"},
                    {"data", "weights.f32"},
                    {"tokenizer", "tok.json"},
                    {"config",
                     {{"n_vocab", 258},
                      {"n_embd", 128},
                      {"n_layer", 1},
                      {"n_head", 2},
                      {"n_head_kv", 1},
                      {"n_ff", 256},
                      {"n_ctx", 64},
                      {"rms_eps", 1e-5},
                      {"rope_base", 10000.0}}},
                    {"tensors", list}};
        std::ofstream(dir.file("tok.json")) << tiny_tokenizer_json();
        write_manifest();
    }
    void write_manifest() const {
        std::ofstream(dir.file("manifest.json")) << json::serialize(manifest);
    }
    [[nodiscard]] result<void> import(const std::string& out) const {
        return tools::import_float_model({dir.file("manifest.json"), "", out});
    }
};

} // namespace

TEST_CASE("ternarize_absmean divides by mean |W| and rounds half to even like torch.round") {
    // mean |w| = 8 / 8 = 1, so w / s = w.
    const std::vector<float> w = {2.0f, -2.0f, 0.5f, -0.5f, 1.5f, -1.0f, 0.25f, 0.25f};
    const auto t = tools::ternarize_absmean(w, 1, 8);
    CHECK(t.scale == 1.0f);
    CHECK(t.rows == 1);
    CHECK(t.cols == 8);
    // 0.5 -> 0 and -0.5 -> 0 (half to even, not away from zero); 1.5 -> 2 -> clamped to 1.
    CHECK(t.values == std::vector<std::int8_t>{1, -1, 0, 0, 1, -1, 0, 0});

    const std::vector<float> zeros(128, 0.0f);
    const auto z = tools::ternarize_absmean(zeros, 1, 128);
    CHECK(z.scale == doctest::Approx(1e-5f)); // the clamp keeps an all-zero tensor finite
    CHECK(std::all_of(z.values.begin(), z.values.end(), [](std::int8_t v) { return v == 0; }));
}

TEST_CASE("bitnet-model import writes every tensor as training's ternary/F16/F32 values") {
    export_fixture fx;
    const std::string out = fx.dir.file("m.gguf");
    REQUIRE(fx.import(out));

    auto f = model::gguf_file::open(out);
    REQUIRE(f);
    auto c = model::read_model_config(*f);
    REQUIRE(c);
    CHECK(c->arch_name == "bitnet-b1.58");
    CHECK(c->n_embd == 128);
    CHECK(c->n_head_kv == 1);
    auto vocab = model::read_tokenizer_vocab(*f);
    REQUIRE(vocab);
    CHECK(vocab->pre == "llama-bpe");
    CHECK(vocab->tokens.size() == 258);

    for (const auto& [name, floats] : fx.tensors) {
        CAPTURE(name);
        const auto* t = f->find_tensor(name + ".weight");
        REQUIRE(t);
        if (name == "token_embd") {
            REQUIRE(t->type == model::ggml_type::f16);
            std::vector<std::uint16_t> h(floats.size());
            std::memcpy(h.data(), t->data, h.size() * 2);
            for (std::size_t i = 0; i < h.size(); ++i)
                REQUIRE(h[i] == model::f32_to_f16(floats[i]));
        } else if (t->ne[1] == 1) {
            REQUIRE(t->type == model::ggml_type::f32);
            CHECK(std::memcmp(t->data, floats.data(), floats.size() * 4) == 0);
        } else {
            REQUIRE(t->type == model::ggml_type::i2_s);
            auto m = model::decode_i2s(*t);
            REQUIRE(m);
            const auto want = tools::ternarize_absmean(floats, static_cast<std::uint32_t>(t->ne[1]),
                                                       static_cast<std::uint32_t>(t->ne[0]));
            CHECK(m->scale == want.scale);
            CHECK(m->values == want.values);
            // Random weights: all three values occur.
            for (int v : {-1, 0, 1})
                CHECK(std::count(m->values.begin(), m->values.end(), v) > 0);
        }
    }
    auto v = test::run_tool("bitnet-cli", "verify " + out);
    CHECK_MESSAGE(v.exit_code == 0, v.err);
}

TEST_CASE("bitnet-model import refuses exports that do not match what training saw") {
    export_fixture fx;
    const std::string out = fx.dir.file("m.gguf");
    json::array& list = fx.manifest["tensors"].as_array();

    SUBCASE("a recorded absmean that differs from the weights") {
        list[3].as_object()["absmean"] = 0.5;
        fx.write_manifest();
        auto r = fx.import(out);
        REQUIRE_FALSE(r);
        CHECK(r.error().code == make_error_code(errc::invalid_argument));
        CHECK(r.error().message.find("blk.0.attn_q") != std::string::npos);
    }
    SUBCASE("a missing tensor") {
        list.erase(list.begin() + 5);
        fx.write_manifest();
        auto r = fx.import(out);
        REQUIRE_FALSE(r);
        CHECK(r.error().code == make_error_code(errc::bad_format));
        CHECK(r.error().message.find("blk.0.attn_v is missing") != std::string::npos);
    }
    SUBCASE("a shape the config does not imply") {
        list[3].as_object()["shape"] = json::array{128, 64};
        fx.write_manifest();
        auto r = fx.import(out);
        REQUIRE_FALSE(r);
        CHECK(r.error().code == make_error_code(errc::bad_format));
    }
    SUBCASE("a vocabulary size the tokenizer does not have") {
        fx.manifest["config"].as_object()["n_vocab"] = 300;
        fx.write_manifest();
        auto r = fx.import(out);
        REQUIRE_FALSE(r);
        CHECK(r.error().code == make_error_code(errc::invalid_argument));
    }
}
