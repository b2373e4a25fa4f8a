// The executor on bitnet.cpp's tiny file with a schema whose masks are costly (an anyOf of 64
// long strings whose length ranges leave gaps, so the compiler cannot join them into one: 64
// configurations inside the string). A mask not ready within the step's mask
// budget defers that sequence's sample alone: the ordinary sequence of the same step has its
// token in every step, and the deferred sequence, resumed, draws exactly the tokens it draws when
// every mask is cached (the sampler does not draw while deferred). A sequence whose masks take
// more CPU time than its budget (executor_order::mask_ms_per_token) ends alone with an error.
#include "actors/actor_test_config.hpp"
#include "actors/executor/executor.hpp"
#include "actors/tiny_model_rig.hpp"

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>
#include <doctest/doctest.h>

#include <algorithm>
#include <optional>
#include <random>

using namespace bitnet;

namespace {

struct run_result {
    std::vector<msg::token_id> constrained; ///< the constrained sequence's tokens
    std::size_t deferrals = 0;
    std::size_t steps = 0;
};

/// Drives one executor as a batcher would: sequence 1 greedy and unconstrained, sequence 2 at
/// temperature 1 under `schema`, for up to `n_tokens` tokens of sequence 2.
run_result drive(caf::scoped_actor& self, const msg::executor_actor& exec,
                 const std::string& schema, std::size_t n_tokens,
                 const std::vector<msg::token_id>& eog) {
    std::mt19937_64 rng(9);
    const auto prompt1 = test::random_tokens(9, rng);
    const auto prompt2 = test::random_tokens(7, rng);
    run_result out;
    std::uint32_t pos1 = 0, pos2 = 0;
    msg::token_id last1 = -1, last2 = -1;
    bool deferred2 = false;
    for (std::uint64_t step = 1; step < 5000 && out.constrained.size() < n_tokens; ++step) {
        msg::step_batch b;
        b.step = step;
        msg::step_chunk a;
        a.part.seq = 1;
        a.part.tokens = step == 1 ? prompt1 : std::vector<msg::token_id>{last1};
        a.part.pos0 = pos1;
        a.params.temperature = 0.0f;
        b.chunks.push_back(a);
        msg::step_chunk c;
        c.part.seq = 2;
        c.part.pos0 = pos2;
        c.params.temperature = 1.0f;
        c.params.seed = 42;
        if (step == 1) {
            c.part.tokens = prompt2;
            c.json_schema = schema;
        } else if (deferred2) {
            c.resume_sample = true;
        } else {
            c.part.tokens = {last2};
        }
        c.n_sampled = static_cast<std::uint32_t>(out.constrained.size());
        b.chunks.push_back(c);
        pos1 += static_cast<std::uint32_t>(a.part.tokens.size());
        pos2 += static_cast<std::uint32_t>(c.part.tokens.size());
        self->request(exec, std::chrono::seconds(60), msg::step_atom_v, b)
            .receive(
                [&](const msg::step_result& r) {
                    REQUIRE(r.failed.empty());
                    ++out.steps;
                    // The ordinary sequence has its token in every step.
                    const auto s1 = std::find_if(r.samples.begin(), r.samples.end(),
                                                 [](const auto& s) { return s.seq == 1; });
                    REQUIRE(s1 != r.samples.end());
                    last1 = s1->token;
                    const auto s2 = std::find_if(r.samples.begin(), r.samples.end(),
                                                 [](const auto& s) { return s.seq == 2; });
                    deferred2 = std::count(r.deferred.begin(), r.deferred.end(), 2u) == 1;
                    CHECK(deferred2 == (s2 == r.samples.end()));
                    if (deferred2) {
                        ++out.deferrals;
                        return;
                    }
                    last2 = s2->token;
                    out.constrained.push_back(last2);
                },
                [](const caf::error& e) { FAIL(caf::to_string(e)); });
        if (std::find(eog.begin(), eog.end(), last2) != eog.end())
            break;
    }
    return out;
}

} // namespace

TEST_CASE("tiny-i2_s masks: a costly mask defers only its own sample, and changes no token") {
    test::actor_test_config cfg;
    caf::actor_system sys{cfg};
    caf::scoped_actor self{sys};
    std::string schema = R"({"title":"deferral test","anyOf":[)";
    for (int i = 0; i < 64; ++i)
        schema += std::string(i ? "," : "") + R"({"type":"string","minLength":)" +
                  std::to_string(2000 * i) + R"(,"maxLength":)" + std::to_string(2000 * i + 1000) +
                  "}";
    schema += "]}";
    std::vector<msg::token_id> eog;
    auto exec = actors::spawn_executor(sys, test::tiny_executor_order());
    self->request(exec, std::chrono::seconds(60), msg::info_atom_v)
        .receive([&](const msg::executor_info& info) { eog = info.eog_ids; },
                 [](const caf::error& e) { FAIL(caf::to_string(e)); });
    // Cold: the masks inside the string are not cached; 64 configurations over the whole
    // vocabulary take far longer than a step's mask budget, so the sample waits for them.
    const auto cold = drive(self, exec, schema, 6, eog);
    CHECK(cold.deferrals >= 1);
    CHECK(cold.constrained.size() >= 2);
    // Warm (a fresh executor of the same vocabulary while the first lives, as a hot-swap's new
    // version beside the old: the process's caches hold the schema and its masks): the same
    // tokens. What was compiled for a vocabulary goes once no executor of it is left.
    auto warm_exec = actors::spawn_executor(sys, test::tiny_executor_order());
    const auto warm = drive(self, warm_exec, schema, cold.constrained.size(), eog);
    CHECK(warm.deferrals == 0);
    CHECK(warm.constrained == cold.constrained);
    self->send_exit(exec, caf::exit_reason::user_shutdown);
    self->send_exit(warm_exec, caf::exit_reason::user_shutdown);
}

TEST_CASE("tiny-i2_s masks: a sequence past mask_ms_per_token ends alone, the error naming it") {
    test::actor_test_config cfg;
    caf::actor_system sys{cfg};
    caf::scoped_actor self{sys};
    // Every alternative needs 2,000 characters or more, so the value cannot end on its own
    // before the budget does; a title of its own keeps other tests' masks out of the cache, so
    // the first mask (inside the string: 64 configurations over the vocabulary) is computed.
    std::string schema = R"({"title":"budget test","anyOf":[)";
    for (int i = 1; i <= 64; ++i)
        schema += std::string(i > 1 ? "," : "") + R"({"type":"string","minLength":)" +
                  std::to_string(2000 * i) + R"(,"maxLength":)" + std::to_string(2000 * i + 1000) +
                  "}";
    schema += "]}";
    auto order = test::tiny_executor_order();
    // 1 ms a token and nothing up front: a cold mask of 64 configurations takes more than that
    // on any machine. (Later masks of this schema may share one cache entry: they cost nothing.)
    order.mask_ms_per_token = 1;
    order.mask_ms_up_front = 0;
    auto exec = actors::spawn_executor(sys, order);
    std::mt19937_64 rng(5);
    const auto prompt = test::random_tokens(7, rng);
    std::optional<msg::seq_failure> failure;
    std::uint32_t pos1 = 0, pos2 = 0, n2 = 0;
    msg::token_id last1 = -1, last2 = -1;
    bool deferred2 = false;
    for (std::uint64_t step = 1; step < 20000 && !failure && n2 < 400; ++step) {
        msg::step_batch b;
        b.step = step;
        msg::step_chunk a;
        a.part.seq = 1;
        a.part.tokens = step == 1 ? prompt : std::vector<msg::token_id>{last1};
        a.part.pos0 = pos1;
        a.params.temperature = 0.0f;
        b.chunks.push_back(a);
        msg::step_chunk c;
        c.part.seq = 2;
        c.part.pos0 = pos2;
        c.params.temperature = 1.0f;
        c.params.seed = 7;
        c.tenant = "A";
        if (step == 1) {
            c.part.tokens = prompt;
            c.json_schema = schema;
        } else if (deferred2) {
            c.resume_sample = true;
        } else {
            c.part.tokens = {last2};
        }
        c.n_sampled = n2;
        b.chunks.push_back(c);
        pos1 += static_cast<std::uint32_t>(a.part.tokens.size());
        pos2 += static_cast<std::uint32_t>(c.part.tokens.size());
        self->request(exec, std::chrono::seconds(60), msg::step_atom_v, b)
            .receive(
                [&](const msg::step_result& r) {
                    // The other sequence of the step has its token, failure or not.
                    const auto s1 = std::find_if(r.samples.begin(), r.samples.end(),
                                                 [](const auto& s) { return s.seq == 1; });
                    REQUIRE(s1 != r.samples.end());
                    last1 = s1->token;
                    for (const auto& f : r.failed) {
                        REQUIRE(f.seq == 2);
                        failure = f;
                    }
                    deferred2 = std::count(r.deferred.begin(), r.deferred.end(), 2u) == 1;
                    const auto s2 = std::find_if(r.samples.begin(), r.samples.end(),
                                                 [](const auto& s) { return s.seq == 2; });
                    if (s2 != r.samples.end()) {
                        last2 = s2->token;
                        ++n2;
                    }
                },
                [](const caf::error& e) { FAIL(caf::to_string(e)); });
    }
    REQUIRE_MESSAGE(failure, n2, " tokens sampled with no failure");
    CHECK(failure->code == static_cast<std::int32_t>(errc::invalid_argument));
    CHECK(failure->param == "mask_ms_per_token");
    CHECK_MESSAGE(failure->message.find("limit mask_ms_per_token") != std::string::npos,
                  failure->message);
    self->send_exit(exec, caf::exit_reason::user_shutdown);
}
