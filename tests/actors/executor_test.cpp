// The executor actor: device routing decision, step + sampling (model::sampler) through the engine
// contract, seeded sampling that does not depend on the batch, and a failed load reported as the
// actor's exit reason.
#include "actors/executor/executor.hpp"

#include "actors/fake_engine.hpp"
#include "messages/errors.hpp"
#include "model/engine/placement/device_choice.hpp"

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

namespace {
/// The error an executor that could not build its engine exits with (its down message).
bitnet::error exit_error_of(caf::actor_system& sys, const msg::executor_order& order) {
    caf::scoped_actor self{sys};
    auto exec = actors::spawn_executor(sys, order);
    self->monitor(exec);
    bitnet::error out{errc::timeout, "no down message"};
    self->receive([&](const caf::down_msg& dm) { out = msg::from_caf_error(dm.reason); },
                  caf::after(std::chrono::seconds(10)) >> [] { FAIL("no down message"); });
    return out;
}
} // namespace

TEST_CASE("an executor whose engine fails to load exits with the load error") {
    test_config cfg;
    caf::actor_system sys{cfg};
    auto opt = test::fake_order([]() -> result<std::unique_ptr<model::engine>> {
        return error{errc::bad_format, "m.gguf: bad magic"};
    });
    const auto e = exit_error_of(sys, opt);
    CHECK(e.value() == errc::bad_format);
    CHECK(e.message == "m.gguf: bad magic");
}

TEST_CASE("a chunk with an id outside the vocabulary fails alone, the batch's others are sampled") {
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
    b.chunks = {{{1, {5}, 2, true}, greedy}, {{3, {11}, 1, true}, greedy}};
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
    const auto e = exit_error_of(sys, order);
    CHECK(e.value() == errc::not_found);
    CHECK(e.message.find("no-such-kind") != std::string::npos);
}
