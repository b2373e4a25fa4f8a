// Admission in front of a real batcher + executor (fake engine): routing, unknown model, the
// waiting-requests cap with Retry-After, readiness and draining.
#include "actors/admission/admission.hpp"

#include "actors/batcher/batcher.hpp"
#include "actors/executor/executor.hpp"
#include "actors/fake_engine.hpp"
#include "messages/errors.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <doctest/doctest.h>

using namespace bitnet;
using namespace std::chrono_literals;

namespace {

struct test_config : caf::actor_system_config {
    test_config() {
        msg::register_messages(*this);
        set("scheduler.max-threads", 2);
    }
};

msg::generate_request make_req(msg::request_id id, std::string model = {}) {
    msg::generate_request r;
    r.id = id;
    r.model = std::move(model);
    r.prompt = {1, 2, 3};
    r.max_tokens = 30;
    return r;
}

/// submit -> request id, or the error.
std::variant<msg::request_id, caf::error>
submit(caf::scoped_actor& self, const msg::admission_actor& adm, msg::generate_request req) {
    std::variant<msg::request_id, caf::error> out;
    self->request(adm, 5s, msg::submit_atom_v, std::move(req),
                  caf::actor_cast<msg::sink_actor>(self))
        .receive([&](msg::request_id id) { out = id; }, [&](caf::error& e) { out = e; });
    return out;
}

/// The executor's own info, as the supervisor routes it to admission.
msg::executor_info info_of(caf::scoped_actor& self, const msg::executor_actor& exec) {
    msg::executor_info out;
    self->request(exec, 5s, msg::info_atom_v)
        .receive([&](const msg::executor_info& i) { out = i; },
                 [](caf::error& e) { FAIL(caf::to_string(e)); });
    return out;
}

} // namespace

TEST_CASE("retry_after_seconds follows the drain rate within 1..60") {
    CHECK(actors::retry_after_seconds(10, 0.0) == 1);
    CHECK(actors::retry_after_seconds(10, 5.0) == 2);
    CHECK(actors::retry_after_seconds(11, 5.0) == 3);
    CHECK(actors::retry_after_seconds(100000, 1.0) == 60);
}

TEST_CASE("check_request: the context, the whole KV pool and the vocabulary, 0 = unknown") {
    actors::request_limits lim{512, 2048, 16, 16}; // a pool of 256 tokens, below the context
    msg::generate_request r;
    r.prompt.assign(255, 1);
    CHECK(actors::check_request(lim, r));
    r.prompt.assign(256, 1); // with one generated token: 257 > 256
    auto e = actors::check_request(lim, r);
    REQUIRE_FALSE(e);
    CHECK(e.error().value() == errc::prompt_too_long);
    CHECK(e.error().param == "prompt");
    CHECK(e.error().message.find("256 tokens (16 blocks of 16)") != std::string::npos);
    r.prompt = {0, 511};
    CHECK(actors::check_request(lim, r));
    r.prompt = {0, -1};
    CHECK(actors::check_request(lim, r).error().param == "prompt");
    r.prompt = {0};
    r.stop_token_ids = {512};
    CHECK(actors::check_request(lim, r).error().param == "stop_token_ids");
    r.stop_token_ids = {511};
    r.params.logit_bias = {{0, 5.0f}, {511, -100.0f}};
    CHECK(actors::check_request(lim, r));
    r.params.logit_bias.push_back({512, 1.0f});
    e = actors::check_request(lim, r);
    REQUIRE_FALSE(e);
    CHECK(e.error().param == "logit_bias");
    CHECK(e.error().message.find("token id 512") != std::string::npos);
    // A version whose figures are unknown (0) is not checked here; its batcher still is.
    CHECK(actors::check_request(actors::request_limits{}, r));
}

TEST_CASE("admission routes, refuses unknown models, drains") {
    test_config cfg;
    caf::actor_system sys{cfg};
    auto probe = std::make_shared<test::fake_engine_probe>();
    auto eo = test::fake_order([probe]() -> result<std::unique_ptr<model::engine>> {
        return std::make_unique<test::fake_engine>(64, 5ms, probe);
    });
    auto exec = actors::spawn_executor(sys, eo);
    msg::batcher_order bo;
    bo.model = "tiny";
    bo.policy.kv_block_tokens = 4;
    bo.policy.kv_blocks_total = 64;
    bo.policy.n_ctx = 64;
    bo.policy.max_batch_seqs = 1; // one at a time: the rest waits
    auto batcher = actors::spawn_batcher(sys, bo, exec, nullptr);
    actors::admission_options ao;
    ao.default_model = "tiny";
    ao.max_waiting_requests = 2;
    ao.poll_interval = 5ms;
    auto adm = actors::spawn_admission(sys, ao);
    caf::scoped_actor self{sys};

    auto ready = [&] {
        std::pair<bool, std::string> out;
        self->request(adm, 5s, msg::ready_atom_v)
            .receive(
                [&](bool ok, std::string why) {
                    out = {ok, why};
                },
                [](caf::error& e) { FAIL(caf::to_string(e)); });
        return out;
    };
    CHECK_FALSE(ready().first);
    CHECK(ready().second.find("not ready") != std::string::npos);
    self->send(adm, msg::route_atom_v, std::string("tiny"), batcher, msg::text_actor{},
               info_of(self, exec));
    CHECK(ready().first);

    auto unknown = submit(self, adm, make_req(1, "nope"));
    REQUIRE(std::holds_alternative<caf::error>(unknown));
    CHECK(msg::from_caf_error(std::get<caf::error>(unknown)).value() == errc::not_found);

    // The cap itself is tested message by message in admission_order_test.cpp; here, with a real
    // batcher behind it, only that a queued request is accepted.
    CHECK(std::holds_alternative<msg::request_id>(submit(self, adm, make_req(10))));

    self->send(adm, msg::drain_atom_v);
    CHECK(ready().second == "draining");
    auto drained = submit(self, adm, make_req(99));
    REQUIRE(std::holds_alternative<caf::error>(drained));
    CHECK(msg::from_caf_error(std::get<caf::error>(drained)).value() == errc::draining);

    for (const auto& h : {caf::actor_cast<caf::actor>(adm), caf::actor_cast<caf::actor>(batcher),
                          caf::actor_cast<caf::actor>(exec)})
        self->send_exit(h, caf::exit_reason::user_shutdown);
}

TEST_CASE("admission refuses ids outside the vocabulary and prompts the context cannot hold") {
    test_config cfg;
    caf::actor_system sys{cfg};
    auto probe = std::make_shared<test::fake_engine_probe>();
    auto eo = test::fake_order([probe]() -> result<std::unique_ptr<model::engine>> {
        return std::make_unique<test::fake_engine>(64, 1ms, probe);
    });
    auto exec = actors::spawn_executor(sys, eo);
    msg::batcher_order bo;
    bo.model = "tiny";
    bo.policy.kv_block_tokens = 4;
    bo.policy.kv_blocks_total = 64;
    bo.policy.n_ctx = 64;
    auto batcher = actors::spawn_batcher(sys, bo, exec, nullptr);
    actors::admission_options ao;
    ao.default_model = "tiny";
    ao.max_waiting_prompt_tokens = 100; // below the longest prompt sent here
    auto adm = actors::spawn_admission(sys, ao);
    caf::scoped_actor self{sys};
    self->send(adm, msg::route_atom_v, std::string("tiny"), batcher, msg::text_actor{},
               info_of(self, exec));

    auto refusal = [&](msg::generate_request req) -> bitnet::error {
        auto r = submit(self, adm, std::move(req));
        if (auto* e = std::get_if<caf::error>(&r))
            return msg::from_caf_error(*e);
        return {errc::ok, "admitted"};
    };
    auto bad_prompt = make_req(1);
    bad_prompt.prompt = {1, 32, 2}; // the fake engine's vocabulary is 0..31
    auto e = refusal(bad_prompt);
    CHECK(e.value() == errc::invalid_argument);
    CHECK(e.param == "prompt");
    CHECK(e.message.find("32") != std::string::npos);
    CHECK(e.message.find("position 1") != std::string::npos);

    auto bad_stop = make_req(2);
    bad_stop.stop_token_ids = {3, 40};
    e = refusal(bad_stop);
    CHECK(e.value() == errc::invalid_argument);
    CHECK(e.param == "stop_token_ids");
    CHECK(e.message.find("40") != std::string::npos);

    // 64 tokens leave no room in a 64-token context; 200 is also past the waiting-tokens cap,
    // which must not turn the caller's error into a 503 to retry.
    for (std::size_t n : {std::size_t{64}, std::size_t{200}}) {
        CAPTURE(n);
        auto long_prompt = make_req(3 + n);
        long_prompt.prompt.assign(n, 1);
        e = refusal(long_prompt);
        CHECK(e.value() == errc::prompt_too_long);
        CHECK(e.param == "prompt");
        CHECK(e.message.find(std::to_string(n)) != std::string::npos);
        CHECK(e.message.find("64") != std::string::npos);
    }

    // A good request still passes.
    auto good = submit(self, adm, make_req(9));
    CHECK(std::holds_alternative<msg::request_id>(good));

    for (const auto& h : {caf::actor_cast<caf::actor>(adm), caf::actor_cast<caf::actor>(batcher),
                          caf::actor_cast<caf::actor>(exec)})
        self->send_exit(h, caf::exit_reason::user_shutdown);
}
