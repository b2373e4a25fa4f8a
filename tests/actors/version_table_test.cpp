// The supervisor's books without an actor system: operations and their bounds, what listings
// keep of failed loads, state mirroring and the swap results the metrics count.
#include "actors/supervisor/version_table.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

namespace {

using namespace bitnet::actors;
using bitnet::msg::load_order;

load_order order(const std::string& alias, const std::string& path = "m.gguf") {
    load_order o;
    o.alias = alias;
    o.path = path;
    return o;
}

/// A version of `alias` added by its own load operation and left in state `s`.
std::uint64_t add(version_table& t, const std::string& alias, vstate s) {
    const auto op = t.begin_op(alias, "load", {});
    const auto serial = t.add_version(order(alias), op);
    t.set_state(*t.find(serial), s);
    if (ended(s) || s == vstate::ready)
        (void)t.end_op(op, ended(s) ? "failed" : "ready");
    return serial;
}

} // namespace

TEST_CASE("version table: an operation is exclusive until it ends, and ends once") {
    version_table t;
    const auto op = t.begin_op("a", "load", "v1");
    auto refusal = t.busy("a");
    REQUIRE(refusal.has_value());
    CHECK(refusal->refusal == "conflict");
    CHECK(refusal->operation_id == "op-" + std::to_string(op));
    CHECK_FALSE(t.busy("b").has_value());

    const auto counted = t.end_op(op, "ready");
    REQUIRE(counted.has_value());
    CHECK(*counted == "success");
    CHECK_FALSE(t.busy("a").has_value());
    CHECK_FALSE(t.end_op(op, "failed").has_value()); // already ended: not counted twice
    CHECK(t.ticket(op).state == "ready");
}

TEST_CASE("version table: what bitnet_model_swaps_total counts for each kind of operation") {
    version_table t;
    CHECK(t.end_op(t.begin_op("a", "load", {}), "failed") == std::optional<std::string>("failed"));
    CHECK(t.end_op(t.begin_op("a", "rollback", {}), "ready") ==
          std::optional<std::string>("rollback"));
    CHECK(t.end_op(t.begin_op("a", "auto_rollback", {}, true, false), "ready") ==
          std::optional<std::string>("rollback"));
    CHECK_FALSE(t.end_op(t.begin_op("a", "unload", {}), "unloaded").has_value());
    CHECK_FALSE(t.end_op(t.begin_op("a", "load", {}, /*counted=*/false), "ready").has_value());
}

TEST_CASE("version table: a version's state is mirrored into its running operation") {
    version_table t;
    const auto op = t.begin_op("a", "load", {});
    const auto serial = t.add_version(order("a"), op);
    auto& v = *t.find(serial);
    t.set_state(v, vstate::validating);
    CHECK(t.ticket(op).state == "validating");
    t.set_state(v, vstate::warming);
    CHECK(t.ticket(op).state == "warming");
    t.set_state(v, vstate::failed); // an ended state is the operation's to set (end_op)
    CHECK(t.ticket(op).state == "warming");
}

TEST_CASE("version table: operations per alias are bounded, newest kept") {
    version_table t;
    std::uint64_t last = 0;
    for (int i = 0; i < 40; ++i)
        (void)t.end_op(last = t.begin_op("a", "load", {}), "failed");
    const auto view = t.alias_view("a", *t.find_alias("a"));
    REQUIRE(view.operations.size() == version_table::k_ops_kept);
    CHECK(view.operations.front().id == "op-" + std::to_string(last));
}

TEST_CASE("version table: ended versions per alias are bounded, resident ones never pruned") {
    version_table t;
    const auto serving = add(t, "a", vstate::ready);
    t.alias("a").active = serving;
    t.alias("a").served = true;
    for (int i = 0; i < 30; ++i)
        add(t, "a", vstate::failed);
    const auto& a = *t.find_alias("a");
    std::size_t n_ended = 0;
    for (auto s : a.versions)
        n_ended += ended(t.find(s)->state) ? 1 : 0;
    CHECK(n_ended <= version_table::k_ended_kept);
    CHECK(t.find(serving) != nullptr);
    CHECK(t.alias_view("a", a).version == t.find(serving)->id);
}

TEST_CASE("version table: aliases that only ever failed are bounded, the oldest forgotten") {
    version_table t;
    for (int i = 0; i < 40; ++i)
        add(t, "bad-" + std::to_string(i), vstate::failed);
    std::size_t n = 0;
    for (const auto& [alias, a] : t.aliases())
        n += t.only_failed(a) ? 1 : 0;
    CHECK(n <= version_table::k_unserved_kept);
    CHECK(t.find_alias("bad-39") != nullptr);
    CHECK(t.find_alias("bad-0") == nullptr);
    // Each forgotten alias is handed over once (the supervisor tells admission).
    const auto gone = t.take_forgotten();
    CHECK(gone.size() == 40 - n);
    for (const auto& alias : gone)
        CHECK(t.find_alias(alias) == nullptr);
    CHECK(std::find(gone.begin(), gone.end(), "bad-0") != gone.end());
    CHECK(t.take_forgotten().empty());

    // An alias that served once is never forgotten that way.
    auto kept = add(t, "good", vstate::ready);
    t.alias("good").served = true;
    t.find(kept)->state = vstate::failed;
    for (int i = 40; i < 80; ++i)
        add(t, "bad-" + std::to_string(i), vstate::failed);
    CHECK(t.find_alias("good") != nullptr);
}

TEST_CASE("version table: the listing shows the serving version, else the newest, and drains") {
    version_table t;
    const auto first = add(t, "a", vstate::ready);
    t.find(first)->id = "one";
    auto& a = t.alias("a");
    a.active = first;
    const auto newer = add(t, "a", vstate::failed);
    t.find(newer)->id = "two";
    t.find(newer)->failure = "bad file";
    auto view = t.alias_view("a", a);
    CHECK(view.version == "one");
    CHECK(view.state == "ready");
    REQUIRE(view.versions.size() == 2);
    CHECK(view.versions.front().version == "two"); // newest first
    CHECK(view.versions.front().failure == "bad file");

    a.active = 0;
    view = t.alias_view("a", a);
    CHECK(view.version == "two");
    CHECK(view.state == "failed");
    a.unloading = true;
    CHECK(t.alias_view("a", a).state == "draining");
}

TEST_CASE("version table: a version's bytes are its engine's figures, else the estimate") {
    version_rec v;
    CHECK(v.bytes() == 0); // nothing read yet
    v.has_spec = true;
    v.file_bytes = 100;
    v.spec.kv_budget_bytes = 20;
    CHECK(v.bytes() == 120);
    v.has_info = true;
    v.info.weight_bytes = 90;
    v.info.kv_pool_bytes = 16;
    CHECK(v.bytes() == 106);
    v.state = vstate::unloaded;
    CHECK(v.bytes() == 0);
    CHECK_FALSE(v.resident());
}

TEST_CASE("version table: forget_alias removes its versions and operations") {
    version_table t;
    const auto serial = add(t, "a", vstate::failed);
    const auto op = t.begin_op("a", "unload", {});
    t.forget_alias("a");
    CHECK(t.find_alias("a") == nullptr);
    CHECK(t.find(serial) == nullptr);
    CHECK(t.find_op(op) == nullptr);
}
