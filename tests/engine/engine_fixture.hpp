// Shared set-up for engine tests: synthetic models written by the project's own tool into a
// scratch directory, loading, and a plain greedy loop over the engine's step API.
#pragma once

#include "model/engine/engine.hpp"
#include "support/test_data.hpp"
#include "tools/model_synth.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace bitnet::test {

/// Writes a synthetic model (shape `tiny` unless given) and returns its path inside `dir`.
inline std::string make_model(const scratch_dir& dir, const std::string& arch,
                              std::uint64_t seed = 1, const std::string& shape = "tiny",
                              const std::string& format = "i2_s") {
    tools::synth_options opt;
    opt.arch = arch;
    opt.format = format;
    auto s = tools::find_shape(shape);
    REQUIRE(s);
    opt.shape = *s;
    opt.tokenizer = tools::byte_level_tokenizer(opt.shape.n_vocab);
    opt.seed = seed;
    const std::string path =
        dir.file(arch + "-" + shape + "-" + format + "-" + std::to_string(seed) + ".gguf");
    auto written = tools::write_synthetic_model(opt, path);
    REQUIRE_MESSAGE(written, written.error());
    return path;
}

/// The engine `opt` describes; the test stops when it does not load.
inline std::unique_ptr<model::engine> load_engine_with(const model::engine_options& opt) {
    auto e = model::engine::load(opt);
    REQUIRE_MESSAGE(e, (e ? std::string() : e.error().to_string()));
    return std::move(*e);
}

/// Test defaults: 2 threads, a 64 MiB KV pool.
inline model::engine_options test_engine_options(const std::string& path, int threads = 2,
                                                 std::uint64_t kv_bytes = 64ull << 20) {
    model::engine_options opt;
    opt.model_path = path;
    opt.n_threads = threads;
    opt.kv_budget_bytes = kv_bytes;
    return opt;
}

inline std::unique_ptr<model::engine> load_engine(const std::string& path, int threads = 2,
                                                  std::uint64_t kv_bytes = 64ull << 20,
                                                  const std::string& tl_config = {}) {
    auto opt = test_engine_options(path, threads, kv_bytes);
    opt.tl_kernel_config = tl_config;
    return load_engine_with(opt);
}

/// Top-1 logit minus top-2: how close a greedy choice was.
inline float top2_margin(std::span<const float> row) {
    float a = -INFINITY, b = -INFINITY;
    for (float v : row) {
        if (v > a) {
            b = a;
            a = v;
        } else if (v > b) {
            b = v;
        }
    }
    return a - b;
}

inline std::int32_t argmax(std::span<const float> row) {
    return static_cast<std::int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

/// Greedy generation of one sequence alone: the prompt as one chunk, then token by token.
inline std::vector<std::int32_t> greedy_alone(model::engine& e, model::seq_id seq,
                                              const std::vector<std::int32_t>& prompt,
                                              std::size_t n) {
    std::vector<std::int32_t> out;
    model::seq_chunk c{seq, prompt, 0, true};
    for (std::size_t i = 0; i < n; ++i) {
        auto r = e.step(std::span<const model::seq_chunk>(&c, 1));
        REQUIRE_MESSAGE(r, (r ? std::string() : r.error().to_string()));
        const std::int32_t tok = argmax(r->row(0, e.config().n_vocab));
        out.push_back(tok);
        c.pos0 += static_cast<std::uint32_t>(c.tokens.size());
        c.tokens = {tok};
    }
    e.release(seq);
    return out;
}

/// Feeds `tokens` in chunks of the given sizes (positions >= decoded_from computed as decodes,
/// seq_chunk::decoded_from) and returns the logits after the last token. The sequence stays in
/// the cache.
inline std::vector<float>
prefill_in_chunks(model::engine& e, model::seq_id seq, const std::vector<std::int32_t>& tokens,
                  const std::vector<std::size_t>& sizes,
                  std::uint32_t decoded_from = model::seq_chunk::never_decoded) {
    std::uint32_t pos = 0;
    std::vector<float> last;
    for (std::size_t n : sizes) {
        model::seq_chunk c{seq,
                           {tokens.begin() + pos, tokens.begin() + pos + static_cast<long>(n)},
                           pos,
                           pos + n == tokens.size(),
                           decoded_from};
        auto out = e.step(std::span<const model::seq_chunk>(&c, 1));
        REQUIRE_MESSAGE(out, (out ? std::string() : out.error().to_string()));
        pos += static_cast<std::uint32_t>(n);
        if (c.want_logits)
            last.assign(out->logits.begin(), out->logits.end());
    }
    REQUIRE(pos == tokens.size());
    return last;
}

/// Greedy tokens continuing `seq` (holding pos0 tokens) from the logits after its last token,
/// one token per step, `n` in all; releases the sequence.
inline std::vector<std::int32_t> continue_greedy(model::engine& e, model::seq_id seq,
                                                 std::uint32_t pos0, std::vector<float> logits,
                                                 std::size_t n) {
    std::vector<std::int32_t> out;
    for (std::size_t i = 0; i < n; ++i) {
        out.push_back(argmax(logits));
        if (i + 1 == n)
            break;
        model::seq_chunk c{seq, {out.back()}, pos0 + static_cast<std::uint32_t>(i), true};
        auto r = e.step(std::span<const model::seq_chunk>(&c, 1));
        REQUIRE_MESSAGE(r, (r ? std::string() : r.error().to_string()));
        logits.assign(r->logits.begin(), r->logits.end());
    }
    e.release(seq);
    return out;
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

} // namespace bitnet::test
