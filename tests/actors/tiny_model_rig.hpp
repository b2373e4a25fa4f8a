// What the batcher-over-the-real-engine tests on bitnet.cpp's tiny file share (recompute and
// resume; shared KV): the file, the executor and batcher orders they start from, random prompts
// below the control ids, and the generated ids of a transcript. Each test keeps its own rig: they
// differ in where the KV pressure sits (the policy's budget or the engine's pool).
#pragma once

#include "actors/batcher_client.hpp"
#include "messages/orders.hpp"
#include "model/gguf/gguf_reader.hpp"
#include "model/tokenizer/tokenizer.hpp"
#include "support/test_data.hpp"

#include <memory>
#include <random>
#include <string>
#include <vector>

namespace bitnet::test {

inline const std::string tiny_model_path = data_path("bitnetcpp/tiny-i2_s.gguf");

/// A real executor on the tiny file: two threads, 4-token KV blocks, a 16 MiB pool.
inline msg::executor_order tiny_executor_order() {
    msg::executor_order eo;
    eo.alias = "tiny";
    eo.engine.model_path = tiny_model_path;
    eo.engine.n_threads = 2;
    eo.engine.kv_block_tokens = 4;
    eo.engine.kv_budget_bytes = 16ull << 20;
    return eo;
}

/// A batcher for it whose policy counts `kv_blocks` blocks of 4 tokens, with small batches so
/// that several requests share steps and pressure shows.
inline msg::batcher_order tiny_batcher_order(std::uint32_t kv_blocks) {
    msg::batcher_order bo;
    bo.model = "tiny";
    bo.policy.kv_block_tokens = 4;
    bo.policy.kv_blocks_total = kv_blocks;
    bo.policy.n_ctx = 512;
    bo.policy.max_batch_seqs = 8;
    bo.policy.max_batch_tokens = 64;
    bo.policy.decoding_batch_tokens = 32;
    return bo;
}

/// `n` random token ids below the tiny vocabulary's control ids (BOS is 7936).
inline std::vector<msg::token_id> random_tokens(std::size_t n, std::mt19937_64& rng) {
    std::vector<msg::token_id> p(n);
    for (auto& t : p)
        t = static_cast<msg::token_id>(rng() % 7900);
    return p;
}

/// The tiny file's own tokenizer.
inline std::shared_ptr<const model::tokenizer> tiny_tokenizer() {
    auto file = model::gguf_file::open(tiny_model_path);
    REQUIRE(file);
    auto vocab = model::read_tokenizer_vocab(*file);
    REQUIRE(vocab);
    auto tok = model::tokenizer::create(std::move(*vocab));
    REQUIRE(tok);
    return std::make_shared<const model::tokenizer>(std::move(*tok));
}

/// A request of `prompt` for `max_tokens` tokens at `temperature` (0: greedy) with `seed`; the
/// API's defaults otherwise (top-k 40, top-p 0.95, ...).
inline msg::generate_request make_req(msg::request_id id, std::vector<msg::token_id> prompt,
                                      std::uint32_t max_tokens, float temperature,
                                      std::uint64_t seed) {
    msg::generate_request q;
    q.id = id;
    q.prompt = std::move(prompt);
    q.max_tokens = max_tokens;
    q.params.temperature = temperature;
    q.params.seed = seed;
    return q;
}

/// Token ids of a transcript's generated tokens (not its text-only tail).
inline std::vector<msg::token_id> generated_ids(const transcript& t) {
    std::vector<msg::token_id> out;
    for (const auto& e : t.tokens)
        if (e.token >= 0)
            out.push_back(e.token);
    return out;
}

} // namespace bitnet::test
