// A batcher over a real executor actor and the contract-checking fake engine (fake_engine.hpp),
// for the batcher's tests.
#pragma once

#include "actors/actor_test_config.hpp"
#include "actors/batcher/batcher.hpp"
#include "actors/batcher_client.hpp"
#include "actors/executor/executor.hpp"
#include "actors/fake_engine.hpp"

#include <caf/actor_system.hpp>
#include <caf/send.hpp>

#include <chrono>
#include <memory>

namespace bitnet::test {

using namespace std::chrono_literals;

struct rig {
    actor_test_config cfg;
    caf::actor_system sys{cfg};
    std::shared_ptr<fake_engine_probe> probe = std::make_shared<fake_engine_probe>();
    msg::executor_actor exec;
    msg::batcher_actor batcher;

    /// `max_batch_tokens` 0 keeps the policy's default step budget; a small one splits prompts
    /// into chunks over several steps.
    explicit rig(std::chrono::milliseconds step_delay = 0ms, std::uint32_t max_batch_seqs = 8,
                 bool with_text = false, std::uint32_t max_batch_tokens = 0) {
        auto eo = fake_order([p = probe, step_delay]() -> result<std::unique_ptr<model::engine>> {
            return std::make_unique<fake_engine>(16, step_delay, p);
        });
        exec = actors::spawn_executor(sys, eo);
        msg::batcher_order bo;
        bo.model = "fake";
        bo.policy.kv_block_tokens = 4;
        bo.policy.kv_blocks_total = 16;
        bo.policy.n_ctx = 64;
        bo.policy.max_batch_seqs = max_batch_seqs;
        bo.policy.eog_ids = {fake_eot};
        if (max_batch_tokens > 0) {
            bo.policy.max_batch_tokens = max_batch_tokens;
            bo.policy.decoding_batch_tokens = max_batch_tokens;
        }
        batcher = actors::spawn_batcher(sys, bo, exec, with_text ? fake_tokenizer() : nullptr);
    }
    ~rig() {
        caf::anon_send_exit(batcher, caf::exit_reason::user_shutdown);
        caf::anon_send_exit(exec, caf::exit_reason::user_shutdown);
    }

    msg::batcher_stats stats() { return batcher_stats_of(sys, batcher); }
};

inline msg::generate_request make_req(msg::request_id id, std::vector<msg::token_id> prompt,
                                      std::uint32_t max_tokens) {
    msg::generate_request r;
    r.id = id;
    r.prompt = std::move(prompt);
    r.max_tokens = max_tokens;
    r.params.temperature = 0.0f;
    return r;
}

} // namespace bitnet::test
