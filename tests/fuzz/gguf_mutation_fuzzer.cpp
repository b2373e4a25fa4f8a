// In-tree mutation fuzzer for the GGUF reader (no clang needed): mutates valid seed files (a file
// with every metadata type, and the header region of bitnet.cpp's tiny model) with bit flips,
// interesting integers, truncation, chunk insertion/removal and splicing, for a bounded time.
// Usage: fuzz_gguf SECONDS SEED [FILE...]; exits non-zero only by crashing (what ASan reports).
#include "byte_mutator.hpp"
#include "gguf_fuzz_target.hpp"
#include "model/gguf/gguf_writer.hpp"

#include <chrono>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

using namespace bitnet;

namespace {

std::vector<std::uint8_t> synthetic_seed() {
    model::gguf_writer w;
    w.add("general.architecture", model::gguf_value::string("bitnet-b1.58"));
    w.add("u32", model::gguf_value::u32(7));
    w.add("i32", model::gguf_value::i32(-7));
    w.add("f32", model::gguf_value::f32(0.5f));
    w.add("b", model::gguf_value::boolean(true));
    w.add("strs", model::gguf_value::strings({"a", "bc", ""}));
    w.add("f32s", model::gguf_value::f32s({1, 2, 3}));
    w.add("i32s", model::gguf_value::i32s({-1, 2}));
    w.add_tensor("t.i2s", model::ggml_type::i2_s, 2, {128, 2, 1, 1});
    w.add_tensor("t.f16", model::ggml_type::f16, 1, {8, 1, 1, 1});
    w.add_tensor("t.tl2", model::ggml_type::tl2, 2, {256, 32, 1, 1});
    std::vector<std::vector<std::uint8_t>> data;
    data.emplace_back(128 * 2 / 4 + 32, 0x5a);
    data.emplace_back(16, 0x3c);
    data.emplace_back(model::tensor_nbytes(model::ggml_type::tl2, {256, 32, 1, 1}).value(), 1);
    return w.to_bytes(data).value();
}

std::vector<std::uint8_t> read_prefix(const std::string& path, std::size_t max) {
    std::ifstream in(path, std::ios::binary);
    std::vector<std::uint8_t> b(max);
    in.read(reinterpret_cast<char*>(b.data()), static_cast<std::streamsize>(max));
    b.resize(static_cast<std::size_t>(in.gcount()));
    return b;
}

} // namespace

int main(int argc, char** argv) {
    const double seconds = argc > 1 ? std::stod(argv[1]) : 10.0;
    const std::uint64_t seed = argc > 2 ? std::stoull(argv[2]) : 1;
    std::vector<std::vector<std::uint8_t>> pool = {synthetic_seed()};
    for (int i = 3; i < argc; ++i) {
        // Large model files: the header and metadata region is where the parser works; keep the
        // first 512 KiB (tensor offsets then point past the end, which is itself a case).
        auto b = read_prefix(argv[i], 512 * 1024);
        if (!b.empty())
            pool.push_back(std::move(b));
    }
    for (const auto& s : pool)
        fuzz::check_gguf_bytes(s);

    fuzz::byte_mutator m(seed);
    const auto runs = fuzz::run_mutations(seconds, m, pool, std::size_t{1} << 30,
                                          [](const auto& bytes) { fuzz::check_gguf_bytes(bytes); });
    std::cout << "fuzz_gguf: " << runs << " inputs in " << seconds << " s (seed " << seed
              << "), no crash\n";
    return 0;
}
