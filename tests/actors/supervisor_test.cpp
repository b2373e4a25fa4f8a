// The supervisor: start-up load, route push to admission, restart of a crashed child, a model
// that cannot load reported as failed with the reason, and what admission answers for an alias
// whose version is loading or restarting after a crash.
#include "actors/supervisor/supervisor.hpp"

#include "actors/admission/admission.hpp"
#include "actors/fake_engine.hpp"
#include "messages/errors.hpp"
#include "support/test_data.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <doctest/doctest.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

using namespace bitnet;
using namespace std::chrono_literals;

namespace {

struct test_config : caf::actor_system_config {
    test_config() {
        msg::register_messages(*this);
        set("scheduler.max-threads", 2);
    }
};

/// Asks for the route until it is ready (bounded); returns the batcher or the last error.
// Polled (bounded), not driven: a version comes in through a detached loader thread (hashing
// the file) and a detached executor (loading the engine), whose progress no scheduler can step;
// what is about message order (admission, the text side at a flip) is tested on the test
// coordinator or with held messages elsewhere (admission_order_test.cpp, text_actor_test.cpp).
std::variant<msg::batcher_actor, bitnet::error>
wait_route(caf::scoped_actor& self, const msg::supervisor_actor& sup, const std::string& alias,
           const msg::batcher_actor& not_this = {}) {
    std::variant<msg::batcher_actor, bitnet::error> out = bitnet::error{errc::timeout, "never"};
    for (int i = 0; i < 400; ++i) {
        bool done = false;
        self->request(sup, 5s, msg::route_atom_v, alias)
            .receive(
                [&](msg::batcher_actor b) {
                    if (b != not_this) {
                        out = b;
                        done = true;
                    }
                },
                [&](caf::error& e) {
                    out = msg::from_caf_error(e);
                    done = out.index() == 1 &&
                           std::get<1>(out).message.find("failed") != std::string::npos;
                });
        if (done)
            break;
        std::this_thread::sleep_for(5ms);
    }
    return out;
}

/// An admission whose default model is "tiny", for a supervisor to route to.
msg::admission_actor admission_for_tiny(caf::actor_system& sys) {
    actors::admission_options ao;
    ao.default_model = "tiny";
    return actors::spawn_admission(sys, ao);
}

/// Ends the supervisor and admission however a test ends (a failed REQUIRE included): the
/// system's destructor would otherwise wait for them. `first` runs before (a held load let go).
struct stop_both {
    caf::scoped_actor& self;
    caf::actor a, b;
    std::function<void()> first = {};
    ~stop_both() {
        if (first)
            first();
        self->send_exit(a, caf::exit_reason::user_shutdown);
        self->send_exit(b, caf::exit_reason::user_shutdown);
    }
};

} // namespace

TEST_CASE("supervisor loads models, pushes routes, restarts a crashed child") {
    test_config cfg;
    caf::actor_system sys{cfg};
    auto probe = std::make_shared<test::fake_engine_probe>();
    auto adm = admission_for_tiny(sys);
    actors::supervisor_options so;
    so.admission = adm;
    actors::model_spec spec;
    spec.alias = "tiny";
    spec.executor = test::fake_order([probe]() -> result<std::unique_ptr<model::engine>> {
        return std::make_unique<test::fake_engine>(32, 0ms, probe);
    });
    so.models.push_back(spec);
    auto sup = actors::spawn_supervisor(sys, so);
    caf::scoped_actor self{sys};

    auto first = wait_route(self, sup, "tiny");
    REQUIRE(first.index() == 0);
    // Admission learned the route: a request through it completes.
    msg::generate_request req;
    req.id = 1;
    req.prompt = {1, 2};
    req.max_tokens = 3;
    self->request(adm, 5s, msg::submit_atom_v, req, caf::actor_cast<msg::sink_actor>(self))
        .receive([](msg::request_id) {}, [](caf::error& e) { FAIL(caf::to_string(e)); });
    std::optional<msg::completion> done;
    for (int i = 0; i < 10 && !done; ++i)
        self->receive([](msg::token_atom, const msg::token_event&) {},
                      [&](msg::done_atom, msg::completion c) { done = c; },
                      caf::after(5s) >> [] { FAIL("no completion"); });
    REQUIRE(done);
    CHECK(done->finish == msg::finish_reason::length);

    // A child crashes: the supervisor restarts the pair and routes to a new batcher.
    self->request(sup, 5s, msg::info_atom_v, std::string("tiny"))
        .receive([](const msg::executor_info& i) { CHECK(i.device == "cpu"); },
                 [](caf::error& e) { FAIL(caf::to_string(e)); });
    self->request(sup, 5s, msg::models_atom_v)
        .receive(
            [](const std::vector<msg::model_status>& ms) {
                REQUIRE(ms.size() == 1);
                CHECK(ms[0].alias == "tiny");
                CHECK(ms[0].state == "ready");
                CHECK(ms[0].restarts == 0);
                CHECK(ms[0].loaded_at > 0);
                CHECK(ms[0].info.n_vocab == 32);
                CHECK(ms[0].info.architecture == "fake");
            },
            [](caf::error& e) { FAIL(caf::to_string(e)); });
    self->send_exit(std::get<0>(first), caf::make_error(caf::sec::runtime_error, "boom"));
    auto second = wait_route(self, sup, "tiny", std::get<0>(first));
    REQUIRE(second.index() == 0);
    CHECK(std::get<0>(second) != std::get<0>(first));
    self->send_exit(sup, caf::exit_reason::user_shutdown);
    self->send_exit(adm, caf::exit_reason::user_shutdown);
}

TEST_CASE("a model that cannot load ends failed, with the reason, after bounded restarts") {
    test_config cfg;
    caf::actor_system sys{cfg};
    actors::supervisor_options so;
    so.max_restarts = 2;
    actors::model_spec spec;
    spec.alias = "broken";
    auto attempts = std::make_shared<std::atomic<int>>(0);
    spec.executor = test::fake_order([attempts]() -> result<std::unique_ptr<model::engine>> {
        ++*attempts;
        return error{errc::bad_format, "broken.gguf: bad magic"};
    });
    so.models.push_back(spec);
    auto sup = actors::spawn_supervisor(sys, so);
    caf::scoped_actor self{sys};
    auto r = wait_route(self, sup, "broken");
    REQUIRE(r.index() == 1);
    CHECK(std::get<1>(r).value() == errc::not_found);
    CHECK(std::get<1>(r).message.find("bad magic") != std::string::npos);
    CHECK(*attempts == 3);
    self->request(sup, 5s, msg::models_atom_v)
        .receive(
            [](const std::vector<msg::model_status>& ms) {
                REQUIRE(ms.size() == 1);
                CHECK(ms[0].state == "failed");
                CHECK(ms[0].restarts == 2);
                CHECK(ms[0].failure.find("bad magic") != std::string::npos);
                CHECK(ms[0].loaded_at == 0);
            },
            [](caf::error& e) { FAIL(caf::to_string(e)); });
    self->request(sup, 5s, msg::route_atom_v, std::string("other"))
        .receive([](msg::batcher_actor) { FAIL("unknown alias routed"); },
                 [](caf::error& e) {
                     CHECK(msg::from_caf_error(e).message.find("no model") != std::string::npos);
                 });
    self->send_exit(sup, caf::exit_reason::user_shutdown);
}

TEST_CASE(
    "a serving model out of restarts: admission refuses it with the reason, not a dead route") {
    test_config cfg;
    caf::actor_system sys{cfg};
    auto probe = std::make_shared<test::fake_engine_probe>();
    auto adm = admission_for_tiny(sys);
    actors::supervisor_options so;
    so.admission = adm;
    so.max_restarts = 1;
    actors::model_spec spec;
    spec.alias = "tiny";
    // Serves once; every later load (the restart after the crash) fails.
    auto attempts = std::make_shared<std::atomic<int>>(0);
    spec.executor = test::fake_order([probe, attempts]() -> result<std::unique_ptr<model::engine>> {
        if (++*attempts == 1)
            return std::make_unique<test::fake_engine>(32, 0ms, probe);
        return error{errc::io_error, "tiny.gguf: no such file"};
    });
    so.models.push_back(spec);
    auto sup = actors::spawn_supervisor(sys, so);
    caf::scoped_actor self{sys};
    stop_both stop{self, caf::actor_cast<caf::actor>(sup), caf::actor_cast<caf::actor>(adm)};
    auto first = wait_route(self, sup, "tiny");
    REQUIRE(first.index() == 0);
    self->send_exit(std::get<0>(first), caf::make_error(caf::sec::runtime_error, "boom"));

    // While the restart loads, requests are told it is loading (with a Retry-After); once it has
    // failed, every one is refused at the door with why (no Retry-After).
    bitnet::error last{errc::timeout, "never refused as failed"};
    std::uint32_t retry_after_s = 1;
    for (int i = 0; i < 400 && (last.value() != errc::unavailable || retry_after_s > 0); ++i) {
        msg::generate_request req;
        req.id = static_cast<msg::request_id>(100 + i);
        req.prompt = {1, 2};
        req.max_tokens = 1;
        self->request(adm, 5s, msg::submit_atom_v, req, caf::actor_cast<msg::sink_actor>(self))
            .receive([](msg::request_id) {},
                     [&](caf::error& e) {
                         last = msg::from_caf_error(e);
                         retry_after_s = msg::retry_after_of(e);
                     });
        if (last.value() != errc::unavailable || retry_after_s > 0)
            std::this_thread::sleep_for(5ms);
    }
    CHECK(*attempts == 2);
    REQUIRE(last.value() == errc::unavailable);
    CHECK(retry_after_s == 0);
    CHECK(last.message.find("model 'tiny' failed and serves nothing") != std::string::npos);
    CHECK(last.message.find("no such file") != std::string::npos);
    CHECK(last.param == "model");
    // Readiness says the default model is not ready rather than routing to nothing.
    self->request(adm, 5s, msg::ready_atom_v)
        .receive([](bool ready, const std::string&) { CHECK_FALSE(ready); },
                 [](caf::error& e) { FAIL(caf::to_string(e)); });
}

namespace {

/// Holds each run-time load in its loader thread until the test lets it go (bounded: a test that
/// fails early never leaves the thread waiting past the system's end), then answers a fake engine
/// or, when `fail` is set, a load failure.
struct load_gate {
    std::mutex m;
    std::condition_variable cv;
    int passes = 0;
    bool fail = false;

    void let_one_through(bool failing) {
        {
            std::lock_guard lk(m);
            fail = failing;
            ++passes;
        }
        cv.notify_all();
    }

    /// In the held thread: waits (bounded) for a pass and takes it; whether that load is to fail,
    /// or none when the test never let it through.
    std::optional<bool> wait_pass() {
        std::unique_lock lk(m);
        if (!cv.wait_for(lk, 30s, [&] { return passes > 0; }))
            return std::nullopt;
        --passes;
        return fail;
    }
};

/// What admission answers a one-token request for `alias`: the id it was queued under, or the
/// refusal with its Retry-After seconds.
struct door_answer {
    bool queued = false;
    bitnet::error refusal;
    std::uint32_t retry_after_s = 0;
};

door_answer ask_door(caf::scoped_actor& self, const msg::admission_actor& adm,
                     const std::string& alias, msg::request_id id) {
    msg::generate_request req;
    req.id = id;
    req.model = alias;
    req.prompt = {1, 2};
    req.max_tokens = 1;
    door_answer out;
    self->request(adm, 5s, msg::submit_atom_v, req, caf::actor_cast<msg::sink_actor>(self))
        .receive([&](msg::request_id) { out.queued = true; },
                 [&](caf::error& e) {
                     out.refusal = msg::from_caf_error(e);
                     out.retry_after_s = msg::retry_after_of(e);
                 });
    return out;
}

/// Asks until `done` holds for the answer (bounded); returns the last answer.
template <class Pred>
door_answer ask_door_until(caf::scoped_actor& self, const msg::admission_actor& adm,
                           const std::string& alias, msg::request_id& next_id, Pred done) {
    door_answer a;
    for (int i = 0; i < 400; ++i) {
        a = ask_door(self, adm, alias, next_id++);
        if (done(a))
            break;
        std::this_thread::sleep_for(5ms);
    }
    return a;
}

} // namespace

TEST_CASE("a model that is loading is refused with a Retry-After, and a failed one loading again "
          "reads loading, not its old failure") {
    test_config cfg;
    caf::actor_system sys{cfg};
    auto probe = std::make_shared<test::fake_engine_probe>();
    auto adm = admission_for_tiny(sys);
    auto gate = std::make_shared<load_gate>();
    const auto engine = test::fake_order([probe]() -> result<std::unique_ptr<model::engine>> {
        return std::make_unique<test::fake_engine>(32, 0ms, probe);
    });
    actors::supervisor_options so;
    so.admission = adm;
    so.max_restarts = 0;
    so.make_spec = [gate, engine](const msg::load_order& o) -> result<actors::model_spec> {
        const auto failing = gate->wait_pass();
        if (!failing)
            return error{errc::timeout, "the test never let this load through"};
        if (*failing)
            return error{errc::bad_format, o.path + ": bad magic"};
        actors::model_spec s;
        s.alias = o.alias;
        s.executor = engine;
        return s;
    };
    auto sup = actors::spawn_supervisor(sys, so);
    caf::scoped_actor self{sys};
    // A load still held ends (failed) with the test.
    stop_both stop{self, caf::actor_cast<caf::actor>(sup), caf::actor_cast<caf::actor>(adm),
                   [gate] { gate->let_one_through(true); }};
    auto load = [&](const std::string& alias) {
        msg::load_order o;
        o.alias = alias;
        o.path = test::data_path("bitnetcpp/tiny-i2_s.gguf");
        self->request(sup, 5s, msg::load_atom_v, o)
            .receive(
                [](const msg::operation_ticket& t) {
                    REQUIRE_MESSAGE(t.refusal.empty(), t.message);
                },
                [](caf::error& e) { FAIL(caf::to_string(e)); });
    };
    msg::request_id next_id = 1;
    const auto loading = [](const door_answer& a) { return a.retry_after_s > 0; };

    // A first load, held: the door says "loading, come back", not "no model".
    load("late");
    auto a = ask_door_until(self, adm, "late", next_id, loading);
    REQUIRE_FALSE(a.queued);
    CHECK(a.refusal.value() == errc::unavailable);
    CHECK(a.retry_after_s == 2);
    CHECK(a.refusal.message == "model 'late' is loading; retry in a moment");
    // Let it through: the alias serves.
    gate->let_one_through(false);
    a = ask_door_until(self, adm, "late", next_id, [](const door_answer& x) { return x.queued; });
    CHECK_MESSAGE(a.queued, a.refusal.message);

    // A load that fails: why, and no Retry-After (retrying does not help).
    load("flaky");
    gate->let_one_through(true);
    const auto failed = [](const door_answer& x) {
        return x.refusal.value() == errc::unavailable && x.retry_after_s == 0;
    };
    a = ask_door_until(self, adm, "flaky", next_id, failed);
    REQUIRE(failed(a));
    CHECK(a.refusal.message.find("failed and serves nothing") != std::string::npos);
    CHECK(a.refusal.message.find("bad magic") != std::string::npos);
    // Loading it again: "loading", not the old failure; then it serves.
    load("flaky");
    a = ask_door_until(self, adm, "flaky", next_id, loading);
    CHECK(a.retry_after_s == 2);
    CHECK(a.refusal.message.find("is loading") != std::string::npos);
    CHECK(a.refusal.message.find("bad magic") == std::string::npos);
    gate->let_one_through(false);
    a = ask_door_until(self, adm, "flaky", next_id, [](const door_answer& x) { return x.queued; });
    CHECK_MESSAGE(a.queued, a.refusal.message);
}

TEST_CASE("a serving model whose batcher crashed reads loading until its restart serves, not a "
          "dead route") {
    test_config cfg;
    caf::actor_system sys{cfg};
    auto probe = std::make_shared<test::fake_engine_probe>();
    auto adm = admission_for_tiny(sys);
    auto gate = std::make_shared<load_gate>();
    auto attempts = std::make_shared<std::atomic<int>>(0);
    actors::supervisor_options so;
    so.admission = adm;
    so.max_restarts = 2;
    actors::model_spec spec;
    spec.alias = "tiny";
    // The first engine loads at once; the restart's is held until the test lets it through.
    spec.executor =
        test::fake_order([probe, gate, attempts]() -> result<std::unique_ptr<model::engine>> {
            if (++*attempts > 1 && !gate->wait_pass())
                return error{errc::timeout, "the test never let the restart through"};
            return std::make_unique<test::fake_engine>(32, 0ms, probe);
        });
    so.models.push_back(spec);
    auto sup = actors::spawn_supervisor(sys, so);
    caf::scoped_actor self{sys};
    stop_both stop{self, caf::actor_cast<caf::actor>(sup), caf::actor_cast<caf::actor>(adm),
                   [gate] { gate->let_one_through(false); }};
    auto first = wait_route(self, sup, "tiny");
    REQUIRE(first.index() == 0);
    msg::request_id next_id = 1;
    REQUIRE(ask_door(self, adm, "tiny", next_id++).queued);

    self->send_exit(std::get<0>(first), caf::make_error(caf::sec::runtime_error, "boom"));
    // Until the supervisor has seen the crash a request may meet the dead batcher; from then
    // until the restart routes, every one reads "loading". (Sent on to the dead route instead,
    // they were refused as queue_full once admission counted 256 of them waiting there.)
    const auto loading = [](const door_answer& a) {
        return a.refusal.value() == errc::unavailable && a.retry_after_s > 0;
    };
    auto a = ask_door_until(self, adm, "tiny", next_id, loading);
    REQUIRE_MESSAGE(loading(a), a.refusal.message);
    CHECK_MESSAGE(a.refusal.value() == errc::unavailable, a.refusal.message);
    CHECK(a.retry_after_s == 2);
    CHECK(a.refusal.message == "model 'tiny' is loading; retry in a moment");
    for (int i = 0; i < 5; ++i) {
        a = ask_door(self, adm, "tiny", next_id++);
        CHECK_MESSAGE(loading(a), a.refusal.message);
        std::this_thread::sleep_for(5ms);
    }
    CHECK(*attempts == 2);
    gate->let_one_through(false);
    a = ask_door_until(self, adm, "tiny", next_id, [](const door_answer& x) { return x.queued; });
    CHECK_MESSAGE(a.queued, a.refusal.message);
    auto second = wait_route(self, sup, "tiny", std::get<0>(first));
    REQUIRE(second.index() == 0);
    CHECK(std::get<0>(second) != std::get<0>(first));
}
