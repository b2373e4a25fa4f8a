// A stand-in model::engine for tests of the actors that drive it (the engine is not what those
// tests are about). It enforces the engine contract the real one does: chunk positions continue
// each sequence's KV, token ids in range, KV blocks within the budget (kv_exhausted past it), and
// a failed step changes nothing.
// Its "model" predicts token (last + 1) % n_vocab, so generated sequences are easy to check; its
// vocabulary is fake_vocab.hpp's.
#pragma once

#include "actors/executor/engine_kinds.hpp"
#include "actors/fake_vocab.hpp"
#include "model/engine/engine.hpp"

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>

namespace bitnet::test {

struct fake_engine_probe {
    std::atomic<std::uint32_t> blocks_used{0};
    std::atomic<std::uint32_t> steps{0};
    std::atomic<std::uint32_t> live_seqs{0};
    /// A sequence id the engine fails every step for (0 = none): a fault of that sequence alone
    /// that no check before the step can see, as a real engine's could be.
    std::atomic<std::uint64_t> poison_seq{0};
    /// A sequence id whose steps block for stall_ms (0 = none): a stuck step, for the watchdog.
    std::atomic<std::uint64_t> stall_seq{0};
    std::atomic<int> stall_ms{0};
};

class fake_engine final : public model::engine {
public:
    fake_engine(std::uint32_t blocks_total, std::chrono::milliseconds step_delay,
                std::shared_ptr<fake_engine_probe> probe)
        : blocks_total_(blocks_total)
        , delay_(step_delay)
        , probe_(std::move(probe)) {
        cfg_.arch_name = "fake";
        cfg_.n_vocab = 32;
        cfg_.n_ctx_train = 64;
    }

    const model::model_config& config() const noexcept override { return cfg_; }
    const model::tokenizer& vocab() const noexcept override { return *vocab_; }
    std::string describe() const override { return "fake engine for tests"; }
    std::uint64_t weight_bytes() const noexcept override { return 0; }
    std::uint64_t kv_pool_bytes() const noexcept override { return 0; }
    std::uint32_t kv_block_tokens() const noexcept override { return 4; }
    std::uint32_t kv_blocks_total() const noexcept override { return blocks_total_; }
    std::uint32_t kv_blocks_free() const noexcept override { return blocks_total_ - used(); }
    void release(model::seq_id seq) override {
        cached_.erase(seq);
        publish();
    }
    result<void> fork(model::seq_id, model::seq_id) override {
        return error{errc::unsupported, "fake engine cannot fork"};
    }

    result<model::step_output> step(std::span<const model::seq_chunk> batch) override {
        auto after = cached_;
        for (const auto& c : batch) {
            if (c.seq == probe_->poison_seq)
                return error{errc::internal,
                             "fake engine: sequence " + std::to_string(c.seq) + " is poisoned"};
            if (c.seq == probe_->stall_seq)
                std::this_thread::sleep_for(std::chrono::milliseconds(probe_->stall_ms.load()));
            auto& n = after[c.seq];
            if (c.pos0 != n)
                return error{errc::invalid_argument, "chunk does not continue its sequence"};
            for (auto t : c.tokens)
                if (t < 0 || static_cast<std::uint32_t>(t) >= cfg_.n_vocab)
                    return error{errc::invalid_argument, "token id out of range"};
            n += static_cast<std::uint32_t>(c.tokens.size());
        }
        if (used_of(after) > blocks_total_)
            return error{errc::kv_exhausted, "fake KV pool exhausted"};
        std::this_thread::sleep_for(delay_);
        cached_ = std::move(after);
        model::step_output out;
        // The row after token t: (t + 1) % n_vocab at 5, every other token at 0.
        auto push_row = [&](std::int32_t t) {
            const auto next = (t + 1) % static_cast<std::int32_t>(cfg_.n_vocab);
            for (std::uint32_t v = 0; v < cfg_.n_vocab; ++v)
                out.logits.push_back(static_cast<std::int32_t>(v) == next ? 5.0f : 0.0f);
        };
        for (std::size_t i = 0; i < batch.size(); ++i) {
            const auto& c = batch[i];
            if (c.all_logits) {
                // Every token's row (prompt logprobs), as the real engine: consecutive rows.
                out.first_row_for_chunk.resize(batch.size(), SIZE_MAX);
                out.first_row_for_chunk[i] = out.logits.size() / cfg_.n_vocab;
                for (auto t : c.tokens)
                    push_row(t);
                out.rows_for_chunk.push_back(c.want_logits ? out.logits.size() / cfg_.n_vocab - 1
                                                           : SIZE_MAX);
                continue;
            }
            if (!c.want_logits) {
                out.rows_for_chunk.push_back(SIZE_MAX);
                continue;
            }
            out.rows_for_chunk.push_back(out.logits.size() / cfg_.n_vocab);
            push_row(c.tokens.back());
        }
        ++probe_->steps;
        publish();
        return out;
    }

private:
    std::uint32_t used_of(const std::map<model::seq_id, std::uint32_t>& m) const {
        std::uint32_t n = 0;
        for (const auto& [s, c] : m)
            n += (c + 3) / 4;
        return n;
    }
    std::uint32_t used() const { return used_of(cached_); }
    void publish() {
        probe_->blocks_used = used();
        probe_->live_seqs = static_cast<std::uint32_t>(cached_.size());
    }

    model::model_config cfg_;
    std::shared_ptr<const model::tokenizer> vocab_ = fake_tokenizer();
    std::uint32_t blocks_total_;
    std::chrono::milliseconds delay_;
    std::shared_ptr<fake_engine_probe> probe_;
    std::map<model::seq_id, std::uint32_t> cached_;
};

/// An executor order for a stand-in engine: `make` is registered under an engine kind of its own
/// (a new one each call), which the order names; the order itself stays plain data.
template <class Make>
msg::executor_order fake_order(Make make) {
    static std::atomic<int> n_kinds{0};
    const auto kind = "test-fake-" + std::to_string(++n_kinds);
    actors::register_engine_kind(kind, [make](const msg::executor_order&) { return make(); });
    msg::executor_order o;
    o.engine_kind = kind;
    return o;
}

} // namespace bitnet::test
