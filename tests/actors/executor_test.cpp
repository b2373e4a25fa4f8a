// The executor actor: device routing decision, step + sampling (model::sampler) through the engine
// contract, seeded sampling that does not depend on the batch, and a failed load reported as the
// actor's exit reason.
#include "actors/executor.hpp"

#include "actors/fake_engine.hpp"
#include "messages/errors.hpp"
#include "model/engine/device_choice.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <doctest/doctest.h>

using namespace bitnet;

namespace {
struct test_config : caf::actor_system_config {
    test_config() {
        msg::register_messages(*this);
        set("scheduler.max-threads", 2);
    }
};
} // namespace

TEST_CASE("device routing: CPU fallback with the reason, CUDA only when built and present") {
    auto d = model::choose_device("auto", false, 0);
    CHECK(d.device == "cpu");
    CHECK(d.reason == "built without CUDA");
    d = model::choose_device("cuda", false, 0);
    CHECK(d.device == "cpu");
    CHECK(d.reason.find("no CUDA kernels") != std::string::npos);
    d = model::choose_device("auto", true, 0);
    CHECK(d.device == "cpu");
    CHECK(d.reason.find("no CUDA device") != std::string::npos);
    CHECK(model::choose_device("auto", true, 2).device == "cuda:0");
    CHECK(model::choose_device("cpu", true, 2).device == "cpu");
    // This build: the decision actually taken.
    auto here = model::choose_device("auto", model::cuda_built(), model::cuda_device_count());
    if (!model::cuda_built())
        CHECK(here.reason == "built without CUDA");
}

TEST_CASE("executor runs steps, samples greedily with logprobs, reports its device") {
    test_config cfg;
    caf::actor_system sys{cfg};
    auto probe = std::make_shared<test::fake_engine_probe>();
    auto opt = test::fake_order([probe]() -> result<std::unique_ptr<model::engine>> {
        return std::make_unique<test::fake_engine>(16, std::chrono::milliseconds(0), probe);
    });
    auto exec = actors::spawn_executor(sys, opt); // EOG ids: the engine tokenizer's
    caf::scoped_actor self{sys};
    self->request(exec, std::chrono::seconds(10), msg::info_atom_v)
        .receive(
            [&](const msg::executor_info& info) {
                CHECK(info.device == "cpu");
                CHECK_FALSE(info.device_reason.empty());
                CHECK(info.n_vocab == 32);
                CHECK(info.kv_blocks_total == 16);
                CHECK(info.eog_ids == std::vector<msg::token_id>{test::fake_eot});
            },
            [](const caf::error& e) { FAIL(caf::to_string(e)); });

    msg::step_batch b;
    b.step = 1;
    msg::step_chunk c;
    c.part.seq = 7;
    c.part.tokens = {3, 4, 5};
    c.part.want_logits = true;
    c.params.temperature = 0.0f;
    c.params.n_logprobs = 2;
    b.chunks.push_back(c);
    self->request(exec, std::chrono::seconds(10), msg::step_atom_v, b)
        .receive(
            [&](const msg::step_result& r) {
                REQUIRE(r.samples.size() == 1);
                CHECK(r.samples[0].seq == 7);
                CHECK(r.samples[0].token == 6);
                CHECK(r.samples[0].logprob < 0.0f);
                CHECK(r.samples[0].logprob > -0.3f);
                REQUIRE(r.samples[0].top_tokens.size() == 2);
                CHECK(r.samples[0].top_tokens[0] == 6);
                CHECK(r.kv_blocks_free == 15);
            },
            [](const caf::error& e) { FAIL(caf::to_string(e)); });

    // A position that does not continue the sequence: the engine's error comes back as ours,
    // for that sequence (its KV released), while the step itself answers.
    b.step = 2;
    b.chunks[0].part.pos0 = 9;
    self->request(exec, std::chrono::seconds(10), msg::step_atom_v, b)
        .receive(
            [](const msg::step_result& r) {
                CHECK(r.samples.empty());
                REQUIRE(r.failed.size() == 1);
                CHECK(r.failed[0].seq == 7);
                CHECK(r.failed[0].code == static_cast<std::int32_t>(errc::invalid_argument));
                CHECK(r.kv_blocks_free == 16);
            },
            [](const caf::error& e) { FAIL(caf::to_string(e)); });

    // Release frees the sequence's KV.
    b.step = 3;
    b.release = {7};
    b.chunks.clear();
    self->request(exec, std::chrono::seconds(10), msg::step_atom_v, b)
        .receive([](const msg::step_result& r) { CHECK(r.kv_blocks_free == 16); },
                 [](const caf::error& e) { FAIL(caf::to_string(e)); });
    CHECK(probe->blocks_used == 0);
    self->send_exit(exec, caf::exit_reason::user_shutdown);
}

TEST_CASE("an executor whose engine fails to load exits with the load error") {
    test_config cfg;
    caf::actor_system sys{cfg};
    auto opt = test::fake_order([]() -> result<std::unique_ptr<model::engine>> {
        return error{errc::bad_format, "m.gguf: bad magic"};
    });
    caf::scoped_actor self{sys};
    auto exec = actors::spawn_executor(sys, opt);
    self->monitor(exec);
    bool got_down = false;
    self->receive(
        [&](const caf::down_msg& dm) {
            got_down = true;
            auto e = msg::from_caf_error(dm.reason);
            CHECK(e.value() == errc::bad_format);
            CHECK(e.message == "m.gguf: bad magic");
        },
        caf::after(std::chrono::seconds(10)) >> [] { FAIL("no down message"); });
    CHECK(got_down);
}

namespace {
/// Decodes `n` tokens of sequence `seq` (prompt {1}) with temperature sampling, feeding each
/// sampled token back; `other` (when non-zero) runs beside it in every step with its own seed.
std::vector<msg::token_id> sample_run(caf::scoped_actor& self, const msg::executor_actor& exec,
                                      std::uint64_t seq, std::uint64_t other, int n) {
    msg::sampling p;
    p.temperature = 3.0f; // flat enough that every draw is a real choice
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.seed = 42;
    msg::sampling q = p;
    q.seed = 7;
    std::vector<msg::token_id> out;
    msg::token_id last = 1, last_other = 1;
    for (int i = 0; i < n; ++i) {
        msg::step_batch b;
        b.step = static_cast<std::uint64_t>(i) + 1;
        b.chunks.push_back({{seq, {last}, static_cast<std::uint32_t>(i), true}, p});
        if (other != 0)
            b.chunks.push_back({{other, {last_other}, static_cast<std::uint32_t>(i), true}, q});
        self->request(exec, std::chrono::seconds(10), msg::step_atom_v, b)
            .receive(
                [&](const msg::step_result& r) {
                    REQUIRE(r.samples.size() == b.chunks.size());
                    last = r.samples[0].token;
                    if (other != 0)
                        last_other = r.samples[1].token;
                },
                [](const caf::error& e) { FAIL(caf::to_string(e)); });
        out.push_back(last);
    }
    msg::step_batch rel;
    rel.step = 1000;
    rel.release = {seq};
    if (other != 0)
        rel.release.push_back(other);
    self->request(exec, std::chrono::seconds(10), msg::step_atom_v, rel)
        .receive([](const msg::step_result&) {},
                 [](const caf::error& e) { FAIL(caf::to_string(e)); });
    return out;
}
} // namespace

TEST_CASE("seeded sampling gives a sequence the same tokens alone and inside a batch") {
    test_config cfg;
    caf::actor_system sys{cfg};
    auto probe = std::make_shared<test::fake_engine_probe>();
    auto opt = test::fake_order([probe]() -> result<std::unique_ptr<model::engine>> {
        return std::make_unique<test::fake_engine>(64, std::chrono::milliseconds(0), probe);
    });
    auto exec = actors::spawn_executor(sys, opt);
    caf::scoped_actor self{sys};
    const auto alone = sample_run(self, exec, 1, 0, 12);
    const auto batched = sample_run(self, exec, 2, 3, 12);
    CHECK(alone == batched);
    // Temperature 3 over 32 tokens: the draws are not simply the argmax chain 2, 3, 4...
    std::vector<msg::token_id> chain;
    for (int i = 0; i < 12; ++i)
        chain.push_back(static_cast<msg::token_id>((i == 0 ? 2 : chain.back() + 1) % 32));
    CHECK(alone != chain);
    self->send_exit(exec, caf::exit_reason::user_shutdown);
}

TEST_CASE("a chunk with an id outside the vocabulary fails alone; the batch's others are sampled") {
    test_config cfg;
    caf::actor_system sys{cfg};
    auto probe = std::make_shared<test::fake_engine_probe>();
    auto opt = test::fake_order([probe]() -> result<std::unique_ptr<model::engine>> {
        return std::make_unique<test::fake_engine>(16, std::chrono::milliseconds(0), probe);
    });
    auto exec = actors::spawn_executor(sys, opt);
    caf::scoped_actor self{sys};
    msg::sampling greedy;
    greedy.temperature = 0.0f;
    msg::step_batch b;
    b.step = 1;
    b.chunks.push_back({{1, {3, 4}, 0, true}, greedy});
    b.chunks.push_back({{2, {5, 32, 6}, 0, true}, greedy}); // ids are 0..31
    b.chunks.push_back({{3, {10}, 0, true}, greedy});
    self->request(exec, std::chrono::seconds(10), msg::step_atom_v, b)
        .receive(
            [](const msg::step_result& r) {
                REQUIRE(r.samples.size() == 2);
                CHECK(r.samples[0].seq == 1);
                CHECK(r.samples[0].token == 5);
                CHECK(r.samples[1].seq == 3);
                CHECK(r.samples[1].token == 11);
                REQUIRE(r.failed.size() == 1);
                CHECK(r.failed[0].seq == 2);
                CHECK(r.failed[0].code == static_cast<std::int32_t>(errc::invalid_argument));
                CHECK(r.failed[0].param == "prompt");
                CHECK(r.failed[0].message.find("32 at position 1") != std::string::npos);
            },
            [](const caf::error& e) { FAIL(caf::to_string(e)); });
    // Only the two good sequences hold KV (one block each).
    CHECK(probe->live_seqs == 2);
    CHECK(probe->blocks_used == 2);

    // A failure only the engine sees (sequence 3 poisoned): the pass is rerun apart, 1 goes on.
    probe->poison_seq = 3;
    b.step = 2;
    b.chunks = {{1, {5}, 2, true, greedy}, {3, {11}, 1, true, greedy}};
    self->request(exec, std::chrono::seconds(10), msg::step_atom_v, b)
        .receive(
            [](const msg::step_result& r) {
                REQUIRE(r.samples.size() == 1);
                CHECK(r.samples[0].seq == 1);
                CHECK(r.samples[0].token == 6);
                REQUIRE(r.failed.size() == 1);
                CHECK(r.failed[0].seq == 3);
                CHECK(r.failed[0].message.find("poisoned") != std::string::npos);
            },
            [](const caf::error& e) { FAIL(caf::to_string(e)); });
    CHECK(probe->live_seqs == 1);
    CHECK(probe->blocks_used == 1); // sequence 1: 3 tokens in one 4-token block
    self->send_exit(exec, caf::exit_reason::user_shutdown);
}

TEST_CASE("an executor order naming an engine kind nobody registered ends with not_found") {
    test_config cfg;
    caf::actor_system sys{cfg};
    msg::executor_order order;
    order.engine_kind = "no-such-kind";
    caf::scoped_actor self{sys};
    auto exec = actors::spawn_executor(sys, order);
    self->monitor(exec);
    bool got_down = false;
    self->receive(
        [&](const caf::down_msg& dm) {
            got_down = true;
            auto e = msg::from_caf_error(dm.reason);
            CHECK(e.value() == errc::not_found);
            CHECK(e.message.find("no-such-kind") != std::string::npos);
        },
        caf::after(std::chrono::seconds(10)) >> [] { FAIL("no down message"); });
    CHECK(got_down);
}
