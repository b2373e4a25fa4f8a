// model/constrain: the mask worker shares its thread between tenants in turns of CPU time, and a
// mask computed in slices is the mask computed whole. The heavy masks are the issue's schema on
// Llama-3's vocabulary: an anyOf of 64 strings whose length ranges do not touch (64
// configurations inside the string, far more than one slice per mask). Under the sanitizers on a
// slow machine such a mask takes more than limits::max_mask_ms of CPU time, so the workers here
// give each mask minutes: a mask refused for its budget would end early and blur the order. Order
// is read from the jobs' own completion times and the masks each schema computed, never from a
// wall-clock bound.
#include "model/constrain/mask_worker.hpp"

#include "model/constrain/mask_walk.hpp"
#include "vocab_fixtures.hpp"

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

using namespace bitnet;
using namespace bitnet::model::constrain;

namespace {

/// The issue's heavy schema (about 3.9 KB); `title` makes each copy a schema of its own, so
/// masks of one copy are never another's cache hits.
std::string heavy_schema(const std::string& title) {
    std::string s = R"({"title":")" + title + R"(","anyOf":[)";
    for (int i = 0; i < 64; ++i)
        s += std::string(i ? "," : "") + R"({"type":"string","minLength":)" +
             std::to_string(2000 * i) + R"(,"maxLength":)" + std::to_string(2000 * i + 1000) + "}";
    return s + "]}";
}

std::shared_ptr<const compiled_constraint>
compile(const std::string& schema, const model::tokenizer& tok = test::llama3_tokenizer()) {
    auto c = schema_cache::shared().get(schema, tok);
    REQUIRE(c);
    return *c;
}

/// The state inside the string, right after its opening quote: all 64 alternatives alive.
byte_matcher inside_string(const compiled_constraint& c) {
    auto m = byte_matcher::start(c.rules());
    REQUIRE(m.feed(c.rules(), "\""));
    return m;
}

/// Of `heavy`, the jobs that were computed (not cancelled) and done before `quick` was.
std::size_t done_before(const std::vector<std::shared_ptr<mask_worker::job>>& heavy,
                        const mask_worker::job& quick) {
    std::size_t n = 0;
    for (const auto& j : heavy) {
        REQUIRE(j->wait_until(mask_worker::clock::now() + std::chrono::minutes(5)));
        if (j->mask() && *j->done_at() < *quick.done_at())
            ++n;
    }
    return n;
}

/// Eight heavy masks of tenant "A", each a schema of its own (`tag` tells the test cases'
/// schemas apart, so no case finds another's masks cached).
std::vector<std::shared_ptr<mask_worker::job>> queue_heavy(mask_worker& w, const std::string& tag) {
    std::vector<std::shared_ptr<mask_worker::job>> jobs;
    for (int i = 0; i < 8; ++i) {
        auto c = compile(heavy_schema(tag + std::to_string(i)));
        jobs.push_back(w.submit(c, inside_string(*c), "A"));
    }
    return jobs;
}

/// CPU time a worker here gives one mask: the heavy masks always finish.
constexpr std::int64_t unhurried_mask_ms = 10 * 60 * 1000;

} // namespace

TEST_CASE("mask worker: a quick mask waits for at most one of another tenant's eight heavy ones") {
    mask_worker w{unhurried_mask_ms};
    auto light = compile(R"({"type":"object","properties":{"n":{"type":"integer"}}})");
    const auto heavy = queue_heavy(w, "fair ");
    auto quick = w.submit(light, byte_matcher::start(light->rules()), "B");
    REQUIRE(quick->wait_until(mask_worker::clock::now() + std::chrono::minutes(5)));
    REQUIRE(quick->mask());
    // What is left of A's work is not needed to read the order: it ends cancelled.
    w.cancel();
    // First come, first served (one queue for everyone), B's mask was done after all eight.
    CHECK(done_before(heavy, *quick) <= 1);
}

TEST_CASE("mask worker: a state another tenant asked for first is served in either one's turn") {
    mask_worker w{unhurried_mask_ms};
    const auto heavy = queue_heavy(w, "shared ");
    // B asks for the state of A's last job: one job, now in both tenants' queues.
    // (The schema cache answers the same compiled schema for the same text.)
    auto c = compile(heavy_schema("shared 7"));
    auto same = w.submit(c, inside_string(*c), "B");
    CHECK(same == heavy.back());
    REQUIRE(same->wait_until(mask_worker::clock::now() + std::chrono::minutes(5)));
    REQUIRE(same->mask());
    w.cancel();
    std::vector<std::shared_ptr<mask_worker::job>> others(heavy.begin(), heavy.end() - 1);
    CHECK(done_before(others, *same) <= 1);
}

TEST_CASE("mask worker: jobs nobody waits for any more are dropped unrun") {
    mask_worker w{unhurried_mask_ms};
    auto heavy = queue_heavy(w, "dropped ");
    auto kept = heavy.back();
    heavy.clear(); // seven requests gone (cancelled, failed, ended) while their masks waited
    REQUIRE(kept->wait_until(mask_worker::clock::now() + std::chrono::minutes(5)));
    REQUIRE(kept->mask());
    // First come, first served and held to the end, the seven were all computed first.
    std::uint64_t computed = 0;
    for (int i = 0; i < 7; ++i)
        computed += compile(heavy_schema("dropped " + std::to_string(i)))->masks_computed();
    CHECK(computed == 0);
}

TEST_CASE("mask worker: a mask past the worker's CPU budget is refused, naming max_mask_ms") {
    mask_worker w{1};
    auto c = compile(heavy_schema("budget"));
    auto j = w.submit(c, inside_string(*c), "A");
    REQUIRE(j->wait_until(mask_worker::clock::now() + std::chrono::minutes(5)));
    REQUIRE(!j->mask());
    CHECK(j->mask().error().param == "max_mask_ms");
    CHECK(j->mask().error().message.find("more than 1 ms") != std::string::npos);
    CHECK(c->masks_computed() == 0);
}

TEST_CASE("mask walk: a mask computed in slices is the mask computed whole, budget and all") {
    // The shipped 4,096-token vocabulary: the same 64 configurations, a short walk.
    auto c = compile(heavy_schema("sliced"), test::default_tokenizer());
    auto m = inside_string(*c);
    REQUIRE(m.feed(c->rules(), "ab"));
    const auto whole = c->mask_within_budget(m, nullptr);
    REQUIRE(whole);
    std::unique_ptr<mask_walk> walk;
    std::size_t slices = 0;
    std::shared_ptr<const token_mask> sliced;
    for (; !sliced; ++slices) {
        // 1 ns: the walk stops at every budget check (every 256 trie edges).
        auto r = c->mask_slice(m, walk, nullptr, 1);
        REQUIRE(r);
        sliced = *r;
    }
    CHECK(slices > 10);
    CHECK(*sliced == *whole);
    CHECK(walk->cpu_ns() > 0);
    // Done and cached: the next ask is a hit, with no walk.
    std::unique_ptr<mask_walk> again;
    auto hit = c->mask_slice(m, again, nullptr, 1);
    REQUIRE(hit);
    CHECK(*hit == sliced);
    CHECK(!again);
}
