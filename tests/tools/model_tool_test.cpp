// bitnet-model make and bitnet-cli inspect/verify through their command-line contract.
#include "model/engine/model_config.hpp"
#include "model/gguf/gguf_reader.hpp"
#include "model/gguf/gguf_writer.hpp"
#include "support/run_process.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace bitnet;

TEST_CASE("bitnet-model make writes valid models of every architecture and format") {
    test::scratch_dir dir;
    for (const char* arch : {"bitnet-b1.58", "bitnet-25", "bitnet", "llama"}) {
        for (const char* format : {"i2_s", "f32"}) {
            CAPTURE(arch);
            CAPTURE(format);
            const auto path = dir.file(std::string(arch) + "-" + format + ".gguf");
            auto r = test::run_tool("bitnet-model", std::string("make --arch ") + arch +
                                                        " --shape tiny --format " + format +
                                                        " --seed 3 -o " + path);
            REQUIRE_MESSAGE(r.exit_code == 0, r.err);
            auto v = test::run_tool("bitnet-cli", "verify " + path);
            CHECK_MESSAGE(v.exit_code == 0, v.err);
            auto f = model::gguf_file::open(path).value();
            auto c = model::read_model_config(f).value();
            CHECK(c.arch_name == arch);
            CHECK(c.n_embd == 256);
            const bool has_output = f.find_tensor("output.weight") != nullptr;
            CHECK(has_output == (std::string(arch) == "llama"));
            const auto* q = f.find_tensor("blk.1.attn_q.weight");
            REQUIRE(q);
            CHECK(q->type ==
                  (std::string(format) == "i2_s" ? model::ggml_type::i2_s : model::ggml_type::f32));
        }
    }
}

TEST_CASE("bitnet-model make is deterministic for a seed and differs across seeds") {
    test::scratch_dir dir;
    for (const char* name : {"a", "b", "c"}) {
        const std::string seed = std::string(name) == "c" ? "2" : "1";
        REQUIRE(test::run_tool("bitnet-model", "make --shape tiny --seed " + seed + " -o " +
                                                   dir.file(std::string(name) + ".gguf"))
                    .exit_code == 0);
    }
    const auto a = test::read_file(dir.file("a.gguf")), b = test::read_file(dir.file("b.gguf")),
               c = test::read_file(dir.file("c.gguf"));
    CHECK(a == b);
    CHECK(a.size() == c.size());
    CHECK(a != c);
}

TEST_CASE("the small shape has about 100M parameters and the I2_S scale slot holds the scale") {
    test::scratch_dir dir;
    const auto path = dir.file("small.gguf");
    REQUIRE(test::run_tool("bitnet-model", "make --shape small --seed 1 -o " + path).exit_code ==
            0);
    auto f = model::gguf_file::open(path).value();
    std::uint64_t params = 0;
    for (const auto& t : f.tensors())
        params += t.n_elements();
    CHECK(params > 90'000'000);
    CHECK(params < 110'000'000);
    const auto* down = f.find_tensor("blk.0.ffn_down.weight");
    REQUIRE(down);
    float scale = 0;
    std::memcpy(&scale, down->data + model::ternary_scale_offset(down->type, down->ne).value(), 4);
    CHECK(scale == doctest::Approx(1.0 / std::sqrt(2048 / 2.0)));
    // No code 3 anywhere: every byte holds four codes in {0, 1, 2}.
    for (std::uint64_t i = 0; i < down->n_bytes - 32; ++i)
        for (int s = 0; s < 8; s += 2)
            REQUIRE(((down->data[i] >> s) & 3) != 3);
}

TEST_CASE("bitnet-model rejects unknown shapes, architectures and formats") {
    CHECK(test::run_tool("bitnet-model", "make --shape huge -o x.gguf").exit_code != 0);
    auto r = test::run_tool("bitnet-model", "make --arch gpt2 -o x.gguf");
    CHECK(r.exit_code != 0);
    CHECK(r.err.find("unknown architecture 'gpt2'") != std::string::npos);
    CHECK(test::run_tool("bitnet-model", "make --format q4 -o x.gguf").exit_code != 0);
}

TEST_CASE("bitnet-cli verify exits 0 on a valid file and 1 with one line per violation") {
    auto ok = test::run_tool("bitnet-cli", "verify " + test::data_path("bitnetcpp/tiny-i2_s.gguf"));
    CHECK(ok.exit_code == 0);
    CHECK(ok.err.empty());

    // A copy with head_count_kv = 3 and one missing tensor: two violations, two lines.
    auto f = model::gguf_file::open(test::data_path("bitnetcpp/tiny-i2_s.gguf")).value();
    model::gguf_writer w;
    for (const auto& kv : f.metadata())
        w.add(std::string(kv.key), kv.key == "bitnet-25.attention.head_count_kv"
                                       ? model::gguf_value::u32(3)
                                       : model::gguf_value::from_view(kv.value));
    std::vector<std::vector<std::uint8_t>> data;
    for (const auto& t : f.tensors()) {
        if (t.name == "blk.1.ffn_up.weight")
            continue;
        w.add_tensor(std::string(t.name), t.type, t.n_dims, t.ne);
        data.emplace_back(t.data, t.data + t.n_bytes);
    }
    test::scratch_dir dir;
    const auto path = dir.file("broken.gguf");
    test::write_file(path, w.to_bytes(data).value());
    auto bad = test::run_tool("bitnet-cli", "verify " + path);
    CHECK(bad.exit_code == 1);
    CHECK(bad.err.find("head_count_kv 3") != std::string::npos);
    CHECK(std::count(bad.err.begin(), bad.err.end(), '\n') == 1); // config errors stop the map

    auto missing = test::run_tool("bitnet-cli", "verify " + dir.file("nope.gguf"));
    CHECK(missing.exit_code == 1);
    CHECK(missing.err.find("nope.gguf") != std::string::npos);
}

TEST_CASE("bitnet-cli inspect prints the architecture, hyper-parameters and tensor table") {
    auto r = test::run_tool("bitnet-cli", "inspect " + test::data_path("bitnetcpp/tiny-i2_s.gguf"));
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("architecture: bitnet-25") != std::string::npos);
    CHECK(r.out.find("n_head_kv 2") != std::string::npos);
    CHECK(r.out.find("blk.3.ffn_down.weight") != std::string::npos);
    CHECK(r.out.find("I2_S") != std::string::npos);
    CHECK(r.out.find("tokenizer: gpt2, pre-tokenizer (absent: DEFAULT), 8192 tokens") !=
          std::string::npos);
    CHECK(r.out.find("kernels") == std::string::npos); // timing is opt-in

    // --kernels loads the engine and prints the family each op runs, one line per op.
    auto k = test::run_tool("bitnet-cli", "inspect --kernels --threads 1 " +
                                              test::data_path("bitnetcpp/tiny-i2_s.gguf"));
    REQUIRE(k.exit_code == 0);
    CHECK(k.out.find("kernels (1 threads):") != std::string::npos);
    for (const char* op :
         {"ternary_gemv", "ternary_batched", "ternary_prefill", "logits_gemv", "logits_batched"})
        CHECK_MESSAGE(k.out.find(std::string("\n  ") + op + " ") != std::string::npos, op);
}
