// The iterative generation API: same tokens as the raw step loop, stop rules applied to the
// streamed text, seeded sampling reproducible, KV released when the generation goes away.
#include "model/engine/placement/generation.hpp"

#include "engine_fixture.hpp"
#include "model/tokenizer/tokenizer.hpp"
#include "model/tokenizer/tokenizer_stream.hpp"

using namespace bitnet;
using namespace bitnet::test;

namespace {

struct run_result {
    std::vector<std::int32_t> ids;
    std::string text;
    model::finish_reason reason = model::finish_reason::none;
};

run_result run(model::engine& e, model::generation_request req, std::size_t limit = 1000) {
    auto g = model::generation::start(e, 7, std::move(req));
    REQUIRE_MESSAGE(g, (g ? std::string() : g.error().to_string()));
    run_result r;
    while (!g->finished() && r.ids.size() < limit) {
        auto t = g->next();
        REQUIRE_MESSAGE(t, (t ? std::string() : t.error().to_string()));
        r.ids.push_back(t->token);
        r.text += t->text;
        r.reason = t->finish;
    }
    return r;
}

} // namespace

TEST_CASE("generation: greedy tokens equal the raw step loop, max_tokens ends it") {
    scratch_dir dir;
    auto e = load_engine(make_model(dir, "bitnet-b1.58", 11));
    const std::vector<std::int32_t> prompt{72, 101, 108, 108, 111};
    const auto want = greedy_alone(*e, 1, prompt, 16);

    model::generation_request req;
    req.prompt = prompt;
    req.sampling.temperature = 0.0f;
    req.stop.max_tokens = 16;
    req.ignore_eog = true;
    const run_result r = run(*e, req);
    CHECK(r.ids == want);
    CHECK(r.reason == model::finish_reason::length);
    // Every token's text reaches the caller: what a fresh stream makes of the same ids.
    model::token_stream stream(e->vocab());
    std::string streamed;
    for (std::int32_t id : want)
        streamed += stream.push(id);
    streamed += stream.flush();
    CHECK(r.text == streamed);
    CHECK(e->kv_blocks_free() == e->kv_blocks_total()); // released by the destructor

    auto g = model::generation::start(*e, 8, req);
    REQUIRE(g);
    req.stop.max_tokens = 1;
    auto one = model::generation::start(*e, 9, req);
    REQUIRE(one);
    REQUIRE(one->next());
    CHECK(one->finished());
    auto after = one->next();
    REQUIRE_FALSE(after);
    CHECK(after.error().value() == errc::invalid_argument);
}

TEST_CASE("generation: a stop string ends the text right before it, across token boundaries") {
    scratch_dir dir;
    auto e = load_engine(make_model(dir, "bitnet-b1.58", 11));
    model::generation_request req;
    req.prompt = {72, 101, 108, 108, 111};
    req.sampling.temperature = 0.0f;
    req.stop.max_tokens = 24;
    req.ignore_eog = true;
    const run_result full = run(*e, req);
    REQUIRE(full.text.size() >= 6);
    // Stop on two bytes from the middle of the greedy text (byte-level vocabulary: each token is
    // one byte, so the stop string spans a token boundary).
    const std::string stop = full.text.substr(full.text.size() / 2, 2);
    req.stop.stop_strings = {stop};
    const run_result stopped = run(*e, req);
    CHECK(stopped.reason == model::finish_reason::stop_string);
    CHECK(stopped.text == full.text.substr(0, full.text.find(stop)));
}

TEST_CASE("generation: seeded sampling is reproducible and the seed matters") {
    scratch_dir dir;
    auto e = load_engine(make_model(dir, "bitnet-b1.58", 12));
    model::generation_request req;
    req.prompt = {1, 2, 3};
    req.sampling.temperature = 1.5f;
    req.sampling.seed = 42;
    req.stop.max_tokens = 24;
    req.ignore_eog = true;
    const run_result a = run(*e, req);
    const run_result b = run(*e, req);
    CHECK(a.ids == b.ids);
    req.sampling.seed = 43;
    const run_result c = run(*e, req);
    CHECK(a.ids != c.ids);
}

TEST_CASE("generation: bad requests are refused before anything runs") {
    scratch_dir dir;
    auto e = load_engine(make_model(dir, "bitnet-b1.58", 12));
    model::generation_request req;
    CHECK(model::generation::start(*e, 1, req).error().value() == errc::invalid_argument);
    req.prompt = {1, 512};
    CHECK(model::generation::start(*e, 1, req).error().value() == errc::invalid_argument);
    req.prompt = {1};
    req.sampling.temperature = -1.0f;
    CHECK(model::generation::start(*e, 1, req).error().value() == errc::invalid_argument);
    req.sampling.temperature = 0.0f;
    req.prompt.assign(e->config().n_ctx_train, 1);
    CHECK(model::generation::start(*e, 1, req).error().value() == errc::prompt_too_long);
    CHECK(e->kv_blocks_free() == e->kv_blocks_total());
}
