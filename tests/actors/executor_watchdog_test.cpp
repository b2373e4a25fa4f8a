// The executor's watchdog: a step that runs past step_timeout_ms (a stand-in engine that blocks
// on one sequence) fails that step's requests, turns the alias not ready, is counted, and the
// supervisor replaces the executor as for a crash; requests after it are served by the new one.
#include "actors/actor_test_config.hpp"
#include "actors/admission/admission.hpp"
#include "actors/fake_engine.hpp"
#include "actors/supervisor/supervisor.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>
#include <doctest/doctest.h>

#include <atomic>
#include <thread>

using namespace bitnet;
using namespace std::chrono_literals;

namespace {

constexpr std::int64_t step_timeout_ms = 300;

struct rig {
    test::actor_test_config cfg;
    caf::actor_system sys{cfg};
    std::shared_ptr<test::fake_engine_probe> probe = std::make_shared<test::fake_engine_probe>();
    std::shared_ptr<std::atomic<int>> stalls = std::make_shared<std::atomic<int>>(0);
    msg::admission_actor adm;
    msg::supervisor_actor sup;

    rig() {
        actors::admission_options ao;
        ao.default_model = "m";
        adm = actors::spawn_admission(sys, ao);
        actors::supervisor_options so;
        so.admission = adm;
        so.probation = 0ms;
        so.on_stall = [s = stalls](const std::string& alias) {
            if (alias == "m")
                ++*s;
        };
        actors::model_spec spec;
        spec.alias = "m";
        // Every load after the first takes a while, as a real model's does, so the time the
        // alias is not ready is long enough to see.
        spec.executor = test::fake_order([p = probe, n = std::make_shared<std::atomic<int>>(0)] {
            if ((*n)++ > 0)
                std::this_thread::sleep_for(800ms);
            return std::make_unique<test::fake_engine>(32, 0ms, p);
        });
        spec.batcher.step_timeout_ms = step_timeout_ms;
        so.models.push_back(spec);
        sup = actors::spawn_supervisor(sys, so);
    }
    ~rig() {
        probe->stall_seq = 0;
        caf::anon_send_exit(sup, caf::exit_reason::user_shutdown);
        caf::anon_send_exit(adm, caf::exit_reason::user_shutdown);
    }
};

msg::model_status status_of(caf::scoped_actor& self, const msg::supervisor_actor& sup) {
    msg::model_status out;
    self->request(sup, 5s, msg::models_atom_v)
        .receive(
            [&](const std::vector<msg::model_status>& ms) {
                if (!ms.empty())
                    out = ms[0];
            },
            [](caf::error&) {});
    return out;
}

/// Polls (5 ms) until `pred(status)` holds or `limit` passes; the status last seen.
template <class Pred>
msg::model_status wait_for(caf::scoped_actor& self, const msg::supervisor_actor& sup, Pred pred,
                           std::chrono::milliseconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    auto s = status_of(self, sup);
    while (!pred(s) && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(5ms);
        s = status_of(self, sup);
    }
    return s;
}

void submit(caf::scoped_actor& self, const msg::admission_actor& adm, msg::request_id id) {
    msg::generate_request req;
    req.id = id;
    req.model = "m";
    req.prompt = {1, 2, 3};
    req.max_tokens = 4;
    self->request(adm, 5s, msg::submit_atom_v, req, caf::actor_cast<msg::sink_actor>(self))
        .receive([](msg::request_id) {}, [](caf::error& e) { FAIL(caf::to_string(e)); });
}

/// The end of request `id`: "done", "failed", or "" when nothing came (bounded).
std::string outcome(caf::scoped_actor& self, msg::request_id id) {
    std::string out;
    for (int i = 0; i < 32 && out.empty(); ++i)
        self->receive([](msg::token_atom, const msg::token_event&) {},
                      [&](msg::done_atom, const msg::completion& c) {
                          if (c.id == id)
                              out = "done";
                      },
                      [&](msg::fail_atom, msg::request_id r, const caf::error&) {
                          if (r == id)
                              out = "failed";
                      },
                      caf::after(10s) >> [] {});
    return out;
}

} // namespace

TEST_CASE("watchdog: a stuck step makes the alias not ready, and a new executor serves after it") {
    rig r;
    caf::scoped_actor self{r.sys};
    auto s = wait_for(
        self, r.sup, [](const auto& m) { return m.state == "ready"; }, 10s);
    REQUIRE(s.state == "ready");
    REQUIRE(s.restarts == 0);
    // Request 1's step blocks far past step_timeout_ms.
    r.probe->stall_seq = 1;
    r.probe->stall_ms = 3000;
    const auto t0 = std::chrono::steady_clock::now();
    submit(self, r.adm, 1);
    // Not ready within step_timeout_ms + 1 s (the bound), while the step is still stuck.
    s = wait_for(
        self, r.sup, [](const auto& m) { return m.state != "ready"; },
        std::chrono::milliseconds(step_timeout_ms + 1000));
    const auto seen = std::chrono::steady_clock::now() - t0;
    CHECK(s.state != "ready");
    CHECK(seen < std::chrono::milliseconds(step_timeout_ms + 1000));
    CHECK(outcome(self, 1) == "failed");
    // Replaced: ready again, with the restart and the stall counted.
    s = wait_for(
        self, r.sup, [](const auto& m) { return m.state == "ready"; }, 10s);
    REQUIRE(s.state == "ready");
    CHECK(s.restarts == 1);
    CHECK(r.stalls->load() == 1);
    // The new executor serves; the stuck one takes no more steps.
    for (msg::request_id id = 2; id <= 3; ++id) {
        submit(self, r.adm, id);
        CHECK(outcome(self, id) == "done");
    }
}
