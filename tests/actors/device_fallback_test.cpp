// Device fallback through the supervisor: a version whose CUDA placement cannot load starts again
// on the next placement of its list (the CPU last) and serves there, its info and status saying
// from where and why; a CUDA executor that crashes after loading restarts on the CPU. The engines
// are stand-ins registered under a kind of this test's own: one that refuses every placement but
// the CPU (as a machine without a GPU does), so the real CUDA engine is not needed.
#include "actors/actor_test_config.hpp"
#include "actors/admission/admission.hpp"
#include "actors/executor/engine_kinds.hpp"
#include "actors/fake_engine.hpp"
#include "actors/supervisor/supervisor.hpp"
#include "kernels/cuda/ops.hpp"
#include "messages/errors.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>
#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <mutex>
#include <thread>

using namespace bitnet;
using namespace std::chrono_literals;

namespace {

/// What the stand-in engine kind saw and the supervisor reported, shared with the test.
struct device_log {
    std::mutex mu;
    std::vector<std::string> loads;                 ///< the placement of every load, in order
    std::vector<actors::device_fallback> fallbacks; ///< on_fallback's reports
    std::vector<std::string> loads_now() {
        std::lock_guard lock(mu);
        return loads;
    }
    std::vector<actors::device_fallback> fallbacks_now() {
        std::lock_guard lock(mu);
        return fallbacks;
    }
};

/// A stand-in CUDA engine whose device fails in a step, as a failed launch (an illegal address,
/// say) does: the CUDA ops throw device_error from the engine's step. `after_warmup`: the
/// executor's warm-up (its one sequence, id max, executor.cpp) passes and the first request's
/// step fails; otherwise the warm-up's first step does.
class failing_device_engine final : public model::engine {
public:
    failing_device_engine(std::unique_ptr<model::engine> inner, bool after_warmup)
        : inner_(std::move(inner))
        , after_warmup_(after_warmup) {}
    const model::model_config& config() const noexcept override { return inner_->config(); }
    const model::tokenizer& vocab() const noexcept override { return inner_->vocab(); }
    std::string describe() const override { return "stand-in CUDA engine"; }
    std::uint64_t weight_bytes() const noexcept override { return 0; }
    std::uint64_t kv_pool_bytes() const noexcept override { return 0; }
    std::uint32_t kv_block_tokens() const noexcept override { return inner_->kv_block_tokens(); }
    std::uint32_t kv_blocks_total() const noexcept override { return inner_->kv_blocks_total(); }
    std::uint32_t kv_blocks_free() const noexcept override { return inner_->kv_blocks_free(); }
    void release(model::seq_id seq) override { inner_->release(seq); }
    result<void> fork(model::seq_id from, model::seq_id to) override {
        return inner_->fork(from, to);
    }
    result<model::step_output> step(std::span<const model::seq_chunk> batch) override {
        const bool warmup = std::all_of(batch.begin(), batch.end(), [](const auto& c) {
            return c.seq == std::numeric_limits<std::uint64_t>::max();
        });
        if (after_warmup_ && warmup)
            return inner_->step(batch);
        throw kernels::cuda::device_error(kernels::cuda::device_failure::launch_failed,
                                          "an illegal memory access was encountered");
    }

private:
    std::unique_ptr<model::engine> inner_;
    bool after_warmup_;
};

/// An executor order whose engine loads only on the placements in `loadable`; elsewhere it
/// fails as the CUDA side does on a machine without a device. On the placements in
/// `failing_steps` the engine loads but its device fails in a step (after the warm-up when
/// `after_warmup`).
msg::executor_order order_loading_on(std::shared_ptr<device_log> log,
                                     std::vector<std::string> loadable,
                                     std::shared_ptr<test::fake_engine_probe> probe,
                                     std::vector<std::string> failing_steps = {},
                                     bool after_warmup = true) {
    static std::atomic<int> n_kinds{0};
    const auto kind = "test-device-" + std::to_string(++n_kinds);
    actors::register_engine_kind(
        kind,
        [log, loadable, probe, failing_steps,
         after_warmup](const msg::executor_order& o) -> result<std::unique_ptr<model::engine>> {
            {
                std::lock_guard lock(log->mu);
                log->loads.push_back(o.device);
            }
            if (std::find(loadable.begin(), loadable.end(), o.device) == loadable.end())
                return error{errc::unsupported, o.device + ": no CUDA device " +
                                                    o.device.substr(o.device.find(':') + 1) +
                                                    " (0 present)"};
            auto e = std::make_unique<test::fake_engine>(32, 0ms, probe);
            if (std::find(failing_steps.begin(), failing_steps.end(), o.device) !=
                failing_steps.end())
                return std::make_unique<failing_device_engine>(std::move(e), after_warmup);
            return e;
        });
    msg::executor_order eo;
    eo.engine_kind = kind;
    return eo;
}

/// The serving version of `alias`, polled (bounded) until `ready(status)` holds.
template <class Pred>
msg::model_status wait_status(caf::scoped_actor& self, const msg::supervisor_actor& sup,
                              Pred ready) {
    msg::model_status out;
    for (int i = 0; i < 800; ++i) {
        bool done = false;
        self->request(sup, 5s, msg::models_atom_v)
            .receive(
                [&](const std::vector<msg::model_status>& ms) {
                    if (ms.size() == 1) {
                        out = ms[0];
                        done = ready(out);
                    }
                },
                [](caf::error&) {});
        if (done)
            break;
        std::this_thread::sleep_for(5ms);
    }
    return out;
}

/// The version once it serves or has failed (bounded).
msg::model_status wait_settled(caf::scoped_actor& self, const msg::supervisor_actor& sup) {
    return wait_status(self, sup, [](const msg::model_status& s) {
        return s.state == "ready" || s.state == "failed";
    });
}

/// One request through admission, to its completion (bounded).
std::optional<msg::completion> complete_one(caf::scoped_actor& self,
                                            const msg::admission_actor& adm, msg::request_id id) {
    msg::generate_request req;
    req.id = id;
    req.model = "m";
    req.prompt = {1, 2, 3};
    req.max_tokens = 4;
    bool accepted = false;
    self->request(adm, 5s, msg::submit_atom_v, req, caf::actor_cast<msg::sink_actor>(self))
        .receive([&](msg::request_id) { accepted = true; },
                 [](caf::error& e) { FAIL(caf::to_string(e)); });
    if (!accepted)
        return std::nullopt;
    std::optional<msg::completion> done;
    for (int i = 0; i < 16 && !done; ++i)
        self->receive([](msg::token_atom, const msg::token_event&) {},
                      [&](msg::done_atom, msg::completion c) { done = c; },
                      caf::after(10s) >> [] {});
    return done;
}

struct rig {
    test::actor_test_config cfg;
    caf::actor_system sys{cfg};
    std::shared_ptr<device_log> log = std::make_shared<device_log>();
    std::shared_ptr<test::fake_engine_probe> probe = std::make_shared<test::fake_engine_probe>();
    msg::admission_actor adm;
    msg::supervisor_actor sup;

    rig(std::vector<std::string> devices, std::vector<std::string> loadable,
        std::vector<std::string> failing_steps = {}, bool after_warmup = true) {
        actors::admission_options ao;
        ao.default_model = "m";
        adm = actors::spawn_admission(sys, ao);
        actors::supervisor_options so;
        so.admission = adm;
        so.probation = 0ms; // a crash is a crash, not a rollback (there is nothing to roll to)
        so.on_fallback = [l = log](const actors::device_fallback& f) {
            std::lock_guard lock(l->mu);
            l->fallbacks.push_back(f);
        };
        actors::model_spec spec;
        spec.alias = "m";
        spec.executor = order_loading_on(log, std::move(loadable), probe, std::move(failing_steps),
                                         after_warmup);
        spec.devices = std::move(devices);
        spec.executor.device = spec.devices.front();
        so.models.push_back(spec);
        sup = actors::spawn_supervisor(sys, so);
    }
    ~rig() {
        caf::anon_send_exit(sup, caf::exit_reason::user_shutdown);
        caf::anon_send_exit(adm, caf::exit_reason::user_shutdown);
    }
};

} // namespace

TEST_CASE("a CUDA placement that cannot load falls back to the CPU, which takes the traffic") {
    rig r({"cuda:0", "cpu"}, {"cpu"});
    caf::scoped_actor self{r.sys};
    const auto m = wait_settled(self, r.sup);
    REQUIRE(m.state == "ready");
    CHECK(r.log->loads_now() == std::vector<std::string>{"cuda:0", "cpu"});
    CHECK(m.info.device == "cpu");
    CHECK(m.info.device_reason.find("fallback from cuda:0") == 0);
    CHECK(m.info.device_reason.find("no CUDA device 0") != std::string::npos);
    CHECK(m.device_fallbacks == 1);
    CHECK(m.restarts == 0); // a fallback is not a restart
    REQUIRE(m.versions.size() == 1);
    CHECK(m.versions[0].device_fallbacks == 1);
    const auto f = r.log->fallbacks_now();
    REQUIRE(f.size() == 1);
    CHECK(f[0].alias == "m");
    CHECK(f[0].from == "cuda:0");
    CHECK(f[0].to == "cpu");
    CHECK(f[0].reason_class == "no_device");

    // The CPU replica serves: requests complete, and the engine's steps ran.
    for (msg::request_id id = 1; id <= 3; ++id) {
        auto done = complete_one(self, r.adm, id);
        REQUIRE(done);
        CHECK(done->finish == msg::finish_reason::length);
        CHECK(done->completion_tokens == 4);
    }
    CHECK(r.probe->steps > 0);
}

TEST_CASE("every failing placement of the list is tried in order before the CPU") {
    rig r({"cuda:1", "sim:0", "cpu"}, {"cpu"});
    caf::scoped_actor self{r.sys};
    const auto m = wait_settled(self, r.sup);
    REQUIRE(m.state == "ready");
    CHECK(r.log->loads_now() == std::vector<std::string>{"cuda:1", "sim:0", "cpu"});
    CHECK(m.info.device == "cpu");
    CHECK(m.info.device_reason.find("fallback from sim:0") == 0);
    CHECK(m.device_fallbacks == 2);
    const auto f = r.log->fallbacks_now();
    REQUIRE(f.size() == 2);
    CHECK(f[0].from == "cuda:1");
    CHECK(f[0].to == "sim:0");
    CHECK(f[1].from == "sim:0");
    CHECK(f[1].to == "cpu");
    CHECK(complete_one(self, r.adm, 1).has_value());
}

TEST_CASE("a placement that loads is kept: no fallback") {
    rig r({"cuda:0", "cpu"}, {"cuda:0", "cpu"});
    caf::scoped_actor self{r.sys};
    const auto m = wait_settled(self, r.sup);
    REQUIRE(m.state == "ready");
    CHECK(m.info.device == "cuda:0");
    CHECK(m.device_fallbacks == 0);
    CHECK(r.log->fallbacks_now().empty());
    CHECK(r.log->loads_now() == std::vector<std::string>{"cuda:0"});
}

TEST_CASE("a CPU that cannot load the model is the model's failure, not a device's") {
    rig r({"cpu"}, {});
    caf::scoped_actor self{r.sys};
    const auto m =
        wait_status(self, r.sup, [](const msg::model_status& s) { return s.state == "failed"; });
    CHECK(m.state == "failed");
    CHECK(m.device_fallbacks == 0);
    CHECK(r.log->fallbacks_now().empty());
}

TEST_CASE("a CUDA executor that crashes after loading restarts on the CPU and serves there") {
    rig r({"cuda:0", "cpu"}, {"cuda:0", "cpu"});
    caf::scoped_actor self{r.sys};
    auto m = wait_settled(self, r.sup);
    REQUIRE(m.state == "ready");
    REQUIRE(m.info.device == "cuda:0");
    CHECK(complete_one(self, r.adm, 1).has_value());

    // The executor dies while serving (the supervisor's crash hook kills it as a fault would).
    self->send(r.sup, msg::crash_atom_v, std::string("m"));
    m = wait_status(self, r.sup, [](const msg::model_status& s) {
        return (s.state == "ready" && s.info.device == "cpu") || s.state == "failed";
    });
    REQUIRE(m.state == "ready");
    CHECK(m.info.device == "cpu");
    CHECK(m.info.device_reason.find("fallback from cuda:0") == 0);
    CHECK(m.info.device_reason.find("crash injected") != std::string::npos);
    CHECK(m.device_fallbacks == 1);
    CHECK(m.restarts == 1); // the existing restart path, on the next placement
    const auto f = r.log->fallbacks_now();
    REQUIRE(f.size() == 1);
    CHECK(f[0].reason_class == "crashed");
    CHECK(r.log->loads_now() == std::vector<std::string>{"cuda:0", "cpu"});
    for (msg::request_id id = 2; id <= 3; ++id) {
        auto done = complete_one(self, r.adm, id);
        REQUIRE(done);
        CHECK(done->finish == msg::finish_reason::length);
    }
}

TEST_CASE("a device that fails in a step ends its executor, and the CPU serves what comes next") {
    rig r({"cuda:0", "cpu"}, {"cuda:0", "cpu"}, {"cuda:0"});
    caf::scoped_actor self{r.sys};
    auto m = wait_settled(self, r.sup);
    REQUIRE(m.state == "ready");
    REQUIRE(m.info.device == "cuda:0");
    // The first request meets the failed launch: it ends (its step failed), it does not hang.
    msg::generate_request req;
    req.id = 1;
    req.model = "m";
    req.prompt = {1, 2, 3};
    req.max_tokens = 4;
    self->request(r.adm, 5s, msg::submit_atom_v, req, caf::actor_cast<msg::sink_actor>(self))
        .receive([](msg::request_id) {}, [](caf::error& e) { FAIL(caf::to_string(e)); });
    bool failed = false;
    self->receive(
        [](msg::token_atom, const msg::token_event&) {},
        [](msg::done_atom, const msg::completion&) { FAIL("completed on a failed device"); },
        [&](msg::fail_atom, msg::request_id, const caf::error&) { failed = true; },
        caf::after(10s) >> [] {});
    CHECK(failed);
    // The version restarts on the CPU, which takes the traffic.
    m = wait_status(self, r.sup, [](const msg::model_status& s) {
        return (s.state == "ready" && s.info.device == "cpu") || s.state == "failed";
    });
    REQUIRE(m.state == "ready");
    CHECK(m.info.device == "cpu");
    CHECK(m.info.device_reason.find("fallback from cuda:0") == 0);
    CHECK(m.info.device_reason.find("illegal memory access") != std::string::npos);
    const auto f = r.log->fallbacks_now();
    REQUIRE(f.size() == 1);
    CHECK(f[0].reason_class == "crashed");
    for (msg::request_id id = 2; id <= 3; ++id) {
        auto done = complete_one(self, r.adm, id);
        REQUIRE(done);
        CHECK(done->finish == msg::finish_reason::length);
    }
}

TEST_CASE("a device that fails the warm-up is left for the next placement before serving") {
    rig r({"cuda:0", "cpu"}, {"cuda:0", "cpu"}, {"cuda:0"}, false);
    caf::scoped_actor self{r.sys};
    const auto m = wait_settled(self, r.sup);
    REQUIRE(m.state == "ready");
    CHECK(m.info.device == "cpu");
    CHECK(m.info.device_reason.find("fallback from cuda:0: warm-up failed") == 0);
    CHECK(m.info.device_reason.find("illegal memory access") != std::string::npos);
    CHECK(m.restarts == 0);
    const auto f = r.log->fallbacks_now();
    REQUIRE(f.size() == 1);
    CHECK(f[0].reason_class == "warmup_failed");
    CHECK(r.log->loads_now() == std::vector<std::string>{"cuda:0", "cpu"});
    CHECK(complete_one(self, r.adm, 1).has_value());
}
